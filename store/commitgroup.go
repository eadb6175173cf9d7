package store

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"gorm.io/gorm"
)

// Group commit. The agent loop's step writes (FinishStep, FinishTurn) and the notification
// service's notice finishes (FinishTaskNotice) come from many runs of one process at once, each
// a short transaction on rows of its own; committed one by one, every one of them paid a commit
// (a WAL flush on PostgreSQL and InnoDB, the pages it touched written again on SQLite) and the
// runs queued for the flushes — docs/benchmarks.md, "Issue 28: PostgreSQL and River". groupTx
// runs the writes that arrive while a commit is in flight together in the next transaction,
// as a database's own group commit does for its log:
//
//   - a caller that finds a lane free leads: it takes every waiting write (its own included, at
//     most maxCommitGroup), runs them in one transaction and, when they are recorded, hands the
//     lead to the first caller that arrived meanwhile; nobody waits for a timer, and a lone
//     write costs what s.tx costs (it runs alone, on s.tx);
//   - groups run on lanes at once: on SQLite one (it has one writer); on PostgreSQL a few
//     (commitLanes), since a group's statements run one after the other on one connection and
//     a single lane made the writes wait for each other's statements instead of commits; on
//     MySQL/MariaDB one, since there a group's steps send their blind writes together (below):
//     the bigger groups of one lane cost fewer round trips and commits a step;
//   - on SQLite a leader lingers under a load: when the last group held more than one write,
//     it waits up to sqliteCommitLinger for more writes than that group held before it takes
//     its batch. A SQLite commit appends every page it touched to the log, and the steps of
//     one group touch the same pages (the tasks' rows and indexes, the event and message
//     tables' last pages): bigger groups write fewer pages a step. A load's groups grow until
//     the linger bounds them, and shrink when it ends; a write after a lone one never waits.
//     The servers' lanes do not linger: there it saved no measurable cost;
//   - each write keeps its own after-commit record (created): its listeners, transition logs and
//     cross-process wake-ups are told after the shared commit, with its own context;
//   - a group runs its writes in the order of their keys: the rows two writes of different
//     lanes may both lock (a step's usage rollup shard) are then taken in one order by every
//     lane, which cannot deadlock (unordered, two lanes' steps deadlocked on two shards, and
//     PostgreSQL takes a second to find one);
//   - on MySQL/MariaDB the group's blind writes (blindwrite.go) are sent together, once the
//     group's writes have run: one round trip a group;
//   - a write that fails rolls the group back (as do the group's held writes failing); each of
//     the group's writes then runs alone, so a lost lease (ErrInvalidState) fails only the write
//     it concerns, with its own error, and the others commit as they would have alone.
//
// A write's function must therefore be safe to run more than once (as a deadlock's retry
// already runs it again) and touch only its own rows' state in memory.

// maxCommitGroup bounds the writes one grouped transaction holds: well above a worker's runs
// (32 at most by default), so that one pass takes every step waiting.
const maxCommitGroup = 64

// sqliteCommitLinger bounds how long a SQLite group's leader waits for more writes under a
// load (see above): a step's commit may wait this long to share its pages with others', where a
// model turn takes hundreds of milliseconds. docs/benchmarks.md has the measurement that chose it.
const sqliteCommitLinger = 4 * time.Millisecond

// commitLanes is how many groups run at once on PostgreSQL (see above; docs/benchmarks.md has
// the measurements that chose it, and one lane on MySQL/MariaDB).
const commitLanes = 4

type commitGroup struct {
	mu      sync.Mutex
	pending []*groupedWrite
	lanes   int // groups that may run at once (0 before Open sets it: 1)
	leading int // groups running; while all lanes are busy, the first pending write leads next

	linger  time.Duration // how long a leader may wait for a load's writes (0: never; one lane only)
	maxHeld int           // the group's held writes (MySQL/MariaDB) are sent once past this many bytes (maxGroupHeld)
	last    int           // the writes of the last group taken
	filled  chan struct{} // while a leader lingers: closed once more than last writes are pending
}

type groupedWrite struct {
	ctx  context.Context
	key  int64 // the group runs its writes in key order
	fn   func(tx *gorm.DB) error
	made *created
	err  error
	done chan struct{} // closed when err is final
	lead chan struct{} // the write's caller leads a group (sent once, when told is set)
	told bool          // a lane is the write's own: no other lane takes it into its group
}

