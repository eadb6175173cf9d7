package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/platform/startstop"
	"github.com/agentsvc/svc/internal/platform/webhook"
	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// benchAnswer makes the rendered chat record about 1 KiB, a typical short final answer.
var benchAnswer = strings.Repeat("The quarter closed 4% above plan; churn fell to 1.9%. ", 15)

// benchChatBody is the chat record of a completed chat with benchAnswer, as a callback sends it.
func benchChatBody(tb testing.TB, t store.Task) []byte {
	tb.Helper()
	body, err := json.Marshal(gen.Chat{Id: t.ID, AgentId: t.AgentID, Status: gen.TaskStatusCOMPLETED, Answer: &benchAnswer,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// BenchmarkSign measures the signature of one delivery over a typical (~1 KiB) chat body.
func BenchmarkSign(b *testing.B) {
	body := benchChatBody(b, store.Task{ID: 123456, AgentID: 42, CreatedAt: t0, UpdatedAt: t0.Add(time.Minute)})
	if len(body) < 900 || len(body) > 1200 {
		b.Fatalf("body is %d bytes, want about 1 KiB", len(body))
	}
	digest := webhook.SecretDigest(katSecret)
	ts := t0.Unix()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var sig string
	for b.Loop() {
		sig = webhook.Sign(digest, ts, body)
	}
	if err := webhook.Verify(digest, fmt.Sprint(ts), sig, body, t0); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDrain measures the dispatcher draining a batch of pending deliveries to an
// httptest TLS receiver that answers 204 at once: claims (batches of webhook.BatchSize), a
// rendered ~1 KiB body, signing, the screened POST over a reused TLS connection, and recording
// each outcome. One op drains benchDrainN deliveries with RunOnce until nothing is due;
// deliveries/s is the figure, conns/op the TLS connections the receiver accepted per op (the
// receiver speaks HTTP/1.1, like many webhook endpoints). The chats that enqueue them are settled with the timer stopped.
func BenchmarkDrain(b *testing.B) {
	const benchDrainN = 100
	for _, tc := range []struct {
		name string
		conc int
	}{{"concurrency=1", 1}, {"concurrency=8", 8}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			clock := testkit.NewClock(t0)
			s := storetest.NewWithClock(b, clock.Now)
			u := storetest.User(b, s)
			a := storetest.Agent(b, s, u.PrincipalID)
			k := storetest.APIKey(b, s, a, u.ID, katSecret)
			var hits, conns atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				hits.Add(1)
				w.WriteHeader(http.StatusNoContent)
			}))
			srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}
			// The transport abandons racing dials mid-handshake at concurrency 8; not news.
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			srv.StartTLS()
			b.Cleanup(srv.Close)
			rc := &receiver{srv: srv}
			client := testClient(rc)
			d := &webhook.Dispatcher{Store: s, Client: client, Clock: startstop.RealClock(clock.Now), Concurrency: tc.conc,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Render: func(_ context.Context, d store.WebhookDelivery) ([]byte, error) {
					return benchChatBody(b, d.Snapshot.Task), nil
				}}
			url := srv.URL + "/hook?token=abc"
			var total time.Duration
			var sent, ops int64
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for range benchDrainN {
					tk := storetest.Task(b, s, a, u.ID, func(nt *store.NewTask) {
						nt.Source, nt.APIKeyID, nt.CallbackURL = store.TaskSourceAgentAPI, &k.ID, &url
					})
					if _, err := s.TransitionTask(ctx, tk.ID, store.TaskTransition{Action: taskstate.Abort, To: taskstate.Aborted}); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				start := time.Now()
				drained := 0
				for {
					n, err := d.RunOnce(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if n == 0 {
						break
					}
					drained += n
				}
				total += time.Since(start)
				sent += int64(drained)
				ops++
				if drained != benchDrainN {
					b.Fatalf("drained %d deliveries, want %d", drained, benchDrainN)
				}
			}
			if got := hits.Load(); got != sent {
				b.Fatalf("receiver got %d requests, want %d (failed attempts?)", got, sent)
			}
			b.ReportMetric(float64(sent)/total.Seconds(), "deliveries/s")
			b.ReportMetric(float64(conns.Load())/float64(ops), "conns/op")
		})
	}
}
