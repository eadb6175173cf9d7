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
	AgentID   int64
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
