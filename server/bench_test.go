package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/store"
)

// BenchmarkGetMe measures one authenticated read through the whole engine: contract routing,
// session lookup in the database, request validation, handler, and the test harness's
// response validation against openapi.yaml.
func BenchmarkGetMe(b *testing.B) {
	env := apitest.New(b)
	c, _ := env.UserClient("bench@example.com")
	b.ReportAllocs()
	for b.Loop() {
		if res := c.Get("/auth/me"); res.Status != http.StatusOK {
			b.Fatalf("status %d", res.Status)
		}
	}
}

// BenchmarkPatchAccount measures a validated, CSRF-checked write that updates a row.
func BenchmarkPatchAccount(b *testing.B) {
	env := apitest.New(b)
	c, _ := env.UserClient("bench@example.com")
	body := map[string]any{"display_name": "Bench"}
	b.ReportAllocs()
	for b.Loop() {
		if res := c.Patch("/auth/account", body); res.Status != http.StatusOK {
			b.Fatalf("status %d", res.Status)
		}
	}
}

// benchKey is a service with the per-agent API on and a per-key budget the benchmark cannot
// exhaust, an owner, one agent and a key for it.
type benchKey struct {
	env     *apitest.Env
	owner   *apitest.Client
	agentID int64
	c       *apitest.Client
	hdr     map[string]string
}

func newBenchKey(b *testing.B) *benchKey {
	b.Helper()
	k := &benchKey{env: apitest.New(b, "SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000000")}
	k.owner, _ = k.env.UserClient("bench@example.com")
	var ar gen.AgentResponse
	k.owner.Post("/agents", map[string]any{"name": "Bench"}).Expect(b, http.StatusCreated).Decode(b, &ar)
	k.agentID = ar.Data.Agent.Id
	var kr gen.AgentApiKeyCreatedResponse
	k.owner.Post(fmt.Sprintf("/agents/%d/api-keys", k.agentID), map[string]any{"name": "bench"}).
		Expect(b, http.StatusCreated).Decode(b, &kr)
	k.c = k.env.Client()
	k.hdr = map[string]string{"Authorization": "Bearer " + kr.Data.Key}
	return k
}

// call sends a per-agent API request with the key.
func (k *benchKey) call(method, path string, body any) *apitest.Response {
	return k.c.Do(apitest.Request{Method: method, Path: path, Body: body, Header: k.hdr})
}

// BenchmarkAgentAPIChatStatus measures one per-agent API read through the whole gate: route,
// bearer key lookup, digest and constant-time compare, the per-key rate limiter, the
// last_used_at touch, then the chat status handler (task view) and the harness's response
// validation. "steady" is a busy key (last_used_at is written at most once a minute, so the
// touch is only a time check); "touch" advances the clock a minute per request so every
// request also writes last_used_at.
func BenchmarkAgentAPIChatStatus(b *testing.B) {
	for _, tc := range []struct {
		name  string
		touch bool
	}{{"steady", false}, {"touch", true}} {
		b.Run(tc.name, func(b *testing.B) {
			k := newBenchKey(b)
			var cr gen.ChatResponse
			k.call(http.MethodPost, "/agent-api/chats", map[string]any{"text": "hello"}).
				Expect(b, http.StatusAccepted).Decode(b, &cr)
			path := fmt.Sprintf("/agent-api/chats/%d/status", cr.Data.Chat.Id)
			b.ReportAllocs()
			for b.Loop() {
				if tc.touch {
					k.env.Clock.Advance(store.APIKeyTouchInterval)
				}
				if res := k.call(http.MethodGet, path, nil); res.Status != http.StatusOK {
					b.Fatalf("status %d: %s", res.Status, res.Body)
				}
			}
			if tc.touch {
				// The last request wrote last_used_at.
				var lr gen.AgentApiKeyListResponse
				k.owner.Get(fmt.Sprintf("/agents/%d/api-keys", k.agentID)).Expect(b, http.StatusOK).Decode(b, &lr)
				if got := lr.Data.ApiKeys; len(got) != 1 || got[0].LastUsedAt == nil || !got[0].LastUsedAt.Equal(k.env.Clock.Now()) {
					b.Fatalf("keys = %+v, want last_used_at %s", got, k.env.Clock.Now())
				}
			}
		})
	}
}

