package webhook_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/platform/webhook"
	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

var t0 = time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)

// fixture is a store with a user, an agent and a key whose secret is katSecret.
type fixture struct {
	s     *store.Store
	clock *testkit.Clock
	user  *store.User
	agent *store.Agent
	key   *store.AgentAPIKey
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	k := storetest.APIKey(t, s, a, u.ID, katSecret, func(k *store.AgentAPIKey) { k.KeyID = "hookkey1" })
	return &fixture{s: s, clock: clock, user: u, agent: a, key: k}
}

// settle creates a chat with callback url and cancels it: one pending delivery.
func (f *fixture) settle(t *testing.T, url string) int64 {
	t.Helper()
	ctx := context.Background()
	tk := storetest.Task(t, f.s, f.agent, f.user.ID, func(nt *store.NewTask) {
		nt.Source, nt.APIKeyID, nt.CallbackURL = store.TaskSourceAgentAPI, &f.key.ID, &url
	})
	if _, err := f.s.TransitionTask(ctx, tk.ID, store.TaskTransition{Action: taskstate.Abort, To: taskstate.Aborted}); err != nil {
		t.Fatal(err)
	}
	return tk.ID
}

func (f *fixture) delivery(t *testing.T, taskID int64) store.WebhookDelivery {
	t.Helper()
	ds, err := f.s.WebhookDeliveries(context.Background(), taskID)
	if err != nil || len(ds) != 1 {
		t.Fatalf("WebhookDeliveries = %+v, %v", ds, err)
	}
	return ds[0]
}

// render is a stand-in for the chat record.
func render(_ context.Context, d store.WebhookDelivery) ([]byte, error) {
	return json.Marshal(map[string]any{"id": d.Snapshot.Task.ID, "status": d.Snapshot.Task.Status})
}

// receiver is an httptest TLS server recording what it received.
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	hits    []*http.Request
	bodies  [][]byte
	arrived chan struct{}
}

func newReceiver(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{arrived: make(chan struct{}, 100)}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.hits, rc.bodies = append(rc.hits, r), append(rc.bodies, body)
		rc.mu.Unlock()
		rc.arrived <- struct{}{}
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) count() int { rc.mu.Lock(); defer rc.mu.Unlock(); return len(rc.hits) }

func (rc *receiver) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(rc.srv.Certificate())
	return p
}

func (f *fixture) dispatcher(client *http.Client) *webhook.Dispatcher {
	return &webhook.Dispatcher{Store: f.s, Render: render, Client: client, Clock: f.clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func testClient(rc *receiver) *http.Client {
	return webhook.NewClient(netguard.Options{AllowLoopback: true, RootCAs: rc.pool()})
}

func runOnce(t *testing.T, d *webhook.Dispatcher, want int) {
	t.Helper()
	n, err := d.RunOnce(context.Background())
	if err != nil || n != want {
		t.Fatalf("RunOnce = %d, %v; want %d", n, err, want)
	}
}

func TestDeliverSigned2xx(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	id := f.settle(t, rc.srv.URL+"/hook?token=abc")
	runOnce(t, f.dispatcher(testClient(rc)), 1)
	if rc.count() != 1 {
		t.Fatalf("receiver got %d requests", rc.count())
	}
	r, body := rc.hits[0], rc.bodies[0]
	if r.Method != http.MethodPost || r.URL.Path != "/hook" || r.URL.Query().Get("token") != "abc" ||
		r.Header.Get("Content-Type") != "application/json" || r.Header.Get(webhook.HeaderKeyID) != "hookkey1" {
		t.Fatalf("request = %s %s %v", r.Method, r.URL, r.Header)
	}
	if got := r.Header.Get(webhook.HeaderTimestamp); got != fmt.Sprint(f.clock.Now().Unix()) {
		t.Fatalf("timestamp = %s, want the clock's %d", got, f.clock.Now().Unix())
	}
	// Verify as a receiver: the key's digest from the secret it holds.
	if err := webhook.Verify(webhook.SecretDigest(katSecret), r.Header.Get(webhook.HeaderTimestamp), r.Header.Get(webhook.HeaderSignature), body, f.clock.Now()); err != nil {
		t.Fatalf("signature: %v", err)
	}
	if want := fmt.Sprintf(`{"id":%d,"status":"ABORTED"}`, id); string(body) != want {
		t.Fatalf("body = %s, want %s", body, want)
	}
	if d := f.delivery(t, id); d.State != store.DeliveryDelivered || d.Attempts != 0 {
		t.Fatalf("delivery = %+v", d)
	}
	runOnce(t, f.dispatcher(testClient(rc)), 0)
}

// TestDeliverRetriedThenAbandoned: a failing receiver gets the delivery on the backoff schedule,
// six times in all, each with the same delivery id.
func TestDeliverRetriedThenAbandoned(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	id := f.settle(t, rc.srv.URL)
	d := f.dispatcher(testClient(rc))
	delays := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute}
	for attempt := 1; attempt <= 6; attempt++ {
		runOnce(t, d, 1)
		if rc.count() != attempt {
			t.Fatalf("attempt %d: receiver got %d requests", attempt, rc.count())
		}
		got := f.delivery(t, id)
		if got.Attempts != attempt || got.LastError == nil || !strings.Contains(*got.LastError, "500") {
			t.Fatalf("attempt %d: delivery = %+v", attempt, got)
		}
		if attempt == 6 {
			if got.State != store.DeliveryAbandoned {
				t.Fatalf("after 6 failures: %+v", got)
			}
			break
		}
		f.clock.Advance(delays[attempt-1] - time.Second)
		runOnce(t, d, 0) // not due yet
		f.clock.Advance(time.Second)
	}
	f.clock.Advance(time.Hour)
	runOnce(t, d, 0)
	if rc.count() != 6 {
		t.Fatalf("receiver got %d requests, want 6", rc.count())
	}
	// Every retry of the delivery names it the same way, so a receiver deduplicates exactly.
	first := rc.hits[0].Header.Get(webhook.HeaderDeliveryID)
	for i, r := range rc.hits {
		if got := r.Header.Get(webhook.HeaderDeliveryID); got == "" || got != first {
			t.Fatalf("attempt %d: %s %q, want %q", i+1, webhook.HeaderDeliveryID, got, first)
		}
	}
}

func TestRedirectIsFailureAndNotFollowed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	target := newReceiver(t, nil)
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.srv.URL+"/elsewhere", http.StatusFound)
	})
	pool := rc.pool()
	pool.AddCert(target.srv.Certificate())
	id := f.settle(t, rc.srv.URL)
	runOnce(t, f.dispatcher(webhook.NewClient(netguard.Options{AllowLoopback: true, RootCAs: pool})), 1)
	if rc.count() != 1 || target.count() != 0 {
		t.Fatalf("hits: callback %d, redirect target %d", rc.count(), target.count())
	}
	if d := f.delivery(t, id); d.State != store.DeliveryPending || d.Attempts != 1 || d.LastError == nil || !strings.Contains(*d.LastError, "302") {
		t.Fatalf("delivery = %+v", d)
	}
}

