package taskstate

import "slices"

// Action names what moves a task from one status to another. Its string is the "action"
// attribute of the "task transition" log line.
type Action string

// The actions of the state machine. Each has one Rule in Rules.
const (
	Create      Action = "create"       // a new task (POST /tasks, a chat, a sub-agent, a scheduled run)
	Claim       Action = "claim"        // a worker takes a QUEUED task
	ClaimRetry  Action = "claim_retry"  // a worker takes a FAILED task whose automatic retry is due
	Tick        Action = "tick"         // a client-mode worker takes a QUEUED task (POST /tasks/{id}/tick)
	Step        Action = "step"         // one step of the agent loop ends
	HandBack    Action = "hand_back"    // a stopping or failing worker returns its task
	Reap        Action = "reap"         // housekeeping takes back a task whose lease expired
	Approve     Action = "approve"      // every pending tool call decided
	Reject      Action = "reject"       // the pending batch rejected with a reason
	Answer      Action = "answer"       // every pending question batch answered
	Abort       Action = "abort"        // abort, abort-sub-agent and its cascade to waiting ancestors
	Continue    Action = "continue"     // a follow-up prompt on a finished task
	FollowUp    Action = "follow_up"    // a follow-up message joining a QUEUED chat (per-agent API)
	Retry       Action = "retry"        // POST /tasks/{id}/retry
	CancelRetry Action = "cancel_retry" // DELETE /tasks/{id}/retry-chain
	Resume      Action = "resume"       // every sub-agent of a waiting parent settled
	// Expire is an approval timeout deciding the calls still pending (issue 26): the service
	// rejects them (QUEUED, as Reject) or aborts the task (the agent's approval_timeout_action).
	Expire Action = "expire"
	// ScheduleRetry sets a FAILED task's automatic retry: the status stays, the status event
	// says when the retry runs.
	ScheduleRetry Action = "schedule_retry"
)

// Effect is a change of the task's columns that an action makes besides its status.
type Effect uint

const (
	// ClearError drops the error code and message.
	ClearError Effect = 1 << iota
	// ClearAnswer drops the final answer (a follow-up turn writes a new one).
	ClearAnswer
	// CountRetry adds one to retry_count.
	CountRetry
	// KeepRetry keeps a pending automatic retry (next_retry_at); every other action drops it.
	KeepRetry
)

// Rule is what an action may do: the statuses it may leave, those it may enter, its effects,
// and the words of its refusal ("cannot <Verb> a task that is <status>").
type Rule struct {
	From    []string
	To      []string
	Effects Effect
	Verb    string
}

// Rules is the task state machine: the one table every status change is checked against (the
// store's writer refuses a change the table does not allow). Besides each rule's effects,
// every transition drops the lease when it leaves RUNNING (LeavesLease), and sets finished_at
// when it enters a Finished status and clears it otherwise. Conditions that depend on more
// than the status (the agent allows follow-ups, a retry is pending or due, every call is
// decided) are checked by the caller named in the rule's comment. Callers must not modify it.
var Rules = map[Action]Rule{
	Create: {To: []string{Queued}, Verb: "create"},
	// store.ClaimQueued; the fair order across users is the store's.
	Claim: {From: []string{Queued}, To: []string{Running}, Verb: "claim"},
	// store.ClaimQueued and store.AcquireTick: only once next_retry_at has passed.
	ClaimRetry: {From: []string{Failed}, To: []string{Running}, Effects: ClearError | CountRetry, Verb: "claim"},
	// store.AcquireTick (client-worker mode): "non-terminal, not quiescent". A RUNNING task
	// whose lease lapsed is leased again without a status change.
	Tick: {From: []string{Queued, Running}, To: []string{Running}, Verb: "tick"},
	// store.FinishStep, store.FinishTurn: the loop picks the outcome (agentloop).
	Step: {From: []string{Running}, To: []string{Completed, PendingApproval, AwaitingInput, AwaitingSubAgents, Failed, Aborted}, Verb: "finish a step of"},
	// store.HandBack: FAILED (ORPHANED) past MaxRecoveries failed steps in a row.
	HandBack: {From: []string{Running}, To: []string{Queued, Failed}, Verb: "hand back"},
	// store.ReapStale, store.ReapDisconnected: FAILED past the recoveries allowed.
	Reap: {From: []string{Running}, To: []string{Queued, Failed}, Verb: "reap"},
	// store.DecideToolCallsBy: QUEUED once no call is left pending.
	Approve: {From: []string{PendingApproval}, To: []string{Queued}, Verb: "approve"},
	// store.RejectToolCallsBy.
	Reject: {From: []string{PendingApproval}, To: []string{Queued}, Verb: "reject"},
	// store.AnswerQuestions: QUEUED once no batch is left unanswered.
	Answer: {From: []string{AwaitingInput}, To: []string{Queued}, Verb: "answer"},
	// task.Service.AbortTask, store.AbortTaskChain (ancestors: from AWAITING_SUB_AGENTS only).
	Abort: {From: Abortable, To: []string{Aborted}, Verb: "abort"},
	// task.Service.ContinueTask: COMPLETED only when the agent allows follow-ups.
	Continue: {From: []string{Completed, Failed, Aborted}, To: []string{Queued}, Effects: ClearError | ClearAnswer, Verb: "continue"},
	// task.Service.ContinueTask with Queued (per-agent API follow-ups).
	FollowUp: {From: []string{Queued}, To: []string{Queued}, Verb: "continue"},
	Retry:    {From: []string{Failed}, To: []string{Queued}, Effects: ClearError | CountRetry, Verb: "retry"},
	// task.Service.CancelRetryChain: only while a retry is pending.
	CancelRetry: {From: []string{Failed}, To: []string{Cancelled}, Verb: "cancel the retry chain of"},
	// store.ExpireToolCalls: only while the calls it names are still pending; housekeeping.
	Expire: {From: []string{PendingApproval}, To: []string{Queued, Aborted}, Verb: "expire the approvals of"},
	// store.ResumeWhenChildrenSettled: once no child is unsettled.
	Resume: {From: []string{AwaitingSubAgents}, To: []string{Queued}, Verb: "resume"},
	// task.Service.ScheduleRetry: transient code, retries left under the agent's max_retries.
	ScheduleRetry: {From: []string{Failed}, To: []string{Failed}, Effects: KeepRetry, Verb: "schedule a retry of"},
}

// Allows reports whether action may move a task from status from to status to ("" from for
// Create). An unknown action allows nothing.
func Allows(action Action, from, to string) bool {
	r, ok := Rules[action]
	if !ok || !slices.Contains(r.To, to) {
		return false
	}
	if from == "" {
		return len(r.From) == 0
	}
	return slices.Contains(r.From, from)
}

// Leaves reports whether action may be taken on a task in status from.
func Leaves(action Action, from string) bool {
	r, ok := Rules[action]
	return ok && slices.Contains(r.From, from)
}

// LeavesLease reports whether entering status to drops the worker's lease (every status but
// RUNNING).
func LeavesLease(to string) bool { return to != Running }

// IsFinished reports whether entering status ends a run (finished_at is set).
func IsFinished(status string) bool { return slices.Contains(Finished, status) }

// IsSettled reports whether a chat in status is settled (its callback fires on entering it).
func IsSettled(status string) bool { return slices.Contains(Settled, status) }
