package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestAnnounceOnlyWhenOthersListen: a store whose channel no other store listens on sends no
// NOTIFY after its commits (a process alone has nobody to wake); once another store's listener
// connects, the store's next commit after its cached answer expired (a second) is announced.
func TestAnnounceOnlyWhenOthersListen(t *testing.T) {
	if storetest.Dialect() != store.DialectPostgres {
		t.Skip("wake-ups cross processes on PostgreSQL only (" + storetest.EnvPostgresDSN + ")")
	}
	t.Parallel()
	ctx := context.Background()
	a := storetest.New(t)
	b := storetest.Twin(t, a)
	// The test hears the channel through a connection named as a's own listener: it does not
	// count as another store's.
	hear, err := a.ListenWake(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hear.Close(ctx)
	u := storetest.User(t, a)
	g := storetest.Group(t, a, u)
	ag := storetest.Agent(t, a, g.PrincipalID)

	storetest.Task(t, a, ag, u.ID)
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	n, err := hear.WaitForNotification(wctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a store alone announced its commit: %+v, %v", n, err)
	}
	// b's listener says hello as it connects: a hears it (its answer is fresh at once) and so
	// does the test.

	other, err := b.ListenWake(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	wctx, cancel = context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if n, err := hear.WaitForNotification(wctx); err != nil || !strings.Contains(n.Payload, `"h":true`) {
		t.Fatalf("b's listener said no hello: %+v, %v", n, err)
	}
	time.Sleep(1100 * time.Millisecond) // past a's cached "nobody listens", whoever told it
	task := storetest.Task(t, a, ag, u.ID)
	for {
		n, err := hear.WaitForNotification(wctx)
		if err != nil {
			t.Fatalf("the commit after another store began listening was not announced: %v", err)
		}
		if c, ok := b.WakeCommit(n.Payload); ok && c.TaskQueued && len(c.EventTasks) > 0 && c.EventTasks[0] == task.ID {
			return
		}
	}
}
