package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// TestProviderRetryAfter: a model provider that answers 429 with Retry-After: 30 holds the
// task's automatic retry back 30 s, even with the agent's retry_after_minutes at 0, and bounded
// by llm_retry_after_max_seconds (issue 23, item 5: the retries ran twice within 10 ms).
func TestProviderRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		env   []string
		after time.Duration
	}{
		{"provider's wait", nil, 30 * time.Second},
		{"bounded", []string{"SVC_LLM_RETRY_AFTER_MAX_SECONDS=10"}, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int64
			provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "30")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`))
			}))
			t.Cleanup(provider.Close)
			env := apitest.NewWith(t, apitest.Options{Net: netguard.Options{AllowLoopback: true}}, append([]string{
				"SVC_WORKER_RUNTIME_MODE=server", "SVC_LLM_DRIVER=openai", "SVC_LLM_BASE_URL=" + provider.URL + "/v1", "SVC_LLM_MODEL=m",
			}, tc.env...)...)
			c, _ := env.UserClient("ada@example.com")
			agent := mkAgent(t, c, map[string]any{"name": "limited", "max_retries": 2, "retry_after_minutes": 0})
			var created gen.TaskResponse
			c.Post("/tasks", map[string]any{"agent_id": agent.Id, "prompt": "hello"}).Expect(t, 201).Decode(t, &created)
			id := created.Data.Task.Id
			failedAt := env.Clock.Now()
			daemon := runWorker(t, env)
			daemon.Notify()
			ctx := context.Background()
			deadline := time.Now().Add(10 * time.Second)
			for {
				tk, err := env.App.Store.Task(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if tk.Status == taskstate.Failed && tk.NextRetryAt != nil {
					if tk.Error == nil || tk.Error.Code != taskstate.CodeRateLimit {
						t.Fatalf("task error = %+v", tk.Error)
					}
					if want := failedAt.Add(tc.after); !tk.NextRetryAt.Equal(want) {
						t.Fatalf("next_retry_at = %v, want %v (now + %s)", tk.NextRetryAt, want, tc.after)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("task = %s, next_retry_at %v, after %d model calls", tk.Status, tk.NextRetryAt, calls.Load())
				}
				time.Sleep(10 * time.Millisecond)
			}
			// The daemon goes round several times: the provider is not asked again before its time.
			for range 5 {
				daemon.Notify()
				time.Sleep(20 * time.Millisecond)
			}
			if n := calls.Load(); n != 1 {
				t.Fatalf("%d model calls before the provider's wait passed, want 1", n)
			}
			env.Clock.Advance(tc.after)
			for calls.Load() < 2 {
				if time.Now().After(deadline) {
					t.Fatalf("the retry did not run once due (%d calls)", calls.Load())
				}
				daemon.Notify()
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
