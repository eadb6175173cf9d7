// Package notify writes the email of finished work: ScheduledRuns builds the mail that tells
// the owner of a task started by a scheduled run that it reached COMPLETED, or FAILED with no
// automatic retry to come (notifications_email_enabled, default true). The store queues it in
// the durable mail outbox in the transaction of the transition (store.OnScheduledRunFinished),
// so a crash never loses it, a reaped task is mailed like a finished step, and a slow or dead
// mail server never holds the worker that finished the task.
package notify

import (
	"strconv"

	"github.com/agentsvc/svc/internal/config"
	"github.com/agentsvc/svc/internal/mail"
	"github.com/agentsvc/svc/store"
)

// ScheduledRuns builds scheduled-run mails. Config is required.
type ScheduledRuns struct {
	Config func() *config.Config // read at each message: an administrator's change applies at once
}

// Mail is the message for outcome o: the run's name and the outcome in the subject, the answer
// or the error in the body, and a link to the task under the public base (app_url). It answers
// false when notifications_email_enabled is off.
func (n *ScheduledRuns) Mail(o store.ScheduledRunOutcome) (store.NewMail, bool) {
	cfg := n.Config()
	if !cfg.NotificationsEmailEnabled {
		return store.NewMail{}, false
	}
	link := cfg.PublicBase() + "/tasks/" + strconv.FormatInt(o.TaskID, 10)
	msg := mail.ScheduledRunFinishedMessage(o.To, o.AgentName, o.RunName, o.Failed, o.Detail, link)
	return store.NewMail{To: msg.To, Subject: msg.Subject, Text: msg.Text, HTML: msg.HTML, Kind: store.MailKindScheduledRun}, true
}
