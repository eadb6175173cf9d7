package store_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func strp(s string) *string { return &s }

func everyMinute(_ *store.ScheduledRun, after time.Time) *time.Time {
	n := after.Truncate(time.Minute).Add(time.Minute)
	return &n
}

func allow(*store.Agent, *store.PromptTemplate) error { return nil }

func TestPromptTemplateCRUD(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	fields := store.PromptTemplateFields{Name: "Digest", Template: "About {{topic}}", IsActive: true,
		Variables: []store.PromptVariable{{Key: "topic"}}}
	tp, err := f.s.CreatePromptTemplate(ctx, f.agent.ID, fields, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.CreatePromptTemplate(ctx, f.agent.ID, fields, nil); !errors.Is(err, svcerr.ErrConflict) {
		t.Fatalf("duplicate name: %v, want ErrConflict", err)
	}
	// The field rules (lengths, duplicate keys) are schedule.CheckTemplateFields, tested there.
	r, err := f.s.CreateScheduledRun(ctx, f.agent.ID, f.user.ID, store.ScheduledRunFields{Name: "r", TemplateID: &tp.ID,
		Variables: map[string]string{"topic": "x"}, CronExpression: strp("* * * * *"), Timezone: "UTC", IsActive: true}, allow)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.DeletePromptTemplate(ctx, f.agent.ID, tp.ID, nil); !errors.Is(err, svcerr.ErrInvalidState) {
		t.Fatalf("delete used template: %v, want ErrInvalidState", err)
	}
	ch := fields
	ch.Variables = []store.PromptVariable{{Key: "topic"}, {Key: "length"}}
	if _, err := f.s.UpdatePromptTemplate(ctx, f.agent.ID, tp.ID, ch, nil); !errors.Is(err, svcerr.ErrInvalid) {
		t.Fatalf("update leaving a run without a value: %v, want ErrInvalid", err)
	}
	if err := f.s.DeleteScheduledRun(ctx, f.agent.ID, r.ID, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.s.DeletePromptTemplate(ctx, f.agent.ID, tp.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.PromptTemplate(ctx, f.agent.ID, tp.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("deleted template: %v", err)
	}
}

func TestClaimDueRun(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	now := f.clock.Now()
	due := now.Add(-time.Minute)
	cron, err := f.s.CreateScheduledRun(ctx, f.agent.ID, f.user.ID, store.ScheduledRunFields{Name: "cron", Prompt: strp("p"),
		CronExpression: strp("* * * * *"), Timezone: "UTC", IsActive: true, NextRunAt: &due}, allow)
	if err != nil {
		t.Fatal(err)
	}
	once, err := f.s.CreateScheduledRun(ctx, f.agent.ID, f.user.ID, store.ScheduledRunFields{Name: "once", Prompt: strp("p"),
		RunAt: &now, Timezone: "UTC", IsActive: true, NextRunAt: &now}, allow)
	if err != nil {
		t.Fatal(err)
	}
	got1, err := f.s.ClaimDueRun(ctx, now, everyMinute)
	if err != nil || got1 == nil || got1.ID != cron.ID {
		t.Fatalf("first claim = %+v, %v; want the cron run", got1, err)
	}
	got2, err := f.s.ClaimDueRun(ctx, now, everyMinute)
	if err != nil || got2 == nil || got2.ID != once.ID {
		t.Fatalf("second claim = %+v, %v; want the one-shot run", got2, err)
	}
	if got, err := f.s.ClaimDueRun(ctx, now, everyMinute); err != nil || got != nil {
		t.Fatalf("third claim = %+v, %v; want nothing", got, err)
	}
	o, _ := f.s.ScheduledRun(ctx, f.agent.ID, once.ID)
	if o.IsActive || o.NextRunAt != nil || o.LastRunAt == nil {
		t.Fatalf("one-shot after claim: %+v", o)
	}
	c, _ := f.s.ScheduledRun(ctx, f.agent.ID, cron.ID)
	if c.NextRunAt == nil || !c.NextRunAt.After(now) {
		t.Fatalf("cron after claim: next %v", c.NextRunAt)
	}
}

// Two processes claiming the same due runs never get one due time twice.
func TestClaimDueRunConcurrent(t *testing.T) {
	t.Parallel()
	stores := storetest.NewShared(t, 2)
	ctx := context.Background()
	s := stores[0]
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	now := time.Now().UTC().Truncate(time.Second)
	const runs = 20
	for i := range runs {
		at := now.Add(-time.Duration(i) * time.Second)
		if _, err := s.CreateScheduledRun(ctx, a.ID, u.ID, store.ScheduledRunFields{Name: "r", Prompt: strp("p"),
			RunAt: &at, Timezone: "UTC", IsActive: true, NextRunAt: &at}, allow); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[int64]int{}
	var total atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func(st *store.Store) {
			defer wg.Done()
			for range runs * 3 {
				r, err := st.ClaimDueRun(ctx, now, everyMinute)
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if r != nil {
					total.Add(1)
					mu.Lock()
					seen[r.ID]++
					mu.Unlock()
				}
			}
		}(stores[w%2])
	}
	wg.Wait()
	for id, n := range seen {
		if n != 1 {
			t.Errorf("run %d claimed %d times", id, n)
		}
	}
	if total.Load() != runs {
		t.Errorf("claimed %d runs, want %d", total.Load(), runs)
	}
}
