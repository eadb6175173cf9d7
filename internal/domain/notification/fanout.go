package notification

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/domain/approval"
	"github.com/agentsvc/svc/internal/domain/mail"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/vocab/notifykind"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/internal/vocab/text"
	"github.com/agentsvc/svc/store"
)

// transition is what notice n announces, in the terms notifykind's rules read.
func transition(n *store.TaskNotice) notifykind.Transition {
	st := &n.Status
	t := notifykind.Transition{To: st.Status, RetryQueued: st.NextRetryAt != nil, Retrying: st.Retrying,
		Scheduled: n.ScheduledRunID != 0, AgentAPI: n.Source == store.TaskSourceAgentAPI}
	if st.Error != nil {
		t.ErrorCode = st.Error.Code
	}
	return t
}

// Text is the title and body of kind about notice n's task. Only the task's owner may read
// the task: for anyone else (owner false: a subscriber) the text names the agent, never the
// task's prompt or error. The prompt is shown as text: its first 80 characters on one line.
func Text(kind string, n *store.TaskNotice, owner bool) (title, body string) {
	agent := n.AgentName
	task := "Task \u201c" + text.Clip(strings.Join(strings.Fields(n.Prompt), " "), 80) + "\u201d"
	why, answer := "", "your answer"
	if n.Status.Error != nil && n.Status.Error.Message != "" {
		why = ": " + text.Clip(n.Status.Error.Message, 200)
	}
	if !owner {
		task, why, answer = "A task of "+agent, "", "an answer"
		if kind == notifykind.ScheduledRunCompleted {
			task = "A scheduled run of " + agent
		}
	}
	switch kind {
	case notifykind.TaskCompleted:
		return agent + " finished", task + " completed."
	case notifykind.ScheduledRunCompleted:
		return agent + ": scheduled run finished", task + " completed."
	case notifykind.TaskFailed:
		return agent + " failed", task + " failed" + why + "."
	case notifykind.TaskOrphaned:
		return agent + " lost its worker", task + " failed" + why + "."
	case notifykind.PendingApproval:
		return agent + " needs approval", task + " waits for approval of its tool calls."
	case notifykind.AwaitingInput:
		return agent + " has a question", task + " waits for " + answer + "."
	case notifykind.TaskRetryQueued:
		return agent + " will retry", task + " failed" + why + " and is retried automatically."
	}
	return agent, task
}

// Decide is who is told what about notice n: a notification of its kind for the task's owner
// when the kind is one of its owner defaults (notifykind) or their own subscription covers it, for the agent's
// other approvers (approvers) when it asks for a decision or an answer, and for every
// other user whose subscription to the task's agent or its principal covers the kind and who
// can still see that principal (a subscription to a target that became invisible stops
// delivering); a mail with each notification whose recipient subscribed by email; the mail of
// a scheduled run that finished for good (COMPLETED, or FAILED with no automatic retry to come)
// when notifications_email_enabled is on; and the earlier notifications of the task that asked
// for what is now done (a pause the task left) settled, for everyone. A notification carries
// only what its recipient may read: the task (its id, prompt and error) only for its owner.
// The subscriptions are the notice's own (n.Subscriptions, read with its claim's batch).
// Errors: the store's.
func (s *Service) Decide(ctx context.Context, n *store.TaskNotice) (store.NoticeDecision, error) {
	var d store.NoticeDecision
	tr := transition(n)
	for _, kind := range notifykind.Asking {
		if kind != tr.Kind() {
			d.Settled = append(d.Settled, kind)
		}
	}
	if kind := tr.Kind(); kind != "" {
		var recipients []int64
		if slices.Contains(tr.OwnerDefaults(), kind) {
			recipients = append(recipients, n.UserID)
		}
		if slices.Contains(notifykind.Asking, kind) {
			approvers, err := s.approvers(ctx, n)
			if err != nil {
				return d, err
			}
			for _, uid := range approvers {
				if !slices.Contains(recipients, uid) {
					recipients = append(recipients, uid)
				}
			}
		}
		email := map[int64]bool{}
		for _, sub := range n.Subscriptions {
			if len(sub.Kinds) > 0 && !slices.Contains(sub.Kinds, kind) {
				continue
			}
			if sub.UserID != n.UserID {
				visible, err := s.canSee(ctx, sub.UserID, n.PrincipalID)
				if err != nil {
					return d, err
				}
				if !visible {
					continue
				}
			}
			if !slices.Contains(recipients, sub.UserID) {
				recipients = append(recipients, sub.UserID)
			}
			email[sub.UserID] = email[sub.UserID] || sub.Email
		}
		for _, uid := range recipients {
			owner := uid == n.UserID
			title, body := Text(kind, n, owner)
			agentID := n.AgentID
			x := store.Notification{UserID: uid, Kind: kind, Title: title, Body: body, AgentID: &agentID}
			if owner {
				taskID := n.TaskID
				x.TaskID = &taskID
			}
			d.Notifications = append(d.Notifications, x)
			if email[uid] {
				to := n.OwnerEmail
				if !owner {
					u, err := s.store.UserByID(ctx, uid)
					if err != nil {
						return d, err
					}
					to = u.Email
				}
				d.Mails = append(d.Mails, store.NewMail{To: to, Subject: title, Text: body + "\n", Kind: store.MailKindNotification})
			}
		}
	}
	if m, due := s.scheduledRunMail(n); due {
		d.Mails = append(d.Mails, m)
	}
	return d, nil
}

