package store

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// GormDBForTest exposes the handle to tests that must look under the API (foreign keys,
// cascades, the principals table).
func (s *Store) GormDBForTest() *gorm.DB { return s.db }

// TxForTest runs fn as the store runs every transaction (retries included).
func (s *Store) TxForTest(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return s.tx(ctx, fn)
}

// HandWrittenColumnsForTest are the column lists of the hand-written statements
// (store/rawsql.go) by table.
var HandWrittenColumnsForTest = map[string]string{
	"tasks": taskColumns, "task_messages": messageColumns, "task_tool_calls": toolCallColumns,
	"agents": agentColumns, "agent_api_keys": apiKeyColumns,
}

// UnreadIDForTest are the tables whose id column nothing reads: PostgreSQL has dropped it
// (migrations 0040, 0041), SQLite and MySQL keep it as the key rows are stored under.
var UnreadIDForTest = []string{"task_messages", "task_events"}

// MemoryTermsForTest is the terms column of a memory's text, for benchmarks that fill the table
// in SQL.
var MemoryTermsForTest = memoryTerms

// RankQueuedMySQLForTest is the MySQL/MariaDB fair ranking of QUEUED tasks, for the benchmark
// that compares it with the window function it replaced.
var RankQueuedMySQLForTest = rankQueuedMySQL

// QueuedFairPostgresForTest is PostgreSQL's locking read of the fair claim of want tasks, for
// the test that reads its plan.
var QueuedFairPostgresForTest = queuedFairPostgres

// GroupTxForTest runs fn as a grouped write ordered by key (commitgroup.go).
func (s *Store) GroupTxForTest(ctx context.Context, key int64, fn func(tx *gorm.DB) error) error {
	return s.groupTx(ctx, key, fn)
}

// CommitLanesForTest is how many groups of writes run at once.
func (s *Store) CommitLanesForTest() int { return max(s.group.lanes, 1) }

// WaitingWritesForTest is how many grouped writes wait for a lane.
func (s *Store) WaitingWritesForTest() int {
	s.group.mu.Lock()
	defer s.group.mu.Unlock()
	n := 0
	for _, w := range s.group.pending {
		if !w.told {
			n++
		}
	}
	return n
}

// SetCommitLingerForTest sets how long a group's leader may wait for a load's writes (SQLite's
// sqliteCommitLinger; 0: never) and the size of the last group, the load it waits for.
func (s *Store) SetCommitLingerForTest(d time.Duration, last int) {
	s.group.mu.Lock()
	defer s.group.mu.Unlock()
	s.group.linger, s.group.last = d, last
}

// SetMaxGroupHeldForTest sets the bytes of held writes past which a commit group sends them
// (maxGroupHeld on MySQL/MariaDB).
func (s *Store) SetMaxGroupHeldForTest(n int) {
	s.group.mu.Lock()
	defer s.group.mu.Unlock()
	s.group.maxHeld = n
}

// LingeringForTest reports whether a group's leader is waiting for more writes.
func (s *Store) LingeringForTest() bool {
	s.group.mu.Lock()
	defer s.group.mu.Unlock()
	return s.group.filled != nil
}
