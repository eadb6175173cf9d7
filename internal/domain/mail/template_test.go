package mail_test

import (
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/domain/mail"
)

func TestTemplatesContainLinkAndRecipient(t *testing.T) {
	t.Parallel()
	const to, link = "ada@example.com", "https://svc.example/svc/auth/verify?selector=a1&verifier=b2"
	tests := []struct {
		name    string
		msg     mail.Message
		subject string
	}{
		{"verification", mail.VerificationMessage(to, "Ada", link), "Verify your email address"},
		{"password reset", mail.PasswordResetMessage(to, "Ada", link), "Reset your password"},
		{"email change", mail.EmailChangeMessage(to, "Ada", link), "Confirm your new email address"},
		{"scheduled run", mail.ScheduledRunCompletedMessage(to, "Researcher", "Nightly digest", link), "Scheduled run \u201cNightly digest\u201d completed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := tt.msg
			if m.To != to {
				t.Errorf("To = %q", m.To)
			}
			if m.Subject != tt.subject {
				t.Errorf("Subject = %q, want %q", m.Subject, tt.subject)
			}
			if !strings.Contains(m.Text, link) {
				t.Errorf("text lacks the link:\n%s", m.Text)
			}
			if !strings.Contains(m.HTML, `href="https://svc.example/svc/auth/verify?selector=a1&amp;verifier=b2"`) {
				t.Errorf("HTML lacks the link:\n%s", m.HTML)
			}
			if strings.Contains(m.Text, "<") {
				t.Errorf("text body contains markup:\n%s", m.Text)
			}
		})
	}
}

func TestTemplatesGreeting(t *testing.T) {
	t.Parallel()
	if m := mail.VerificationMessage("a@example.com", "Ada", "https://x.example/"); !strings.HasPrefix(m.Text, "Hello Ada,\n") {
		t.Errorf("text = %q", m.Text)
	}
	if m := mail.VerificationMessage("a@example.com", "  ", "https://x.example/"); !strings.HasPrefix(m.Text, "Hello,\n") {
		t.Errorf("text without a name = %q", m.Text)
	}
}

func TestTemplatesEscapeHTML(t *testing.T) {
	t.Parallel()
	const evil = `<script>alert("x")</script><b>Eve</b>`
	msgs := map[string]mail.Message{
		"verification":   mail.VerificationMessage("a@example.com", evil, "https://svc.example/v"),
		"password reset": mail.PasswordResetMessage("a@example.com", evil, "https://svc.example/r"),
		"email change":   mail.EmailChangeMessage("a@example.com", evil, "https://svc.example/c"),
		"scheduled run":  mail.ScheduledRunCompletedMessage("a@example.com", evil, evil, "https://svc.example/t"),
	}
	for name, m := range msgs {
		if strings.Contains(m.HTML, "<script>") || strings.Contains(m.HTML, "<b>Eve") {
			t.Errorf("%s: HTML contains unescaped markup:\n%s", name, m.HTML)
		}
		if !strings.Contains(m.HTML, "&lt;script&gt;") {
			t.Errorf("%s: HTML lacks the escaped name:\n%s", name, m.HTML)
		}
		if !strings.Contains(m.Text, evil) {
			t.Errorf("%s: plain text should keep the name verbatim:\n%s", name, m.Text)
		}
	}
}

func TestTemplatesNeutraliseDangerousLinks(t *testing.T) {
	t.Parallel()
	m := mail.PasswordResetMessage("a@example.com", "Ada", "javascript:alert(1)")
	if strings.Contains(m.HTML, `href="javascript:`) {
		t.Errorf("HTML keeps a javascript: href:\n%s", m.HTML)
	}
}

func TestScheduledRunNamesCannotBreakSubject(t *testing.T) {
	t.Parallel()
	m := mail.ScheduledRunCompletedMessage("a@example.com", "Agent\r\nBcc: x@example.com", "Run\nTwo", "https://svc.example/t/1")
	if strings.ContainsAny(m.Subject, "\r\n") {
		t.Errorf("subject contains a line break: %q", m.Subject)
	}
	if m.Subject != "Scheduled run \u201cRun Two\u201d completed" {
		t.Errorf("subject = %q", m.Subject)
	}
	long := strings.Repeat("x", 500)
	m = mail.ScheduledRunCompletedMessage("a@example.com", long, long, "https://svc.example/t/1")
	if len([]rune(m.Subject)) > 120 {
		t.Errorf("subject not shortened: %d runes", len([]rune(m.Subject)))
	}
	for _, tt := range []struct{ agent, run, want string }{
		{"", "", "A scheduled run has completed."},
		{"Bot", "", "A scheduled run of agent \u201cBot\u201d has completed."},
		{"", "Daily", "The scheduled run \u201cDaily\u201d has completed."},
	} {
		m := mail.ScheduledRunCompletedMessage("a@example.com", tt.agent, tt.run, "https://svc.example/t/1")
		if !strings.Contains(m.Text, tt.want) {
			t.Errorf("agent %q run %q: text lacks %q:\n%s", tt.agent, tt.run, tt.want, m.Text)
		}
	}
}

func TestTestMessage(t *testing.T) {
	t.Parallel()
	m := mail.TestMessage("admin@example.com")
	if m.To != "admin@example.com" || m.Subject == "" || m.Text == "" || m.HTML == "" {
		t.Errorf("incomplete test message: %+v", m)
	}
}