// BenchmarkAgentAPIChatStart measures the write path of the per-agent API: the same gate,
// then POST /agent-api/chats without files (body validation, step clamps, one task and its
// first message created in a transaction, the 202 chat record). Every op adds a queued chat.
func BenchmarkAgentAPIChatStart(b *testing.B) {
	k := newBenchKey(b)
	body := map[string]any{"text": "Summarise the attached quarter's numbers in three bullet points."}
	b.ReportAllocs()
	for b.Loop() {
		if res := k.call(http.MethodPost, "/agent-api/chats", body); res.Status != http.StatusAccepted {
			b.Fatalf("status %d: %s", res.Status, res.Body)
		}
	}
}

// BenchmarkAgentAPIChatInlineFile measures a chat start carrying one 16 MiB inline file (issue
// 10, item 6): the body streams through the gate, the data URL is decoded to a temporary file
// while it arrives, the rest of the body is validated and the file stored as a media asset.
// "alloc/file" is the bytes allocated per request divided by the file's size (at most 2 is
// the goal; holding the body and its decoded copies took 12.5). "baseline" decodes the same
// data URL's base64 in memory with encoding/base64, the least any server must do, for the
// time ratio.
func BenchmarkAgentAPIChatInlineFile(b *testing.B) {
	const size = media.MaxInlineBytes
	body := inlineBody(size)
	b.Run("request", func(b *testing.B) {
		k := newBenchKey(b)
		b.ReportAllocs()
		b.SetBytes(size)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for b.Loop() {
			if res := k.call(http.MethodPost, "/agent-api/chats", body); res.Status != http.StatusAccepted {
				b.Fatalf("status %d: %s", res.Status, res.Body)
			}
		}
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/size, "alloc/file")
	})
	b.Run("baseline", func(b *testing.B) {
		start := bytes.Index(body, []byte("base64,")) + len("base64,")
		payload := body[start : len(body)-len(`"}]}`)]
		dst := make([]byte, base64.StdEncoding.DecodedLen(len(payload)))
		b.SetBytes(size)
		for b.Loop() {
			if _, err := base64.StdEncoding.Decode(dst, payload); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTaskEventStream measures one client replaying a task's event stream over real HTTP
// (gate, key check, store pages of 500, one JSON encoding and SSE frame per event), against the
// baseline of reading the same events straight from the store in the same run. The task is
// mid-turn with 2000 delta events; events/s is the stream's throughput, and x-store the
// stream's time per event over the plain store read's.
func BenchmarkTaskEventStream(b *testing.B) {
	const deltas = 2000
	env := apitest.New(b, "SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000000")
	owner, _ := env.UserClient("bench@example.com")
	var ar gen.AgentResponse
	owner.Post("/agents", map[string]any{"name": "Bench"}).Expect(b, http.StatusCreated).Decode(b, &ar)
	key := mintKey(b, owner, ar.Data.Agent.Id, "bench")
	st := env.App.Store
	ctx := context.Background()
	var chat gen.ChatResponse
	env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Body: map[string]any{"text": "bench"},
		Header: map[string]string{"Authorization": "Bearer " + key.Key}}).Expect(b, http.StatusAccepted).Decode(b, &chat)
	id := chat.Data.Chat.Id
	if got, err := st.ClaimQueued(ctx, "bench", time.Hour, 1); err != nil || len(got) != 1 {
		b.Fatalf("claim: %v", err)
	}
	for i := range deltas {
		if err := st.AppendDelta(ctx, id, "bench", store.Delta{Text: fmt.Sprintf("token %d of the answer ", i)}); err != nil {
			b.Fatal(err)
		}
	}
	total := deltas + 3 // QUEUED, the user message, RUNNING
	url := fmt.Sprintf("http://%s%s/agent-api/chats/%d/events", serve(b, env), apitest.API, id)
	var streamDur, storeDur time.Duration
	for b.Loop() {
		start := time.Now()
		for after := int64(0); after < int64(total); {
			evs, err := st.TaskEvents(ctx, id, after, store.MaxEventsPage)
			if err != nil || len(evs) == 0 {
				b.Fatalf("store read: %v", err)
			}
			after = evs[len(evs)-1].Sequence
		}
		storeDur += time.Since(start)
		start = time.Now()
		if n := readEvents(b, url, key.Key, total); n != total {
			b.Fatalf("stream delivered %d of %d events", n, total)
		}
		streamDur += time.Since(start)
	}
	b.ReportMetric(float64(total*b.N)/streamDur.Seconds(), "events/s")
	b.ReportMetric(streamDur.Seconds()/storeDur.Seconds(), "x-store")
}

// readEvents reads want events of a stream and hangs up.
func readEvents(b *testing.B, url, key string, want int) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	n := 0
	for n < want && sc.Scan() {
		if strings.HasPrefix(sc.Text(), "id: ") {
			n++
		}
	}
	return n
}
