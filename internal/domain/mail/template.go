package mail

import (
	"bytes"
	"html/template"
	"strings"
	"unicode/utf8"
)

// maxNameRunes caps user-controlled names placed in a subject or greeting.
const maxNameRunes = 80

// content is the shared shape of every message the service sends: a greeting, paragraphs, an
// optional call-to-action link, and closing paragraphs. Both bodies are rendered from it so
// the text and HTML versions always say the same thing.
type content struct {
	Subject   string
	Greeting  string
	Before    []string
	LinkLabel string
	Link      string
	After     []string
}

// htmlLayout renders content. html/template escapes every value by context, so user-controlled
// names cannot inject markup and a link with a dangerous scheme (javascript:) is neutralised.
var htmlLayout = template.Must(template.New("mail").Parse(`<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>{{.Subject}}</title></head>
<body style="font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; font-size: 15px; line-height: 1.5; color: #222;">
<p>{{.Greeting}}</p>
{{- range .Before}}
<p>{{.}}</p>
{{- end}}
{{- if .Link}}
<p><a href="{{.Link}}" style="display: inline-block; padding: 10px 18px; background: #2563eb; color: #fff; text-decoration: none; border-radius: 4px;">{{.LinkLabel}}</a></p>
<p style="font-size: 13px; color: #555;">If the button does not work, copy this address into your browser:<br><a href="{{.Link}}">{{.Link}}</a></p>
{{- end}}
{{- range .After}}
<p>{{.}}</p>
{{- end}}
</body>
</html>
`))

// message renders c into a Message for to.
func (c content) message(to string) Message {
	var text strings.Builder
	text.WriteString(c.Greeting + "\n\n")
	for _, p := range c.Before {
		text.WriteString(p + "\n\n")
	}
	if c.Link != "" {
		text.WriteString(c.LinkLabel + ":\n" + c.Link + "\n\n")
	}
	for _, p := range c.After {
		text.WriteString(p + "\n\n")
	}

	var html bytes.Buffer
	if err := htmlLayout.Execute(&html, c); err != nil {
		// The template is fixed and its data are plain strings; should execution ever fail,
		// the plain-text body alone still carries the whole message.
		html.Reset()
	}
	return Message{
		To:      to,
		Subject: c.Subject,
		Text:    strings.TrimRight(text.String(), "\n") + "\n",
		HTML:    html.String(),
	}
}

// cleanName makes a user-controlled name fit for a subject or greeting: control characters
// become spaces, surrounding space is trimmed, and long names are shortened.
func cleanName(s string) string {
	s = strings.Join(strings.Fields(stripControl(s)), " ")
	if utf8.RuneCountInString(s) > maxNameRunes {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:maxNameRunes-1])) + "…"
	}
	return s
}

func greeting(displayName string) string {
	if name := cleanName(displayName); name != "" {
		return "Hello " + name + ","
	}
	return "Hello,"
}

// VerificationMessage asks the owner of a new account to confirm their address by opening
// link (single use, expiring).
func VerificationMessage(to, displayName, link string) Message {
	return content{
		Subject:   "Verify your email address",
		Greeting:  greeting(displayName),
		Before:    []string{"Please confirm that this is your email address by opening the link below."},
		LinkLabel: "Verify email address",
		Link:      link,
		After: []string{
			"The link works once and expires after a while.",
			"If you did not create an account, you can ignore this message.",
		},
	}.message(to)
}

// PasswordResetMessage sends the password-reset link (single use, expiring).
func PasswordResetMessage(to, displayName, link string) Message {
	return content{
		Subject:   "Reset your password",
		Greeting:  greeting(displayName),
		Before:    []string{"We received a request to reset the password of your account. Open the link below to choose a new password."},
		LinkLabel: "Reset password",
		Link:      link,
		After: []string{
			"The link works once and expires after a while.",
			"If you did not ask for this, ignore this message: your password stays unchanged.",
		},
	}.message(to)
}

// EmailChangeMessage is sent to the new address of an account and asks its owner to confirm
// the change by opening link (single use, expiring).
func EmailChangeMessage(to, displayName, link string) Message {
	return content{
		Subject:   "Confirm your new email address",
		Greeting:  greeting(displayName),
		Before:    []string{"Please confirm that you want to use this address for your account by opening the link below."},
		LinkLabel: "Confirm new email address",
		Link:      link,
		After: []string{
			"The link works once and expires after a while.",
			"If you did not request this change, ignore this message: your account keeps its current address.",
		},
	}.message(to)
}

// TestMessage is the message sent by the administrator's "send a test" mail operation.
func TestMessage(to string) Message {
	return content{
		Subject:  "Test message from your agent service",
		Greeting: "Hello,",
		Before: []string{
			"This is a test message sent from the mail settings of your agent service.",
			"If you can read it, outgoing mail is configured correctly.",
		},
	}.message(to)
}

// ScheduledRunCompletedMessage notifies a user that a scheduled run of an agent has finished;
// taskURL points at the task it produced.
func ScheduledRunCompletedMessage(to, agentName, runName, taskURL string) Message {
	agent, run := cleanName(agentName), cleanName(runName)
	subject := "Scheduled run completed"
	var what string
	switch {
	case run != "" && agent != "":
		subject = "Scheduled run \u201c" + run + "\u201d completed"
		what = "The scheduled run \u201c" + run + "\u201d of agent \u201c" + agent + "\u201d has completed."
	case run != "":
		subject = "Scheduled run \u201c" + run + "\u201d completed"
		what = "The scheduled run \u201c" + run + "\u201d has completed."
	case agent != "":
		what = "A scheduled run of agent \u201c" + agent + "\u201d has completed."
	default:
		what = "A scheduled run has completed."
	}
	return content{
		Subject:   subject,
		Greeting:  "Hello,",
		Before:    []string{what},
		LinkLabel: "View the task",
		Link:      taskURL,
		After:     []string{"You receive this message because email notifications are enabled for scheduled runs."},
	}.message(to)
}

// ScheduledRunFinishedMessage notifies a user that the task of a scheduled run has finished:
// failed says whether it FAILED (otherwise it COMPLETED), detail is the task's answer or error
// (shortened when long), taskURL points at the task.
func ScheduledRunFinishedMessage(to, agentName, runName string, failed bool, detail, taskURL string) Message {
	agent, run := cleanName(agentName), cleanName(runName)
	outcome, label := "completed", "Answer:"
	if failed {
		outcome, label = "failed", "Error:"
	}
	subject := "Scheduled run " + outcome
	if run != "" {
		subject = "Scheduled run \u201c" + run + "\u201d " + outcome
	}
	what := "A scheduled run has " + outcome + "."
	switch {
	case run != "" && agent != "":
		what = "The scheduled run \u201c" + run + "\u201d of agent \u201c" + agent + "\u201d has " + outcome + "."
	case run != "":
		what = "The scheduled run \u201c" + run + "\u201d has " + outcome + "."
	case agent != "":
		what = "A scheduled run of agent \u201c" + agent + "\u201d has " + outcome + "."
	}
	before := []string{what}
	if d := shorten(stripControlKeepLines(detail), maxDetailRunes); d != "" {
		before = append(before, label+" "+d)
	}
	return content{
		Subject:   subject,
		Greeting:  "Hello,",
		Before:    before,
		LinkLabel: "View the task",
		Link:      taskURL,
		After:     []string{"You receive this message because email notifications are enabled for scheduled runs."},
	}.message(to)
}

// maxDetailRunes caps the answer or error quoted in a notification.
const maxDetailRunes = 4000

func shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// stripControlKeepLines removes control characters except line breaks and tabs.
func stripControlKeepLines(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
}
