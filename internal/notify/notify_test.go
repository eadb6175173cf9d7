package notify_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/config"
	"github.com/agentsvc/svc/internal/notify"
	"github.com/agentsvc/svc/internal/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// queued returns the mails the outbox holds for to.
func queued(t *testing.T, st *store.Store, to string) []store.Mail {
	t.Helper()
	ms, err := st.Mails(context.Background(), to)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func ptr[T any](v T) *T { return &v }

// world is a user with an agent, a scheduled run of it and a task that run started.
type world struct {
	st   *store.Store
	user *store.User
	run  *store.ScheduledRun
	task *store.Task
}

// newWorld builds the world of user email in st (one store per test function: a MariaDB
// database per subtest would be slow).
func newWorld(t *testing.T, st *store.Store, email string) *world {
	t.Helper()
	ctx := context.Background()
	u := storetest.User(t, st, func(nu *store.NewUser) { nu.Email = email })
	a := storetest.Agent(t, st, u.PrincipalID, storetest.AgentNamed("Reporter"))
	r, err := st.CreateScheduledRun(ctx, a.ID, u.ID, store.ScheduledRunFields{Name: "Morning digest", Prompt: ptr("Digest"),
		RunAt: ptr(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)), Timezone: "UTC", IsActive: true},
		func(*store.Agent, *store.PromptTemplate) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	tk := storetest.Task(t, st, a, u.ID, func(nt *store.NewTask) { nt.Prompt, nt.Data = "Digest", map[string]any{"scheduled_run_id": r.ID} })
	return &world{st: st, user: u, run: r, task: tk}
}

func TestTaskSettled(t *testing.T) {
	t.Parallel()
	later := time.Now().Add(time.Hour)
	st := storetest.New(t)
	tests := []struct {
		name    string
		edit    func(w *world, t *store.Task, c *config.Config)
		subject string   // "" when no message is due
		body    []string // substrings of the text body
	}{
		{
			name: "completed",
			edit: func(_ *world, t *store.Task, _ *config.Config) {
				t.Status, t.Answer = taskstate.Completed, ptr("All quiet overnight.")
			},
			subject: "Scheduled run \u201cMorning digest\u201d completed",
			body:    []string{"\u201cMorning digest\u201d of agent \u201cReporter\u201d has completed", "Answer: All quiet overnight.", "https://svc.example/app/tasks/"},
		},
		{
			name: "failed",
			edit: func(_ *world, t *store.Task, _ *config.Config) {
				t.Status, t.Error = taskstate.Failed, &store.TaskError{Code: taskstate.CodeLLMTimeout, Message: "the model did not answer"}
			},
			subject: "Scheduled run \u201cMorning digest\u201d failed",
			body:    []string{"has failed", "Error: LLM_TIMEOUT: the model did not answer"},
		},
		{
			name: "run deleted meanwhile",
			edit: func(w *world, t *store.Task, _ *config.Config) {
				if err := w.st.DeleteScheduledRun(context.Background(), w.run.AgentID, w.run.ID, func(*store.Agent) error { return nil }); err != nil {
					panic(err)
				}
				t.Status = taskstate.Completed
			},
			subject: "Scheduled run completed",
			body:    []string{"A scheduled run of agent \u201cReporter\u201d has completed."},
		},
		{
			name: "id decoded from JSON",
			edit: func(w *world, t *store.Task, _ *config.Config) {
				t.Status, t.Data = taskstate.Completed, map[string]any{"scheduled_run_id": float64(w.run.ID)}
			},
			subject: "Scheduled run \u201cMorning digest\u201d completed",
		},
		{
			name: "failed with a retry pending",
			edit: func(_ *world, t *store.Task, _ *config.Config) {
				t.Status, t.NextRetryAt = taskstate.Failed, &later
			},
		},
		{name: "still running", edit: func(_ *world, t *store.Task, _ *config.Config) { t.Status = taskstate.Running }},
		{name: "waiting for approval", edit: func(_ *world, t *store.Task, _ *config.Config) { t.Status = taskstate.PendingApproval }},
		{name: "cancelled", edit: func(_ *world, t *store.Task, _ *config.Config) { t.Status = taskstate.Cancelled }},
		{
			name: "not a scheduled task",
			edit: func(_ *world, t *store.Task, _ *config.Config) {
				t.Status, t.Data = taskstate.Completed, map[string]any{}
			},
		},
		{
			name: "notifications disabled",
			edit: func(_ *world, t *store.Task, c *config.Config) {
				t.Status, c.NotificationsEmailEnabled = taskstate.Completed, false
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			email := strings.ToLower(strings.ReplaceAll(tt.name, " ", "-")) + "@example.com"
			w := newWorld(t, st, email)
			cfg := config.Defaults()
			cfg.AppURL = "https://svc.example/app"
			task := *w.task
			tt.edit(w, &task, cfg)
			n := &notify.ScheduledRuns{Store: w.st, Config: func() *config.Config { return cfg }}
			n.TaskSettled(context.Background(), &task)
			msgs := queued(t, w.st, email)
			if tt.subject == "" {
				if len(msgs) != 0 {
					t.Fatalf("queued %+v", msgs)
				}
				return
			}
			if len(msgs) != 1 {
				t.Fatalf("queued %d messages", len(msgs))
			}
			m := msgs[0]
			if m.Kind != store.MailKindScheduledRun || m.State != store.MailPending {
				t.Errorf("kind %q state %q", m.Kind, m.State)
			}
			if m.To != email || m.Subject != tt.subject {
				t.Errorf("to %q subject %q, want %q", m.To, m.Subject, tt.subject)
			}
			for _, s := range append(tt.body, "/tasks/"+itoa(task.ID)) {
				if !strings.Contains(m.Text, s) {
					t.Errorf("text lacks %q:\n%s", s, m.Text)
				}
			}
			if !strings.Contains(m.HTML, "/tasks/"+itoa(task.ID)) {
				t.Errorf("HTML lacks the link:\n%s", m.HTML)
			}
		})
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestTaskSettledQueuesAndWakes: the mail is queued, not sent (a dead mail server cannot hold
// the step), and the dispatcher is woken once.
func TestTaskSettledQueuesAndWakes(t *testing.T) {
	t.Parallel()
	w := newWorld(t, storetest.New(t), "ada@example.com")
	task := *w.task
	task.Status = taskstate.Completed
	woken := 0
	n := &notify.ScheduledRuns{Store: w.st, Config: config.Defaults, Queued: func() { woken++ }, Log: slog.New(slog.DiscardHandler)}
	n.TaskSettled(context.Background(), &task)
	if ms := queued(t, w.st, "ada@example.com"); len(ms) != 1 || woken != 1 {
		t.Fatalf("queued %d, woken %d", len(ms), woken)
	}
}

func TestScheduledRunID(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		v    any
		want int64
		ok   bool
	}{
		{int64(7), 7, true}, {7, 7, true}, {float64(7), 7, true}, {json.Number("7"), 7, true},
		{float64(7.5), 0, false}, {float64(-1), 0, false}, {int64(0), 0, false}, {"7", 0, false},
		{json.Number("x"), 0, false}, {nil, 0, false}, {float64(1 << 60), 0, false},
	} {
		got, ok := notify.ScheduledRunID(map[string]any{"scheduled_run_id": tt.v})
		if got != tt.want || ok != tt.ok {
			t.Errorf("%#v → %d %v, want %d %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

func TestLongAnswersAreShortened(t *testing.T) {
	t.Parallel()
	w := newWorld(t, storetest.New(t), "ada@example.com")
	task := *w.task
	task.Status, task.Answer = taskstate.Completed, ptr(strings.Repeat("é", 10000))
	(&notify.ScheduledRuns{Store: w.st, Config: config.Defaults}).TaskSettled(context.Background(), &task)
	msgs := queued(t, w.st, "ada@example.com")
	if len(msgs) != 1 || strings.Count(msgs[0].Text, "é") > 4000 || !strings.Contains(msgs[0].Text, "…") {
		t.Fatalf("long answer: %d messages", len(msgs))
	}
}
