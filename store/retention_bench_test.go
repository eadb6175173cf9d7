package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// BenchmarkSteadyStateSize shows the database's size under a steady load with retention on:
// each simulated day queues, runs (one step with a model call) and settles steadyPerDay chats
// and fans out their notices, then a day passes and the store's prune methods run to the end,
// as the housekeeping pass (internal/jobs/retention) runs them. With chats kept 7 days and the rest 2 to 7, the size stops growing once the first
// week has been cut: the figures docs/benchmarks.md records ("Retention: size under a steady
// load"). It runs the days once whatever b.N is; on MySQL/MariaDB and PostgreSQL set the
// storetest DSN variable.
//
//	go test -run '^$' -bench BenchmarkSteadyStateSize -benchtime 1x -v ./store/
func BenchmarkSteadyStateSize(b *testing.B) {
	const steadyPerDay, days = 400, 28
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2031, 3, 1, 9, 0, 0, 0, time.UTC))
	s := storetest.NewWithClock(b, clock.Now)
	u := storetest.User(b, s)
	a := storetest.Agent(b, s, u.PrincipalID)
	daysAgo := func(n int) time.Time { return clock.Now().Add(-time.Duration(n) * 24 * time.Hour) }
	prune := []func() (int64, error){
		func() (int64, error) { return s.PruneFinishedTasks(ctx, daysAgo(7), 500) },
		func() (int64, error) { return s.PruneTaskEvents(ctx, daysAgo(2), 500) },
		func() (int64, error) { return s.PruneOutboxes(ctx, daysAgo(2), 500) },
		func() (int64, error) { return s.DeleteReadNotificationsBefore(ctx, daysAgo(7), 500) },
		func() (int64, error) { return s.PruneUsageLedger(ctx, s.Day(daysAgo(7)), 500) },
	}
	var sizes []int64
	for b.Loop() {
		sizes = sizes[:0]
		for day := range days {
			for range steadyPerDay {
				storetest.Task(b, s, a, u.ID)
			}
			claimed, err := s.ClaimQueued(ctx, "w", time.Hour, steadyPerDay)
			if err != nil || len(claimed) != steadyPerDay {
				b.Fatalf("day %d: claimed %d, %v", day, len(claimed), err)
			}
			for _, tk := range claimed {
				answer := fmt.Sprintf("The answer to task %d is 42.", tk.ID)
				if _, _, err := s.FinishTurn(ctx, tk.ID, "w", store.NewTaskMessage{Role: store.RoleAssistant, Text: answer, InputTokens: 40, OutputTokens: 9},
					store.StepOutcome{Status: taskstate.Completed, Answer: &answer, Steps: 1, InputTokens: 40, OutputTokens: 9,
						Call: &store.ModelCall{Model: "m", InputTokens: 40, OutputTokens: 9}}); err != nil {
					b.Fatal(err)
				}
			}
			for {
				ns, err := s.ClaimTaskNotices(ctx, "n", 100, time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				if len(ns) == 0 {
					break
				}
				for _, n := range ns {
					if _, err := s.FinishTaskNotice(ctx, n, store.NoticeDecision{}); err != nil {
						b.Fatal(err)
					}
				}
			}
			clock.Advance(24 * time.Hour)
			for _, p := range prune {
				for {
					n, err := p()
					if err != nil {
						b.Fatal(err)
					}
					if n == 0 {
						break
					}
				}
			}
			size, err := databaseSize(s)
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, size)
			b.Logf("%s, day %2d: %5d chats run, database %7.1f KB", s.Dialect(), day+1, (day+1)*steadyPerDay, float64(size)/1024)
		}
	}
	week2, week4 := sizes[13], sizes[days-1]
	b.Logf("%s: day 28 / day 14 = %.2f", s.Dialect(), float64(week4)/float64(week2))
	b.ReportMetric(float64(week2)/1024, "KB@day14")
	b.ReportMetric(float64(week4)/1024, "KB@day28")
	b.ReportMetric(float64(week4)/float64(week2), "day28/day14")
}

// databaseSize is the space the store's tables take on disk: SQLite's pages (free ones
// included: they are reused, the file does not shrink); PostgreSQL's relations of the store's
// schema with their indexes and TOAST, after a VACUUM of them (this machine's server runs
// without autovacuum, which a deployment has on); MariaDB's tablespace files of the database.
func databaseSize(s *store.Store) (int64, error) {
	db := s.GormDBForTest()
	var size int64
	switch s.Dialect() {
	case store.DialectPostgres:
		var tables []string
		if err := db.Raw("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").Scan(&tables).Error; err != nil {
			return 0, err
		}
		if err := db.Exec("VACUUM " + strings.Join(tables, ", ")).Error; err != nil {
			return 0, err
		}
		err := db.Raw("SELECT SUM(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace " +
			"WHERE n.nspname = current_schema() AND c.relkind = 'r'").Scan(&size).Error
		return size, err
	case store.DialectMySQL:
		err := db.Raw("SELECT SUM(FILE_SIZE) FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME LIKE CONCAT(DATABASE(), '/%')").Scan(&size).Error
		return size, err
	}
	var pages, pageSize int64
	if err := db.Raw("PRAGMA page_count").Scan(&pages).Error; err != nil {
		return 0, err
	}
	err := db.Raw("PRAGMA page_size").Scan(&pageSize).Error
	return pages * pageSize, err
}
