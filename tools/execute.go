package tools

import (
	"context"
	"encoding/json"
)

// Executor is implemented by tools that run. The agent loop resolves the operation (see
// OperationFor), applies approvals, and calls Execute with the approved arguments; Execute must
// not run an operation twice for one call (the loop records each call before executing it).
type Executor interface {
	Execute(ctx context.Context, call Call) (Result, error)
}

// Call is one tool call as the loop hands it to a tool.
type Call struct {
	Operation string
	Args      map[string]any // the approved arguments, discriminator removed
	Settings  map[string]any // the effective settings of the cascade (secrets opened)
	TaskID    int64
	// MessageSequence is the sequence of the assistant message that requested the call (0
	// outside a task): what a tool that keeps something records as its origin.
	MessageSequence int
	AgentID         int64
	// OwnerUserID is the owner of the agent that issued the call (document 2, schema rule 4):
	// the agent's personal owner, or 0 when no user owns it (group agents, unresolvable agents).
	OwnerUserID int64
	// UserID is the user the task runs for (the task's user): a call that changes something
	// may do only what this user could do through the API.
	UserID         int64
	ProviderCallID string
}

// Result is what a call produced. Content is what the model sees; Data is kept in the
// transcript. A non-nil Pause parks the task (a question batch for the user, sub-agent tasks).
type Result struct {
	Content string
	Data    json.RawMessage
	Pause   *Pause
}

// Pause kinds.
const (
	PauseQuestion = "question"
	PauseSubAgent = "sub_agent"
)

// Pause asks the loop to park the task after this call.
type Pause struct {
	Kind      string
	Questions json.RawMessage // PauseQuestion: the validated question batch
	AgentIDs  []int64         // PauseSubAgent: agents to spawn
	Prompts   []string        // PauseSubAgent: one prompt per agent
	Handover  bool            // PauseSubAgent: the parent finishes with the child's answer
}

// ToolError is an execution failure the model should see (bad arguments, a page that could not
// be fetched). Any other error fails the task with TOOL_ERROR.
type ToolError struct{ Msg string }

func (e *ToolError) Error() string { return e.Msg }

// Delegation is what an executed call of a delegating tool started: its child tasks.
type Delegation struct {
	ChildTaskIDs []int64
	Handover     bool // the calling task completes with the (first) child's answer
}

// Delegator is implemented by an executor whose calls start child tasks and park the calling
// task until they settle (PauseSubAgent): core's sub-agent tool. The loop knows such calls by
// their executor, never by the tool's name: it asks Delegated which children a call started, to
// wait for them and to complete a handover with the child's answer, and Describe what the model
// is told about the call, so that it always reflects the children's latest state.
type Delegator interface {
	// Delegated reads the data an executed call recorded (Result.Data); ok is false when the
	// call started no child task.
	Delegated(data json.RawMessage) (d Delegation, ok bool)
	// Describe is what the model is told about a call that started d's children, as they stand
	// now. Errors are infrastructure failures (reading the children); a child deleted since is
	// described, not an error.
	Describe(ctx context.Context, d Delegation) (string, error)
}
