package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// SubAgentTool delegates work to another agent of the same owner, either waiting for its answer
// (sub_agent) or handing the conversation over (handover). Both need approval by default, and only
// the agents listed in allowed_target_agents can be reached.
type SubAgentTool struct{}

// Spec declares the tool.
func (SubAgentTool) Spec() tools.Spec {
	return tools.Spec{
		Class:       "core.SubAgentTool",
		Name:        "sub_agent",
		DisplayName: "Sub-agent",
		Description: "Delegate work to another agent of the same owner: sub_agent runs it on a task and returns its answer; handover passes the conversation to it.",
		Category:    tools.CategorySystem,
		Icon:        "users",
		Operations: []tools.Operation{
			approvedOp("sub_agent", "Run the target agent on a task and return its answer."),
			approvedOp("handover", "Hand the conversation over to the target agent."),
		},
		Params: []tools.Param{
			{Name: "agent_id", Type: tools.TypeInteger, Minimum: tools.Float(1), Description: "Target agent; must be in the allowed target agents."},
			{Name: "prompt", Type: tools.TypeString, Description: "sub_agent: the complete task, with all context the target needs. handover: the message the target continues with."},
			{
				Name: "max_steps", Type: tools.TypeInteger, Description: "sub_agent: model turns the target may take (defaults to its own setting).",
				Minimum: tools.Float(limits.MinSteps), Maximum: tools.Float(limits.MaxSteps), Required: tools.Optional(),
			},
		},
		Settings: []tools.Setting{{
			Key: "allowed_target_agents", Label: "Allowed target agents", Type: tools.SettingIntegerList, Required: true,
			Description: "Ids of the agents this agent may delegate to; they must belong to the same owner.",
		}},
	}
}

// SubAgents is what the sub-agent tool needs of the agent loop, which runs the child tasks the
// tool starts (agentloop.SubAgents implements it over the store). The tool keeps its own rules
// (allowed targets, same owner, step budget); the loop creates and reads the tasks.
type SubAgents interface {
	// Agent returns agent id as user userID may see it; it fails with svcerr.ErrNotFound when
	// there is no such agent.
	Agent(ctx context.Context, id, userID int64) (*store.Agent, error)
	// Spawn starts prompt on agent a as a child task (QUEUED) of task parentID, for the parent's
	// user and from the parent's source, with a step budget of maxSteps. It fails with
	// svcerr.ErrInvalid when the store refuses the child (the message says why) and with
	// svcerr.ErrNotFound when the parent is gone; other errors are infrastructure failures.
	Spawn(ctx context.Context, parentID int64, a *store.Agent, prompt string, maxSteps int) (*store.Task, error)
	// Task reads a child task as it stands; it fails with svcerr.ErrNotFound when the task was
	// deleted.
	Task(ctx context.Context, id int64) (*store.Task, error)
}

// subAgentData is what a sub_agent or handover call keeps in its result: the child tasks it
// started. The model's view of the call is derived from those tasks at request time
// (Describe), so it always reflects the children's latest status and answer.
type subAgentData struct {
	ChildTaskIDs []int64 `json:"child_task_ids"`
	Handover     bool    `json:"handover,omitempty"`
}

// subAgentExec runs the sub-agent tool: each call starts one child task (QUEUED, owned by the
// parent task's owner, parent_task_id set) and parks the parent in AWAITING_SUB_AGENTS (its
// result's Pause). It is the tools.Delegator of its calls.
type subAgentExec struct{ agents SubAgents }

var _ tools.Delegator = (*subAgentExec)(nil)

