package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/schedule"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// A task started by a scheduled run mails its owner once when it finishes, unless
// notifications_email_enabled is false.
func TestScheduledRunCompletionMail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		seed    bool   // seed a working model configuration (else the task fails: NO_LLM_CONFIGURATION)
		enabled string // SVC_NOTIFICATIONS_EMAIL_ENABLED; "" leaves the default (true)
		status  string
		subject string // "" when no notification is due
		body    []string
	}{
		{name: "completed", seed: true, status: taskstate.Completed,
			subject: "Scheduled run \u201cNightly report\u201d completed", body: []string{"Answer: Report ready."}},
		{name: "failed", status: taskstate.Failed,
			subject: "Scheduled run \u201cNightly report\u201d failed", body: []string{"Error: NO_LLM_CONFIGURATION"}},
		{name: "disabled", seed: true, enabled: "false", status: taskstate.Completed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			envVars := []string{"SVC_APP_URL=https://svc.example/app"}
			if tt.seed {
				fake := newFakeOpenAI(t, "Report ready.")
				envVars = append(envVars, "SVC_LLM_DRIVER=openai", "SVC_LLM_MODEL=m", "SVC_LLM_BASE_URL="+fake.srv.URL+"/v1")
			}
			if tt.enabled != "" {
				envVars = append(envVars, "SVC_NOTIFICATIONS_EMAIL_ENABLED="+tt.enabled)
			}
			env := apitest.New(t, envVars...)
			c, _ := env.UserClient("ada@example.com")
			var a gen.AgentResponse
			c.Post("/agents", map[string]any{"name": "Reporter", "system_prompt": "Report."}).Expect(t, 201).Decode(t, &a)
			runAt := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
			c.Post(runPath(a.Data.Agent.Id, ""), map[string]any{"name": "Nightly report", "prompt": "Write the report.",
				"run_at": runAt}).Expect(t, 201)
			before := len(env.Mails()) // the verification mail

			n, err := schedule.New(env.App.Store).DispatchDue(context.Background(), time.Now().Add(2*time.Hour))
			if err != nil || n != 1 {
				t.Fatalf("dispatched %d, %v", n, err)
			}
			tk := runQueued(t, env.App)
			if tk.Status != tt.status {
				t.Fatalf("task %s (%+v), want %s", tk.Status, tk.Error, tt.status)
			}
			// The step that finished the task queued the mail; the outbox sends it.
			var got []string
			for _, m := range env.Mails()[before:] {
				got = append(got, m.Subject)
			}
			if tt.subject == "" {
				if len(got) != 0 {
					t.Fatalf("sent %q", got)
				}
				return
			}
			msgs := env.WaitMail(before + 1)[before:]
			if len(msgs) != 1 {
				t.Fatalf("sent %d messages: %q", len(msgs), got)
			}
			m := msgs[0]
			if m.Subject != tt.subject || len(m.To) != 1 || m.To[0] != "ada@example.com" {
				t.Errorf("subject %q to %v", m.Subject, m.To)
			}
			for _, s := range append(tt.body, fmt.Sprintf("https://svc.example/app/tasks/%d", tk.ID)) {
				if !strings.Contains(m.TextBody, s) {
					t.Errorf("text lacks %q:\n%s", s, m.TextBody)
				}
			}
			// A later tick on the finished task sends nothing more.
			if _, err := env.App.Loop.Tick(context.Background(), tk.ID, "test-worker"); err == nil {
				t.Error("a finished task ticked")
			}
			if n := len(env.Mails()); n != before+1 {
				t.Errorf("%d messages after the extra tick", n-before)
			}
		})
	}
}
