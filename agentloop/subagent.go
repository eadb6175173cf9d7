package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/agentsvc/svc/internal/limits"
	"github.com/agentsvc/svc/internal/svcerr"
	"github.com/agentsvc/svc/internal/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// SubAgentClass is the tool class of the sub-agent tool. Its executor needs the store, so the
// loop supplies it itself when Executors has none for this class.
const SubAgentClass = "core.SubAgentTool"

// subAgentData is what a sub_agent or handover call keeps in its result: the child tasks it
// started. The model's view of the call is derived from those tasks at request time
// (subAgentResults), so it always reflects the children's latest status and answer.
type subAgentData struct {
	ChildTaskIDs []int64 `json:"child_task_ids"`
	Handover     bool    `json:"handover,omitempty"`
}

// subAgentExec runs core.SubAgentTool: each call starts one child task (QUEUED, owned by the
// parent task's owner, parent_task_id set) and parks the parent in AWAITING_SUB_AGENTS.
type subAgentExec struct{ loop *Loop }

// Execute validates the target (listed in allowed_target_agents and owned by the same
// principal as the calling agent; otherwise a ToolError the model sees) and creates the child.
func (x subAgentExec) Execute(ctx context.Context, call tools.Call) (tools.Result, error) {
	if call.Operation != "sub_agent" && call.Operation != "handover" {
		return tools.Result{}, &tools.ToolError{Msg: fmt.Sprintf("unknown operation %q", call.Operation)}
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
	st := x.loop.Store
	parent, err := st.Task(ctx, call.TaskID)
	if err != nil {
		return tools.Result{}, err
	}
	self, err := st.Agent(ctx, call.AgentID, parent.UserID)
	if err != nil {
		return tools.Result{}, err
	}
	a, err := st.Agent(ctx, target, parent.UserID)
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
	child, err := st.CreateTask(ctx, store.NewTask{AgentID: a.ID, PrincipalID: a.PrincipalID, UserID: parent.UserID,
		ParentTaskID: &parent.ID, Prompt: prompt, MaxSteps: steps, Source: parent.Source})
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

func intOf(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return 0, false
		}
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

func intList(v any) []int64 {
	var out []int64
	switch l := v.(type) {
	case []any:
		for _, e := range l {
			if n, ok := intOf(e); ok {
				out = append(out, n)
			}
		}
	case []int64:
		out = l
	case []float64:
		for _, e := range l {
			if n, ok := intOf(e); ok {
				out = append(out, n)
			}
		}
	case []int:
		for _, e := range l {
			out = append(out, int64(e))
		}
	}
	return out
}

func subAgentCall(c store.ToolCall) (subAgentData, bool) {
	if c.ToolClass != SubAgentClass || c.Status != store.ToolCallExecuted {
		return subAgentData{}, false
	}
	var r resultRecord
	var d subAgentData
	if json.Unmarshal(c.Result, &r) != nil || json.Unmarshal(r.Data, &d) != nil || len(d.ChildTaskIDs) == 0 {
		return subAgentData{}, false
	}
	return d, true
}

// subAgentResults derives what the model is told about each executed sub_agent/handover call
// (keyed by provider call id) from its child tasks: status, and answer or error.
func (l *Loop) subAgentResults(ctx context.Context, calls []store.ToolCall) (map[string]string, error) {
	out := map[string]string{}
	for _, c := range calls {
		d, ok := subAgentCall(c)
		if !ok {
			continue
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
			t, err := l.Store.Task(ctx, id)
			if errors.Is(err, svcerr.ErrNotFound) {
				views = append(views, childView{TaskID: id, Status: "DELETED"})
				continue
			}
			if err != nil {
				return nil, err
			}
			v := childView{TaskID: t.ID, AgentID: t.AgentID, Status: t.Status, Answer: t.Answer}
			if t.Error != nil {
				v.Error = t.Error.Code + ": " + t.Error.Message
			}
			views = append(views, v)
		}
		raw, err := json.Marshal(map[string]any{"sub_agents": views})
		if err != nil {
			return nil, err
		}
		out[c.ProviderCallID] = string(raw)
	}
	return out, nil
}

// handoverAnswer reports the answer a resumed task completes with after a handover: the
// latest assistant turn ended in an executed handover call (nothing was said since) and its
// child COMPLETED. Otherwise the model runs as usual and sees the child's outcome.
func (l *Loop) handoverAnswer(ctx context.Context, t *store.Task, calls []store.ToolCall) (*string, error) {
	var last *store.ToolCall
	for i := range calls {
		if last == nil || calls[i].MessageSequence > last.MessageSequence {
			last = &calls[i]
		}
	}
	if last == nil {
		return nil, nil
	}
	var child int64
	for _, c := range calls {
		if d, ok := subAgentCall(c); ok && d.Handover && c.MessageSequence == last.MessageSequence {
			child = d.ChildTaskIDs[0]
		}
	}
	if child == 0 {
		return nil, nil
	}
	later, err := l.Store.Messages(ctx, t.ID, last.MessageSequence)
	if err != nil || len(later) > 0 {
		return nil, err
	}
	ct, err := l.Store.Task(ctx, child)
	if errors.Is(err, svcerr.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if ct.Status != taskstate.Completed || ct.Answer == nil {
		return nil, nil
	}
	answer := *ct.Answer
	return &answer, nil
}

// settle is called after a step left task t in state t.Status: a parent that now waits on
// sub-agents is resumed at once when its children already settled (they may finish before the
// parent's step ends), and a settled child resumes its parent when it was the last one.
func (l *Loop) settle(ctx context.Context, t *store.Task) *store.Task {
	resume := func(id int64) bool {
		ok, err := l.Store.ResumeWhenChildrenSettled(ctx, id)
		if err != nil && !errors.Is(err, svcerr.ErrNotFound) {
			l.log().Error("resume parent task", "task_id", id, "err", err)
		}
		return ok
	}
	switch t.Status {
	case taskstate.AwaitingSubAgents:
		if resume(t.ID) {
			if nt, err := l.Store.Task(ctx, t.ID); err == nil {
				return nt
			}
		}
	default:
		if t.ParentTaskID != nil && slices.Contains(taskstate.Finished, t.Status) {
			resume(*t.ParentTaskID)
		}
	}
	return t
}