// errGroupMember marks a grouped transaction rolled back because one of its writes failed.
var errGroupMember = errors.New("a grouped write failed")

// groupTx runs fn in a write transaction that it may share with other groupTx calls of this
// process arriving at the same time (see above); key orders the writes of a group: writes
// that may lock the same shared row must have the same key. Errors: fn's own, as s.tx returns
// them.
func (s *Store) groupTx(ctx context.Context, key int64, fn func(tx *gorm.DB) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &groupedWrite{ctx: ctx, key: key, fn: fn, done: make(chan struct{}), lead: make(chan struct{}, 1)}
	g := &s.group
	g.mu.Lock()
	g.pending = append(g.pending, w)
	if g.filled != nil && len(g.pending) > g.last {
		close(g.filled)
		g.filled = nil
	}
	if g.leading < max(g.lanes, 1) {
		g.leading++
		g.tell(w)
	}
	g.mu.Unlock()
	select {
	case <-w.done:
	case <-w.lead:
		s.leadGroup(w)
	}
	return w.err
}

// tell gives w a lane. Call with g.mu held.
func (g *commitGroup) tell(w *groupedWrite) {
	w.told = true
	w.lead <- struct{}{}
}

// leadGroup runs lead's write with the waiting writes no other lane leads, as one group, and
// passes the lane on.
func (s *Store) leadGroup(lead *groupedWrite) {
	g := &s.group
	g.mu.Lock()
	g.lingerLocked()
	batch := []*groupedWrite{lead}
	rest := g.pending[:0]
	for _, w := range g.pending {
		switch {
		case w == lead:
		case !w.told && len(batch) < maxCommitGroup:
			batch = append(batch, w)
		default:
			rest = append(rest, w)
		}
	}
	clear(g.pending[len(rest):])
	g.pending = rest
	g.last = len(batch)
	maxHeld := g.maxHeld
	g.mu.Unlock()

	s.runGroup(batch, maxHeld)

	g.mu.Lock()
	defer g.mu.Unlock()
	for _, w := range g.pending {
		if !w.told {
			g.tell(w)
			return
		}
	}
	g.leading--
}

// lingerLocked waits, under a load, for more writes than the last group held, at most
// g.linger (see above). Call with g.mu held; it is held again on return.
func (g *commitGroup) lingerLocked() {
	if g.linger <= 0 || g.last < 2 || len(g.pending) > g.last {
		return
	}
	filled := make(chan struct{})
	g.filled = filled
	g.mu.Unlock()
	t := time.NewTimer(g.linger)
	select {
	case <-filled:
	case <-t.C:
	}
	t.Stop()
	g.mu.Lock()
	if g.filled == filled {
		g.filled = nil
	}
}

// runGroup runs batch in one transaction (its held writes sent once past maxHeld bytes and at
// its end), or each write alone when there is one or the group failed.
func (s *Store) runGroup(batch []*groupedWrite, maxHeld int) {
	live := batch[:0:0]
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.err = err
			close(w.done)
			continue
		}
		live = append(live, w)
	}
	if len(live) > 1 {
		slices.SortStableFunc(live, func(a, b *groupedWrite) int { return cmp.Compare(a.key, b.key) })
		err := s.tx(context.WithoutCancel(live[0].ctx), func(tx *gorm.DB) error {
			held := groupBlind(tx)
			for _, w := range live {
				w.made = &created{}
				// The write's statements carry its own context (values, not its cancellation:
				// one caller leaving must not roll back the others), its after-commit record
				// and the group's held writes (blindwrite.go).
				if err := w.fn(tx.WithContext(held.within(withCreated(context.WithoutCancel(w.ctx), w.made)))); err != nil {
					return errGroupMember
				}
				if held != nil && held.bytes > maxHeld {
					if err := held.flush(tx); err != nil {
						return errGroupMember
					}
				}
			}
			if err := held.flush(tx); err != nil {
				return errGroupMember
			}
			return nil
		})
		if err == nil {
			for _, w := range live {
				s.committed(w.ctx, w.made)
				close(w.done)
			}
			return
		}
	}
	// Alone: a single write, or each write of a group that failed.
	for _, w := range live {
		w.err = s.tx(w.ctx, w.fn)
		close(w.done)
	}
}
