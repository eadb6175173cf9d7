// Package notify sends the email notifications of finished work. ScheduledRuns mails the owner of
// a task started by a scheduled run when that task reaches COMPLETED or FAILED
// (notifications_email_enabled, default true). Mails are queued in the durable mail outbox
// (store.EnqueueMail) and sent by the mail dispatcher (internal/mailqueue), so a slow or dead
// mail server never holds the worker that finished the task.
package notify

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/agentsvc/svc/internal/config"
	"github.com/agentsvc/svc/internal/mail"
	"github.com/agentsvc/svc/internal/taskstate"
	"github.com/agentsvc/svc/store"
)

// lookupTimeout bounds the reads and the enqueue of one notification.
const lookupTimeout = 30 * time.Second

// ScheduledRuns mails scheduled-run outcomes. Store and Config are required.
type ScheduledRuns struct {
	Store  *store.Store
	Config func() *config.Config // read at each message: an administrator's change applies at once
	// Queued is told after a mail was queued (the mail dispatcher's Notify); nil: the
	// dispatcher's poll finds it.
	Queued func()
	Log    *slog.Logger
}

// TaskSettled is told a task after the step that moved it (the loop's publish hook). When the
// task came from a scheduled run and has just COMPLETED, or FAILED without an automatic retry
// pending, its owner gets one message: the run's name and the outcome in the subject, the answer
// or the error in the body, and a link to the task under the public base (app_url). The mail
// is queued in the outbox right after the step's transaction (not yet inside it: a crash
// between the two loses this one mail). Failures are logged, never returned: the task's state
// is already stored.
func (n *ScheduledRuns) TaskSettled(ctx context.Context, t *store.Task) {
	if !Due(t) {
		return
	}
	cfg := n.Config()
	if !cfg.NotificationsEmailEnabled {
		return
	}
	runID, _ := ScheduledRunID(t.Data)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
	defer cancel()
	u, err := n.Store.UserByID(ctx, t.UserID)
	if err != nil {
		n.log().Warn("scheduled run notification: owner", "task_id", t.ID, "err", err)
		return
	}
	var agentName, runName string
	if a, err := n.Store.Agent(ctx, t.AgentID, 0); err == nil {
		agentName = a.Name
	}
	if r, err := n.Store.ScheduledRun(ctx, t.AgentID, runID); err == nil {
		runName = r.Name // a run deleted meanwhile leaves the name out
	}
	failed, detail := t.Status == taskstate.Failed, ""
	switch {
	case failed && t.Error != nil:
		detail = t.Error.Message
		if t.Error.Code != "" {
			detail = t.Error.Code + ": " + detail
		}
	case !failed && t.Answer != nil:
		detail = *t.Answer
	}
	link := cfg.PublicBase() + "/tasks/" + strconv.FormatInt(t.ID, 10)
	msg := mail.ScheduledRunFinishedMessage(u.Email, agentName, runName, failed, detail, link)
	err = n.Store.EnqueueMail(ctx, store.NewMail{To: msg.To, Subject: msg.Subject, Text: msg.Text, HTML: msg.HTML,
		Kind: store.MailKindScheduledRun})
	if err != nil {
		n.log().Warn("scheduled run notification: queue mail", "task_id", t.ID, "user_id", u.ID, "err", err)
		return
	}
	if n.Queued != nil {
		n.Queued()
	}
}

func (n *ScheduledRuns) log() *slog.Logger {
	if n.Log != nil {
		return n.Log
	}
	return slog.Default()
}

// Due reports whether t is a scheduled run's task that has just finished for good: COMPLETED,
// or FAILED with no automatic retry scheduled (the retry's outcome is mailed instead).
func Due(t *store.Task) bool {
	if _, ok := ScheduledRunID(t.Data); !ok {
		return false
	}
	switch t.Status {
	case taskstate.Completed:
		return true
	case taskstate.Failed:
		return t.NextRetryAt == nil
	}
	return false
}

// ScheduledRunID reads data.scheduled_run_id, set when a scheduled run starts a task. The value
// is a positive whole number, as stored (int64) or decoded from JSON (float64, json.Number).
func ScheduledRunID(data map[string]any) (int64, bool) {
	var id int64
	switch v := data["scheduled_run_id"].(type) {
	case int64:
		id = v
	case int:
		id = int64(v)
	case float64:
		if v != math.Trunc(v) || v < 1 || v > 1<<53 {
			return 0, false
		}
		id = int64(v)
	case json.Number:
		i, err := v.Int64()
		if err != nil {
			return 0, false
		}
		id = i
	default:
		return 0, false
	}
	return id, id > 0
}
