package push

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// TestHubEndsSubscriptionsOfEndedSessions: a token of an ended session is refused; open
// subscriptions of a session that ends are dropped within a Recheck, asked once per session per
// pass; the others stay; the per-user cap answers ErrRateLimited (429).
func TestHubEndsSubscriptionsOfEndedSessions(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	ended := map[int64]bool{}
	var asked atomic.Int64
	h, err := NewHub(HubOptions{MasterKey: testMaster, Heartbeat: -1, Recheck: 20 * time.Millisecond,
		MaxPerUser: func() int { return 3 },
		SessionStands: func(_ context.Context, sid int64) error {
			asked.Add(1)
			mu.Lock()
			defer mu.Unlock()
			if sid == 0 || ended[sid] {
				return svcerr.ErrUnauthenticated
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.Subscribe(w, r); err != nil {
			http.Error(w, err.Error(), statusOf(err))
		}
	}))
	t.Cleanup(func() { _ = h.Close(); srv.Close() })

	gone, _, _ := h.Token(1, 0, OwnTopics(1), time.Hour)
	if _, code := subscribe(t, srv.URL, topics(TaskTopic(1)), bearer(gone)); code != http.StatusUnauthorized {
		t.Fatalf("a token without a standing session: %d", code)
	}
	a, _, _ := h.Token(1, 7, OwnTopics(1), time.Hour)
	b, _, _ := h.Token(1, 8, OwnTopics(1), time.Hour)
	s1, _ := subscribe(t, srv.URL, topics(TaskTopic(1)), bearer(a))
	s2, _ := subscribe(t, srv.URL, topics(NotificationTopic(1)), bearer(a))
	s3, _ := subscribe(t, srv.URL, topics(TaskTopic(1)), bearer(b))
	if _, code := subscribe(t, srv.URL, topics(TaskTopic(1)), bearer(b)); code != http.StatusTooManyRequests {
		t.Fatalf("the 4th subscription of a user capped at 3: %d", code)
	}
	waitFor(t, func() bool { return h.Subscribers() == 3 })
	mu.Lock()
	ended[7] = true
	mu.Unlock()
	waitFor(t, func() bool { return h.Subscribers() == 1 })
	for _, s := range []*stream{s1, s2} {
		select {
		case _, ok := <-s.events:
			for ok {
				_, ok = <-s.events
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a subscription of the ended session is still open")
		}
	}
	if _, code := subscribe(t, srv.URL, topics(TaskTopic(1)), bearer(a)); code != http.StatusUnauthorized {
		t.Fatalf("a token of the ended session: %d", code)
	}
	if err := h.Publish(context.Background(), TaskTopic(1), []byte("still here")); err != nil {
		t.Fatal(err)
	}
	if ev := s3.next(t); ev.Data != "still here" {
		t.Fatalf("event %q", ev.Data)
	}
	// One question per session per pass: with one session open, the count grows by about one
	// a pass, not by one per subscription.
	n0 := asked.Load()
	time.Sleep(200 * time.Millisecond)
	if d := asked.Load() - n0; d > 15 {
		t.Errorf("%d questions in 10 passes over one session", d)
	}
}