// Execute validates the target (listed in allowed_target_agents and owned by the same
// principal as the calling agent; otherwise a ToolError the model sees) and creates the child.
// Other errors are infrastructure failures.
func (x *subAgentExec) Execute(ctx context.Context, call tools.Call) (tools.Result, error) {
	if call.Operation != "sub_agent" && call.Operation != "handover" {
		return tools.Result{}, &tools.ToolError{Msg: fmt.Sprintf("unknown operation %q", call.Operation)}
	}
	if x.agents == nil {
		return tools.Result{}, toolErr("sub-agents are not available")
	}
	target, ok := intOf(call.Args["agent_id"])
	if !ok || target < 1 {
		return tools.Result{}, &tools.ToolError{Msg: "agent_id must be a positive integer"}
	}
	prompt, _ := call.Args["prompt"].(string)
	if prompt == "" {
		return tools.Result{}, &tools.ToolError{Msg: "prompt is required"}
	}
	if !slices.Contains(intList(call.Settings["allowed_target_agents"]), target) {
		return tools.Result{}, &tools.ToolError{Msg: fmt.Sprintf("agent %d is not among this agent's allowed target agents", target)}
	}
	self, err := x.agents.Agent(ctx, call.AgentID, call.UserID)
	if err != nil {
		return tools.Result{}, err
	}
	a, err := x.agents.Agent(ctx, target, call.UserID)
	if errors.Is(err, svcerr.ErrNotFound) {
		return tools.Result{}, &tools.ToolError{Msg: fmt.Sprintf("there is no agent %d", target)}
	}
	if err != nil {
		return tools.Result{}, err
	}
	if a.PrincipalID != self.PrincipalID {
		return tools.Result{}, &tools.ToolError{Msg: fmt.Sprintf("agent %d belongs to another owner: only agents of the same owner can be reached", target)}
	}
	steps := a.MaxSteps
	if n, ok := intOf(call.Args["max_steps"]); ok && n >= limits.MinSteps && n <= limits.MaxSteps {
		steps = int(n)
	}
	child, err := x.agents.Spawn(ctx, call.TaskID, a, prompt, steps)
	if errors.Is(err, svcerr.ErrInvalid) {
		return tools.Result{}, &tools.ToolError{Msg: "the sub-agent task could not be created: " + err.Error()}
	}
	if err != nil {
		return tools.Result{}, err
	}
	handover := call.Operation == "handover"
	data, err := json.Marshal(subAgentData{ChildTaskIDs: []int64{child.ID}, Handover: handover})
	if err != nil {
		return tools.Result{}, err
	}
	return tools.Result{
		Content: fmt.Sprintf("Started task %d on agent %d (%s).", child.ID, a.ID, a.Name),
		Data:    data,
		Pause:   &tools.Pause{Kind: tools.PauseSubAgent, AgentIDs: []int64{a.ID}, Prompts: []string{prompt}, Handover: handover},
	}, nil
}

// Delegated reads the child tasks a call started from its recorded data.
func (x *subAgentExec) Delegated(data json.RawMessage) (tools.Delegation, bool) {
	var d subAgentData
	if json.Unmarshal(data, &d) != nil || len(d.ChildTaskIDs) == 0 {
		return tools.Delegation{}, false
	}
	return tools.Delegation{ChildTaskIDs: d.ChildTaskIDs, Handover: d.Handover}, true
}

// Describe tells the model each child's status, and its answer or error. Errors are the
// infrastructure failures of reading the children (a deleted child is reported as DELETED).
func (x *subAgentExec) Describe(ctx context.Context, d tools.Delegation) (string, error) {
	if x.agents == nil {
		return "", errors.New("sub-agents are not available")
	}
	type childView struct {
		TaskID  int64   `json:"task_id"`
		AgentID int64   `json:"agent_id"`
		Status  string  `json:"status"`
		Answer  *string `json:"answer,omitempty"`
		Error   string  `json:"error,omitempty"`
	}
	var views []childView
	for _, id := range d.ChildTaskIDs {
		t, err := x.agents.Task(ctx, id)
		if errors.Is(err, svcerr.ErrNotFound) {
			views = append(views, childView{TaskID: id, Status: "DELETED"})
			continue
		}
		if err != nil {
			return "", err
		}
		v := childView{TaskID: t.ID, AgentID: t.AgentID, Status: t.Status, Answer: t.Answer}
		if t.Error != nil {
			v.Error = t.Error.Code + ": " + t.Error.Message
		}
		views = append(views, v)
	}
	raw, err := json.Marshal(map[string]any{"sub_agents": views})
	if err != nil {
		return "", err
	}
	return string(raw), nil
}
