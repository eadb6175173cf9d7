// Package notifykind names the notifications a task's transition announces and says which of
// them reach someone without a subscription: the rules the status writer (store: whether a
// transition needs a notice at all) and the notification service (who is told what) share.
package notifykind

import (
	"slices"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// The kinds (docs/design.md "Scheduled runs, prompt templates, notifications").
const (
	TaskCompleted         = "task_completed"
	TaskFailed            = "task_failed"
	PendingApproval       = "pending_approval"
	AwaitingInput         = "awaiting_input"
	ScheduledRunCompleted = "scheduled_run_completed"
	TaskOrphaned          = "task_orphaned"
	TaskRetryQueued       = "task_retry_queued"
)

// All lists every kind.
var All = []string{TaskCompleted, TaskFailed, PendingApproval, AwaitingInput, ScheduledRunCompleted, TaskOrphaned, TaskRetryQueued}

// Asking are the kinds that ask for something (a decision, an answer): once the task left the
// pause, their unread notifications are settled.
var Asking = []string{AwaitingInput, PendingApproval}

// Transition is a top-level task's move that may notify someone, as its status event tells it.
type Transition struct {
	From, To    string // statuses; From "" when unknown (a notice decided later)
	ErrorCode   string // the error's code, "" for none
	RetryQueued bool   // FAILED with an automatic retry scheduled (next_retry_at)
	Retrying    bool   // FAILED with an automatic retry promised (StatusEvent.Retrying)
	Scheduled   bool   // a scheduled run started the task
	AgentAPI    bool   // the per-agent API started it
}

// Kind is the kind the transition announces ("" for none).
func (t Transition) Kind() string {
	switch t.To {
	case taskstate.Completed:
		if t.Scheduled {
			return ScheduledRunCompleted
		}
		return TaskCompleted
	case taskstate.Failed:
		if t.RetryQueued {
			return TaskRetryQueued
		}
		if t.ErrorCode == taskstate.CodeOrphaned {
			return TaskOrphaned
		}
		return TaskFailed
	case taskstate.PendingApproval:
		return PendingApproval
	case taskstate.AwaitingInput:
		return AwaitingInput
	}
	return ""
}

// OwnerDefaults are the kinds a task's owner is told without a subscription: what needs them
// — a decision, an answer — and the failure of a run nobody watches (a scheduled run's, a
// per-agent API chat's). Anything else (a completion, a retry) is opted into through a
// subscription, as the specification says of in-app notifications.
func (t Transition) OwnerDefaults() []string {
	kinds := []string{PendingApproval, AwaitingInput}
	if t.Scheduled || t.AgentAPI {
		kinds = append(kinds, TaskFailed, TaskOrphaned)
	}
	return kinds
}

// RunMailed reports whether the transition ends a scheduled run for good (COMPLETED, or
// FAILED with no automatic retry to come): its owner is mailed when
// notifications_email_enabled is on.
func (t Transition) RunMailed() bool {
	return t.Scheduled && !t.Retrying && !t.RetryQueued && (t.To == taskstate.Completed || t.To == taskstate.Failed)
}

// Unconditional reports whether deciding the transition may tell or settle something even
// when nobody subscribes to the task's agent or its principal and no earlier notification of
// the task waits: it leaves a pause (whose notifications it settles), the owner is told its
// kind by default, or it ends a scheduled run (mailed). The status writer leaves the notice
// of any other transition only when a subscription or an earlier notice or unread
// notification of the task exists.
func (t Transition) Unconditional() bool {
	return slices.Contains(taskstate.Paused, t.From) || slices.Contains(t.OwnerDefaults(), t.Kind()) || t.RunMailed()
}
