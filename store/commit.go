package store

import (
	"context"

	"gorm.io/gorm"
)

// Commit is what one committed transaction changed that work outside the store waits for: the
// store says what happened, never what follows from it. Listeners wake their own loops.
type Commit struct {
	// EventTasks are the tasks that got events (their event streams wake).
	EventTasks []int64
	// TaskQueued: a task became QUEUED (the worker daemon claims at once).
	TaskQueued bool
	// MailQueued: a mail entered the mail outbox (the mail dispatcher sends at once).
	MailQueued bool
	// Noticed: a transition left a notice in the notification outbox (the notification
	// service fans it out at once).
	Noticed bool
}

func (c *Commit) empty() bool {
	return len(c.EventTasks) == 0 && !c.TaskQueued && !c.MailQueued && !c.Noticed
}

// AfterCommit adds f to the listeners told, after each transaction that committed, what it
// changed (never for one that rolled back). Listeners run in the committing goroutine: they
// only wake their own work. Add them while the service is assembled, before use.
func (s *Store) AfterCommit(f func(Commit)) { s.listeners = append(s.listeners, f) }

// createdKey carries, in a transaction's context, what it changed, for after the commit.
type createdKey struct{}

type created struct {
	Commit
	versionsBumped bool           // a version was bumped: re-read them after the commit
	transitions    []transitioned // status changes: logged after the commit
}

func withCreated(ctx context.Context, c *created) context.Context {
	return context.WithValue(ctx, createdKey{}, c)
}

func createdFrom(tx *gorm.DB) *created {
	if tx.Statement == nil || tx.Statement.Context == nil {
		return nil
	}
	c, _ := tx.Statement.Context.Value(createdKey{}).(*created)
	return c
}

// committed runs after a transaction that made c committed: the transition log lines, the
// versions marked stale, the listeners told.
func (s *Store) committed(ctx context.Context, c *created) {
	if len(c.transitions) > 0 {
		s.logTransitions(ctx, c.transitions)
	}
	if c.versionsBumped {
		s.vers.stale.Store(true)
	}
	if c.Commit.empty() {
		return
	}
	for _, f := range s.listeners {
		f(c.Commit)
	}
	s.announce(ctx, c.Commit) // the other processes' listeners (PostgreSQL; wake.go)
}
