// Package taskstate is the one home of the task rules of the specification (docs/design.md
// "Task states"; document 2 for the chat callback): the task statuses, the sets of statuses the
// rules name, the state machine (Rules, machine.go: what each action may leave, enter and
// change), the error codes a failed task may carry and which of them are transient. The store's
// one writer of the status applies Rules; the task service, the agent loop and the model
// drivers read the rest from here, so a rule is written once. It imports nothing of the project.
package taskstate

import "slices"

// Task statuses.
const (
	Queued            = "QUEUED"
	Running           = "RUNNING"
	PendingApproval   = "PENDING_APPROVAL"
	AwaitingInput     = "AWAITING_INPUT"
	AwaitingSubAgents = "AWAITING_SUB_AGENTS"
	Aborted           = "ABORTED"
	Completed         = "COMPLETED"
	Failed            = "FAILED"
	Cancelled         = "CANCELLED"
)

// Sets of statuses named by the rules. Callers must not modify them.
var (
	// Terminal statuses refuse every action but continue (FAILED, COMPLETED), retry and delete.
	Terminal = []string{Completed, Failed, Cancelled}
	// Paused statuses wait for a caller (resume, approve, reject, answer).
	Paused = []string{Aborted, PendingApproval, AwaitingInput}
	// Abortable statuses: abort and abort-sub-agent apply.
	Abortable = []string{Queued, Running, AwaitingSubAgents}
	// Finished statuses end a run (terminal, or aborted): entering one sets finished_at, and a
	// sub-agent entering one may resume its parent.
	Finished = []string{Completed, Failed, Cancelled, Aborted}
	// Settled statuses are those in which a per-agent chat settles (terminal, aborted, or blocked
	// for approval or input): entering one fires the chat's callback (document 2).
	Settled = slices.Concat(Terminal, Paused)
)

// Error codes of a failed task (the contract's TaskErrorCode).
const (
	CodeRateLimit          = "RATE_LIMIT"
	CodeServerOverloaded   = "SERVER_OVERLOADED"
	CodeServerError        = "SERVER_ERROR"
	CodeGatewayError       = "GATEWAY_ERROR"
	CodeAuthError          = "AUTH_ERROR"
	CodeLLMTimeout         = "LLM_TIMEOUT"
	CodeBadRequest         = "BAD_REQUEST"
	CodeToolError          = "TOOL_ERROR"
	CodeOrphaned           = "ORPHANED"
	CodeWorkerDisconnected = "WORKER_DISCONNECTED"
	CodeNoLLMConfiguration = "NO_LLM_CONFIGURATION"
	// CodeContextTooLong: the conversation does not fit the model's context window even after
	// compaction. A driver reports a provider's context-length refusal with it too, which the
	// loop answers by compacting and retrying once.
	CodeContextTooLong = "CONTEXT_TOO_LONG"
	// CodeBudgetExceeded: a budget of the task's user, group, agent or key is used up for its
	// period (issue 27); permanent (a retry after the reset, or a raised limit, runs again).
	CodeBudgetExceeded = "BUDGET_EXCEEDED"
	CodeUnknown        = "UNKNOWN"
)

// Codes lists every error code a failed task may carry. Callers must not modify it.
var Codes = []string{
	CodeRateLimit, CodeServerOverloaded, CodeServerError, CodeGatewayError, CodeAuthError,
	CodeLLMTimeout, CodeBadRequest, CodeToolError, CodeOrphaned, CodeWorkerDisconnected,
	CodeNoLLMConfiguration, CodeContextTooLong, CodeBudgetExceeded, CodeUnknown,
}

// Transient lists the error codes an automatic retry applies to (the agent's
// retry_after_minutes and max_retries). Callers must not modify it.
var Transient = []string{
	CodeRateLimit, CodeServerOverloaded, CodeServerError, CodeGatewayError, CodeLLMTimeout,
	CodeOrphaned, CodeWorkerDisconnected,
}

// IsTransient reports whether a task that failed with code may be retried automatically.
func IsTransient(code string) bool { return slices.Contains(Transient, code) }

// WillRetry reports whether a task that failed with code, retried retryCount times already by an
// agent allowing maxRetries, gets an automatic retry (docs/design.md "Task states": transient codes, within the
// agent's max_retries).
func WillRetry(code string, retryCount, maxRetries int) bool {
	return IsTransient(code) && retryCount < maxRetries
}
