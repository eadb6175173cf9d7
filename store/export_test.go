package store

import (
	"context"

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
}

// MemoryTermsForTest is the terms column of a memory's text, for benchmarks that fill the table
// in SQL.
var MemoryTermsForTest = memoryTerms

// RankQueuedMySQLForTest is the MySQL/MariaDB fair ranking of QUEUED tasks, for the benchmark
// that compares it with the window function it replaced.
var RankQueuedMySQLForTest = rankQueuedMySQL

// QueuedFairPostgresForTest is PostgreSQL's locking read of the fair claim, for the test that
// reads its plan.
var QueuedFairPostgresForTest = queuedFairPostgres
