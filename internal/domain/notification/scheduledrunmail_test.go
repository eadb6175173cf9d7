package notification

import (
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// TestScheduledRunMail: the mail names the run and the outcome in the subject, carries the
// answer or the error and a link to the task under the public base; a deleted run leaves its
// name out; none for a failure that is retried, a task no run started, a pause, or with
// notifications_email_enabled off; long answers are shortened.
func TestScheduledRunMail(t *testing.T) {
	t.Parallel()
	cfg := config.Defaults()
	cfg.AppURL = "https://svc.example/app"
	s := &Service{config: func() *config.Config { return cfg }}
	answer := func(a string) *string { return &a }
	notice := func(taskID int64, run string, st store.StatusEvent) *store.TaskNotice {
		return &store.TaskNotice{TaskID: taskID, OwnerEmail: "ada@example.com", AgentName: "Reporter",
			ScheduledRunID: 7, ScheduledRunName: run, Status: st}
	}
	for _, tt := range []struct {
		name    string
		n       *store.TaskNotice
		subject string
		body    []string
	}{
		{"completed", notice(42, "Morning digest", store.StatusEvent{Status: taskstate.Completed, Answer: answer("All quiet overnight.")}),
			"Scheduled run \u201cMorning digest\u201d completed",
			[]string{"\u201cMorning digest\u201d of agent \u201cReporter\u201d has completed", "Answer: All quiet overnight.", "https://svc.example/app/tasks/42"}},
		{"failed", notice(43, "Morning digest", store.StatusEvent{Status: taskstate.Failed,
			Error: &store.TaskError{Code: "LLM_TIMEOUT", Message: "the model did not answer"}}),
			"Scheduled run \u201cMorning digest\u201d failed", []string{"has failed", "Error: LLM_TIMEOUT: the model did not answer"}},
		{"run deleted meanwhile", notice(44, "", store.StatusEvent{Status: taskstate.Completed}),
			"Scheduled run completed", []string{"A scheduled run of agent \u201cReporter\u201d has completed."}},
	} {
		m, due := s.scheduledRunMail(tt.n)
		if !due || m.Kind != store.MailKindScheduledRun || m.To != "ada@example.com" || m.Subject != tt.subject {
			t.Errorf("%s: due %v, %+v", tt.name, due, m)
			continue
		}
		for _, b := range tt.body {
			if !strings.Contains(m.Text, b) {
				t.Errorf("%s: text lacks %q:\n%s", tt.name, b, m.Text)
			}
		}
		if !strings.Contains(m.HTML, "/tasks/") {
			t.Errorf("%s: HTML lacks the link", tt.name)
		}
	}
	long, _ := s.scheduledRunMail(notice(1, "", store.StatusEvent{Status: taskstate.Completed, Answer: answer(strings.Repeat("é", 10000))}))
	if strings.Count(long.Text, "é") > 4000 || !strings.Contains(long.Text, "…") {
		t.Fatal("a long answer is not shortened")
	}
	next := time.Now()
	for name, n := range map[string]*store.TaskNotice{
		"retrying":       notice(1, "r", store.StatusEvent{Status: taskstate.Failed, Retrying: true, Error: &store.TaskError{Code: "LLM_TIMEOUT"}}),
		"retry queued":   notice(1, "r", store.StatusEvent{Status: taskstate.Failed, NextRetryAt: &next}),
		"paused":         notice(1, "r", store.StatusEvent{Status: taskstate.PendingApproval}),
		"not from a run": {TaskID: 1, OwnerEmail: "ada@example.com", Status: store.StatusEvent{Status: taskstate.Completed}},
	} {
		if m, due := s.scheduledRunMail(n); due {
			t.Errorf("%s: mailed %+v", name, m)
		}
	}
	cfg.NotificationsEmailEnabled = false
	if _, due := s.scheduledRunMail(notice(1, "", store.StatusEvent{Status: taskstate.Completed})); due {
		t.Fatal("a mail with notifications_email_enabled off")
	}
}
