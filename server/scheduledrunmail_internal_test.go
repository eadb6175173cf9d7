package server

import (
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/store"
)

// TestScheduledRunMail: the mail names the run and the outcome in the subject, carries the
// answer or the error and a link to the task under the public base; a deleted run leaves its
// name out; notifications_email_enabled off means no mail; long answers are shortened.
func TestScheduledRunMail(t *testing.T) {
	t.Parallel()
	cfg := config.Defaults()
	cfg.AppURL = "https://svc.example/app"
	mailOf := scheduledRunMail(func() *config.Config { return cfg })
	for _, tt := range []struct {
		name    string
		o       store.ScheduledRunOutcome
		subject string
		body    []string
	}{
		{"completed", store.ScheduledRunOutcome{TaskID: 42, To: "ada@example.com", AgentName: "Reporter", RunName: "Morning digest", Detail: "All quiet overnight."},
			"Scheduled run \u201cMorning digest\u201d completed",
			[]string{"\u201cMorning digest\u201d of agent \u201cReporter\u201d has completed", "Answer: All quiet overnight.", "https://svc.example/app/tasks/42"}},
		{"failed", store.ScheduledRunOutcome{TaskID: 43, To: "ada@example.com", AgentName: "Reporter", RunName: "Morning digest", Failed: true, Detail: "LLM_TIMEOUT: the model did not answer"},
			"Scheduled run \u201cMorning digest\u201d failed", []string{"has failed", "Error: LLM_TIMEOUT: the model did not answer"}},
		{"run deleted meanwhile", store.ScheduledRunOutcome{TaskID: 44, To: "ada@example.com", AgentName: "Reporter"},
			"Scheduled run completed", []string{"A scheduled run of agent \u201cReporter\u201d has completed."}},
	} {
		m, due := mailOf(tt.o)
		if !due || m.Kind != store.MailKindScheduledRun || m.To != tt.o.To || m.Subject != tt.subject {
			t.Errorf("%s: due %v, %+v", tt.name, due, m)
			continue
		}
		for _, s := range tt.body {
			if !strings.Contains(m.Text, s) {
				t.Errorf("%s: text lacks %q:\n%s", tt.name, s, m.Text)
			}
		}
		if !strings.Contains(m.HTML, "/tasks/") {
			t.Errorf("%s: HTML lacks the link", tt.name)
		}
	}
	long, _ := mailOf(store.ScheduledRunOutcome{TaskID: 1, To: "ada@example.com", Detail: strings.Repeat("é", 10000)})
	if strings.Count(long.Text, "é") > 4000 || !strings.Contains(long.Text, "…") {
		t.Fatal("a long answer is not shortened")
	}
	cfg.NotificationsEmailEnabled = false
	if _, due := mailOf(store.ScheduledRunOutcome{TaskID: 1, To: "ada@example.com"}); due {
		t.Fatal("a mail with notifications_email_enabled off")
	}
}
