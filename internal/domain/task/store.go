package task

import (
	"context"
	"time"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/store"
)

// Store is what the task service reads and writes: the task aggregate (tasks, their tool
// calls and questions, transitions) and the agent and media reads its checks need. The one
// store (*store.Store) satisfies it; a test may hand in anything smaller.
type Store interface {
	access.Memberships

	Task(ctx context.Context, id int64) (*store.Task, error)
	ListTasks(ctx context.Context, q store.TaskQuery) ([]store.Task, error)
	CreateTask(ctx context.Context, nt store.NewTask) (*store.Task, error)
	DeleteTask(ctx context.Context, id int64) error
	TransitionTask(ctx context.Context, id int64, t store.TaskTransition) (*store.Task, error)
	AbortTaskChain(ctx context.Context, id int64) (*store.Task, error)
	ResumeWhenChildrenSettled(ctx context.Context, parentID int64) (bool, error)
	ScheduleTaskRetry(ctx context.Context, id int64, after time.Duration, maxRetries int) (bool, error)
	UnscheduledRetries(ctx context.Context, before time.Time) ([]int64, error)

	ToolCalls(ctx context.Context, taskID int64) ([]store.ToolCall, error)
	DecideToolCallsBy(ctx context.Context, taskID int64, by store.Decider, ds []store.ToolDecision) (*store.Task, error)
	RejectToolCallsBy(ctx context.Context, taskID int64, by store.Decider, reason string) (*store.Task, error)
	PendingQuestions(ctx context.Context, taskID int64) ([]store.QuestionBatch, error)
	AnswerQuestionsBy(ctx context.Context, taskID int64, by store.Decider, toolCallID string, answers []store.QuestionAnswer, check store.AnswerCheck) (*store.Task, error)
	LastAssistantText(ctx context.Context, taskID int64) (*string, error)

	Agent(ctx context.Context, id, viewer int64) (*store.Agent, error)
	MediaAssets(ctx context.Context, ids []string) (map[string]*store.MediaAsset, error)
}
