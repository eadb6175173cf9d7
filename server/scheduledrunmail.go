package server

import (
	"strconv"

	"github.com/agentsvc/svc/internal/domain/mail"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/store"
)

// scheduledRunMail builds the mail that tells the owner of a task started by a scheduled run
// that it reached COMPLETED, or FAILED with no automatic retry to come
// (notifications_email_enabled, default true). The store queues it in the durable mail outbox
// in the transaction of the transition (store.OnScheduledRunFinished), so a crash never loses
// it, a reaped task is mailed like a finished step, and a slow or dead mail server never holds
// the worker that finished the task.
//
// The message names the run and the outcome in the subject, carries the answer or the error and
// a link to the task under the public base (app_url). The configuration is read at each message,
// so an administrator's change applies at once; the answer is false when
// notifications_email_enabled is off.
func scheduledRunMail(current func() *config.Config) func(store.ScheduledRunOutcome) (store.NewMail, bool) {
	return func(o store.ScheduledRunOutcome) (store.NewMail, bool) {
		cfg := current()
		if !cfg.NotificationsEmailEnabled {
			return store.NewMail{}, false
		}
		link := cfg.PublicBase() + "/tasks/" + strconv.FormatInt(o.TaskID, 10)
		msg := mail.ScheduledRunFinishedMessage(o.To, o.AgentName, o.RunName, o.Failed, o.Detail, link)
		return store.NewMail{To: msg.To, Subject: msg.Subject, Text: msg.Text, HTML: msg.HTML, Kind: store.MailKindScheduledRun}, true
	}
}