// approvers are the users besides the task's owner who may decide what notice n's task waits
// for (approval.MayDecide over the agent's approvers: named users, and the principal's
// managers when the agent names them), ascending. A task or agent gone meanwhile has none.
func (s *Service) approvers(ctx context.Context, n *store.TaskNotice) ([]int64, error) {
	t, err := s.store.Task(ctx, n.TaskID)
	if errors.Is(err, svcerr.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	a, err := s.store.Agent(ctx, t.AgentID, 0)
	if errors.Is(err, svcerr.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	candidates := slices.Clone(a.Approvers.Users)
	if a.Approvers.Managers {
		ms, err := s.store.PrincipalManagers(ctx, a.PrincipalID)
		if err != nil {
			return nil, err
		}
		candidates = append(candidates, ms...)
	}
	slices.Sort(candidates)
	var out []int64
	for _, uid := range slices.Compact(candidates) {
		if uid == t.UserID {
			continue
		}
		u, err := s.store.UserByID(ctx, uid)
		if errors.Is(err, svcerr.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sc, err := access.For(ctx, s.store, u)
		if err != nil {
			return nil, err
		}
		if approval.MayDecide(sc, a, t) {
			out = append(out, uid)
		}
	}
	return out, nil
}

// canSee reports whether user uid may see the resources of principal p (access.Scope.CanSee).
func (s *Service) canSee(ctx context.Context, uid, p int64) (bool, error) {
	u, err := s.store.UserByID(ctx, uid)
	if err != nil {
		return false, fmt.Errorf("subscriber %d: %w", uid, err)
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return false, err
	}
	return sc.CanSee(p), nil
}

// scheduledRunMail is the mail that tells the owner of a task started by a scheduled run that
// it reached COMPLETED, or FAILED with no automatic retry to come (notifications_email_enabled,
// default true); due is false when none is owed. It goes through the durable mail outbox with
// the notice's fan-out, so a crash never loses it, a reaped task is mailed like a finished step,
// and a slow or dead mail server never holds the worker that finished the task. The message
// names the run and the outcome in the subject, carries the answer or the error and a link to
// the task under the public base (app_url); the configuration is read at each message.
func (s *Service) scheduledRunMail(n *store.TaskNotice) (m store.NewMail, due bool) {
	st := &n.Status
	if !transition(n).RunMailed() || s.config == nil {
		return m, false
	}
	cfg := s.config()
	if !cfg.NotificationsEmailEnabled {
		return m, false
	}
	failed, detail := st.Status == taskstate.Failed, ""
	if failed && st.Error != nil {
		detail = st.Error.Code + ": " + st.Error.Message
	} else if st.Answer != nil {
		detail = *st.Answer
	}
	return ScheduledRunMail(cfg, n.TaskID, n.OwnerEmail, n.AgentName, n.ScheduledRunName, failed, detail), true
}

// ScheduledRunMail builds the mail of a finished scheduled run's task for its owner at to
// (runName "" when the run was deleted meanwhile; detail the answer, or "CODE: message").
func ScheduledRunMail(cfg *config.Config, taskID int64, to, agentName, runName string, failed bool, detail string) store.NewMail {
	link := cfg.PublicBase() + "/tasks/" + strconv.FormatInt(taskID, 10)
	msg := mail.ScheduledRunFinishedMessage(to, agentName, runName, failed, detail, link)
	return store.NewMail{To: msg.To, Subject: msg.Subject, Text: msg.Text, HTML: msg.HTML, Kind: store.MailKindScheduledRun}
}

// fanOut decides notice n and writes the decision with the notice's removal, then pushes the
// notifications it created. A failure is recorded on the notice (retried with backoff).
func (s *Service) fanOut(ctx context.Context, n store.TaskNotice) {
	d, err := s.Decide(ctx, &n)
	var ns []store.Notification
	if err == nil {
		ns, err = s.store.FinishTaskNotice(ctx, n, d)
	}
	if errors.Is(err, svcerr.ErrInvalidState) {
		s.log.InfoContext(ctx, "notification fan-out: the notice's lease was taken over", "notice_id", n.ID)
		return
	}
	if err != nil {
		s.log.ErrorContext(ctx, "notification fan-out", "task_id", n.TaskID, "notice_id", n.ID, "err", err)
		if ferr := s.store.FailTaskNotice(ctx, n, err.Error()); ferr != nil {
			s.log.WarnContext(ctx, "record a failed notification fan-out", "notice_id", n.ID, "err", ferr)
		}
		return
	}
	s.Created(ctx, ns)
}