func TestSlowReceiverTimesOut(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	release := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select { // answer only when the test ends (or the client gives up)
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) }) // runs before rc.srv.Close
	id := f.settle(t, rc.srv.URL)
	d := f.dispatcher(testClient(rc))
	d.HeaderTimeout, d.HardTimeout = 200*time.Millisecond, 400*time.Millisecond
	runOnce(t, d, 1)
	got := f.delivery(t, id)
	if got.Attempts != 1 || got.LastError == nil || !strings.Contains(*got.LastError, "no response within 200ms") {
		t.Fatalf("delivery = %+v", got)
	}
}

func TestPrivateCallbackRefusedAtSend(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("plain http server reached") }))
	t.Cleanup(plain.Close)
	cases := []struct {
		name string
		opts netguard.Options
		url  string
		want string
	}{
		{"loopback without AllowLoopback", netguard.Options{RootCAs: rc.pool()}, rc.srv.URL + "/hook", "not resolve to a public address"},
		{"private address", netguard.Options{AllowLoopback: true}, "https://10.0.0.1/hook", "not resolve to a public address"},
		{"plain http", netguard.Options{AllowLoopback: true}, plain.URL + "/hook", "https"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			id := f.settle(t, tc.url)
			runOnce(t, f.dispatcher(webhook.NewClient(tc.opts)), 1)
			d := f.delivery(t, id)
			if d.Attempts != 1 || d.LastError == nil || !strings.Contains(*d.LastError, tc.want) {
				t.Fatalf("delivery = %+v", d)
			}
			if strings.Contains(*d.LastError, "/hook") {
				t.Errorf("last_error names the URL: %s", *d.LastError)
			}
		})
	}
	t.Cleanup(func() {
		if rc.count() != 0 {
			t.Errorf("receiver reached %d times", rc.count())
		}
	})
}

// TestRestartDeliversPending: a dispatcher that claimed a batch and died leaves it leased; a new
// dispatcher over the same store delivers it once the lease lapses, and a started dispatcher
// sends what is due on Notify and at each poll of its clock, and drains on Stop.
func TestRestartDeliversPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	rc := newReceiver(t, nil)
	first := f.settle(t, rc.srv.URL)
	if got, err := f.s.ClaimDeliveries(ctx, "crashed", 25, webhook.Lease); err != nil || len(got) != 1 {
		t.Fatalf("claim = %+v, %v", got, err)
	}
	d := f.dispatcher(testClient(rc))
	runOnce(t, d, 0) // still leased by the dead dispatcher
	f.clock.Advance(webhook.Lease + time.Second)
	runOnce(t, d, 1)
	if f.delivery(t, first).State != store.DeliveryDelivered || rc.count() != 1 {
		t.Fatalf("after restart: %+v, %d hits", f.delivery(t, first), rc.count())
	}
	<-rc.arrived

	arrived := func(what string) {
		t.Helper()
		select {
		case <-rc.arrived:
		case <-time.After(10 * time.Second):
			t.Fatalf("started dispatcher sent nothing %s", what)
		}
	}
	bg := f.dispatcher(testClient(rc))
	bg.Poll = time.Hour
	bg.Start(ctx)
	f.clock.WaitForTimers(t, 1) // the first pass found nothing: idle until Notify or the poll
	second := f.settle(t, rc.srv.URL)
	bg.Notify()
	arrived("on Notify")
	f.clock.WaitForTimers(t, 1)
	third := f.settle(t, rc.srv.URL)
	f.clock.Advance(bg.Poll)
	arrived("at the poll")
	stop, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := bg.Stop(stop); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{second, third} {
		if got := f.delivery(t, id); got.State != store.DeliveryDelivered {
			t.Fatalf("delivery of task %d = %+v", id, got)
		}
	}
}
