package agentloop

import (
	"context"
	"time"

	"github.com/agentsvc/svc/store"
)

// Store is everything one run of a task asks of the database, from the claim to the step's
// commit: the claim, the lease, the step's configuration, the conversation, the tool calls
// and questions under the lease, the step's outcome and the sub-agent tasks it starts. The one
// store (*store.Store) satisfies it; every status change it makes goes through the store's
// one writer, checked against taskstate.Rules.
type Store interface {
	// The claim and the lease.
	ClaimQueued(ctx context.Context, workerID string, lease time.Duration, limit int) ([]store.Task, error)
	ExtendLease(ctx context.Context, id int64, workerID string, lease time.Duration) error
	HandBack(ctx context.Context, id int64, workerID string, recovered bool) (*store.Task, error)

	// The step's configuration.
	ConfigVersion(ctx context.Context) (int64, error)
	Agent(ctx context.Context, id, viewer int64) (*store.Agent, error)
	ResolveLLMConfig(ctx context.Context, groupPrincipalID *int64) (*store.LLMConfig, error)
	VisibleLLMConfig(ctx context.Context, principal, id int64) (*store.LLMConfig, error)
	UserOfPrincipal(ctx context.Context, p int64) (int64, error)
	HasBudgets(ctx context.Context) (bool, error)
	BudgetsFor(ctx context.Context, sc store.BudgetScope) ([]store.BudgetUse, error)
	NotifyBudgetThreshold(ctx context.Context, u store.BudgetUse, title, body string) (int, error)
	Day(t time.Time) string

	// The conversation and the step's writes under the lease.
	Task(ctx context.Context, id int64) (*store.Task, error)
	Messages(ctx context.Context, taskID int64, sinceSequence int) ([]store.TaskMessage, error)
	MessagesOfTasks(ctx context.Context, taskIDs []int64) (map[int64][]store.TaskMessage, error)
	SummaryAt(ctx context.Context, taskID, seq int64) (*store.Summary, error)
	AppendSummary(ctx context.Context, taskID int64, workerID string, sm store.Summary) error
	QuestionBatches(ctx context.Context, taskID int64) ([]store.QuestionBatch, error)
	ToolCalls(ctx context.Context, taskID int64) ([]store.ToolCall, error)
	AppendDelta(ctx context.Context, taskID int64, workerID string, d store.Delta) error
	AppendAssistantTurn(ctx context.Context, taskID int64, workerID string, msg store.NewTaskMessage, calls []store.NewToolCall) (store.TaskMessage, []store.ToolCall, error)
	BeginToolCall(ctx context.Context, taskID int64, workerID string, callID int64) error
	RestartToolCall(ctx context.Context, taskID int64, workerID string, callID int64) error
	UpdateToolCall(ctx context.Context, taskID int64, workerID string, callID int64, u store.ToolCallUpdate) error
	RecordQuestions(ctx context.Context, taskID int64, workerID, toolCallID string, qs []store.Question) (*store.QuestionBatch, error)
	FinishStep(ctx context.Context, id int64, workerID string, o store.StepOutcome) (*store.Task, error)
	FinishTurn(ctx context.Context, id int64, workerID string, msg store.NewTaskMessage, o store.StepOutcome) (*store.Task, store.TaskMessage, error)

	// Sub-agent tasks.
	CreateTask(ctx context.Context, nt store.NewTask) (*store.Task, error)
	UnsettledChildren(ctx context.Context, parentID int64) (int64, error)
	ResumeWhenChildrenSettled(ctx context.Context, parentID int64) (bool, error)
}

var _ Store = (*store.Store)(nil)
