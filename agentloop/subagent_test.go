package agentloop_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

// byAgent routes each model turn to the script of the agent whose system prompt it carries, so
// parent and child tasks follow their own scripts; before (when set) runs ahead of each turn.
type byAgent struct {
	mu      sync.Mutex
	scripts map[string]llm.Driver
	reqs    map[string][]llm.Request
	before  func(req llm.Request)
}

func (b *byAgent) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if b.before != nil {
		b.before(req)
	}
	b.mu.Lock()
	b.reqs[req.System] = append(b.reqs[req.System], req)
	d := b.scripts[req.System]
	b.mu.Unlock()
	return d.Complete(ctx, req)
}

type subFixture struct {
	*fixture
	drv      *byAgent
	children []*store.Agent
}

// newSubFixture builds a parent agent ("parent" system prompt) and n child agents of the same
// group ("child0" …), each with its script; the sub-agent tool is enabled and auto-approved
// with allowed (nil: every child) as allowed_target_agents.
func newSubFixture(t *testing.T, parent []llm.ScriptTurn, children [][]llm.ScriptTurn, allowed []int64) *subFixture {
	t.Helper()
	sys := "parent"
	f := newFixture(t, nil, store.AgentFields{SystemPrompt: &sys}, true)
	sf := &subFixture{fixture: f, drv: &byAgent{scripts: map[string]llm.Driver{}, reqs: map[string][]llm.Request{}}}
	add := func(system string, turns []llm.ScriptTurn) {
		d, err := llm.NewScripted(turns)
		if err != nil {
			t.Fatal(err)
		}
		sf.drv.scripts[system] = d
	}
	add("parent", parent)
	var ids []any
	for i, turns := range children {
		prompt := "child" + strconv.Itoa(i)
		a := storetest.Agent(t, f.Store, f.Agent.PrincipalID, func(af *store.AgentFields) { af.SystemPrompt = &prompt })
		sf.children = append(sf.children, a)
		add(prompt, turns)
		ids = append(ids, float64(a.ID))
	}
	if allowed != nil {
		ids = nil
		for _, id := range allowed {
			ids = append(ids, float64(id))
		}
	}
	yes := true
	f.States["core.SubAgentTool"] = tools.ToolState{Enabled: true,
		Layers:    []map[string]any{{"allowed_target_agents": ids}},
		Overrides: map[string]tools.OperationOverride{"sub_agent": {AutoApprove: &yes}, "handover": {AutoApprove: &yes}}}
	f.Loop.Driver = func(*store.LLMConfig) (llm.Driver, error) { return sf.drv, nil }
	return sf
}

func subCall(id, op string, agent int64, prompt string) llm.ScriptToolCall {
	args, _ := json.Marshal(map[string]any{"action": op, "agent_id": agent, "prompt": prompt})
	return llm.ScriptToolCall{ID: id, Name: "sub_agent", Arguments: args}
}

// toolResults returns "id=text" for each tool result of the last request of system.
func (sf *subFixture) toolResults(system string) []string {
	reqs := sf.drv.reqs[system]
	if len(reqs) == 0 {
		return nil
	}
	var out []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == llm.RoleTool {
			out = append(out, m.ToolCallID+"="+m.Text)
		}
	}
	return out
}

func (sf *subFixture) childTasks(parent int64) []store.Task {
	sf.T.Helper()
	all, err := sf.Store.ListTasks(context.Background(), store.TaskQuery{UserID: sf.User.ID, PerPage: 100})
	if err != nil {
		sf.T.Fatal(err)
	}
	var out []store.Task
	for _, t := range all {
		if t.ParentTaskID != nil && *t.ParentTaskID == parent {
			out = append(out, t)
		}
	}
	return out
}

func TestSubAgentDelegationCompletes(t *testing.T) {
	t.Parallel()
	var child int64
	sf := newSubFixture(t, nil, [][]llm.ScriptTurn{{{Text: "the child's findings"}}}, nil)
	child = sf.children[0].ID
	sf.drv.scripts["parent"], _ = llm.NewScripted([]llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{subCall("s1", "sub_agent", child, "research this")}},
		{Text: "summary of the findings"},
	})
	parent := sf.NewTask("delegate", 10)

	// One step: the parent starts its child and waits.
	claimed, err := sf.Store.ClaimQueued(context.Background(), "w1", time.Minute, 1)
	if err != nil || len(claimed) != 1 || claimed[0].ID != parent.ID {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	sf.Loop.Run(context.Background(), nil, &claimed[0], "w1")
	if got := sf.Task(parent.ID); got.Status != taskstate.AwaitingSubAgents {
		t.Fatalf("parent %s, want AWAITING_SUB_AGENTS", got.Status)
	}
	kids := sf.childTasks(parent.ID)
	if len(kids) != 1 || kids[0].AgentID != child || kids[0].Status != taskstate.Queued || kids[0].Prompt != "research this" ||
		kids[0].UserID != parent.UserID {
		t.Fatalf("children: %+v", kids)
	}

	sf.Drain()
	got := sf.Task(parent.ID)
	if got.Status != taskstate.Completed || got.Answer == nil || *got.Answer != "summary of the findings" {
		t.Fatalf("parent %s %v", got.Status, got.Answer)
	}
	if c := sf.Task(kids[0].ID); c.Status != taskstate.Completed || *c.Answer != "the child's findings" {
		t.Fatalf("child %s %v", c.Status, c.Answer)
	}
	res := sf.toolResults("parent")
	if len(res) != 1 || !strings.HasPrefix(res[0], "s1=") || !strings.Contains(res[0], "the child's findings") || !strings.Contains(res[0], "COMPLETED") {
		t.Fatalf("the model saw %v", res)
	}
	if n := len(sf.drv.reqs["parent"]); n != 2 {
		t.Fatalf("parent had %d model turns, want 2", n)
	}
}

func TestSubAgentHandover(t *testing.T) {
	t.Parallel()
	sf := newSubFixture(t, nil, [][]llm.ScriptTurn{{{Text: "answer from the specialist"}}}, nil)
	sf.drv.scripts["parent"], _ = llm.NewScripted([]llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{subCall("h1", "handover", sf.children[0].ID, "take over")}},
		{Text: "the parent must not speak again"},
	})
	parent := sf.NewTask("hand over", 10)
	sf.Drain()
	got := sf.Task(parent.ID)
	if got.Status != taskstate.Completed || got.Answer == nil || *got.Answer != "answer from the specialist" {
		t.Fatalf("parent %s %v", got.Status, got.Answer)
	}
	if n := len(sf.drv.reqs["parent"]); n != 1 {
		t.Fatalf("parent had %d model turns after the handover, want 1", n)
	}

	// A follow-up after the handover: something was said since the handover call (the task
	// row's message count says so), so the parent's model answers it.
	if _, err := sf.Store.TransitionTask(context.Background(), parent.ID, store.TaskTransition{Action: taskstate.Continue,
		To: taskstate.Queued, GrantSteps: 5, UserMessage: &store.NewTaskMessage{Role: store.RoleUser, Text: "and now?"}}); err != nil {
		t.Fatal(err)
	}
	sf.Drain()
	got = sf.Task(parent.ID)
	if got.Status != taskstate.Completed || got.Answer == nil || *got.Answer != "the parent must not speak again" {
		t.Fatalf("parent after the follow-up %s %v", got.Status, got.Answer)
	}
	if n := len(sf.drv.reqs["parent"]); n != 2 {
		t.Fatalf("parent had %d model turns after the follow-up, want 2", n)
	}
}

func TestSubAgentRefusedTargets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, want string }{
		{"not allowed", "not among this agent's allowed target agents"},
		{"other principal", "belongs to another owner"},
		{"unknown agent", "there is no agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sf := newSubFixture(t, nil, [][]llm.ScriptTurn{{{Text: "x"}}}, nil)
			target := sf.children[0].ID
			switch tc.name {
			case "not allowed":
				sf.States["core.SubAgentTool"] = withAllowed(sf.States["core.SubAgentTool"], []any{float64(target + 1000)})
			case "other principal":
				other := storetest.User(t, sf.Store)
				target = storetest.Agent(t, sf.Store, other.PrincipalID).ID
				sf.States["core.SubAgentTool"] = withAllowed(sf.States["core.SubAgentTool"], []any{float64(target)})
			case "unknown agent":
				target = 999999
				sf.States["core.SubAgentTool"] = withAllowed(sf.States["core.SubAgentTool"], []any{float64(target)})
			}
			sf.drv.scripts["parent"], _ = llm.NewScripted([]llm.ScriptTurn{
				{ToolCalls: []llm.ScriptToolCall{subCall("s1", "sub_agent", target, "do it")}},
				{Text: "could not delegate"},
			})
			parent := sf.NewTask("delegate", 10)
			sf.Drain()
			if got := sf.Task(parent.ID); got.Status != taskstate.Completed || *got.Answer != "could not delegate" {
				t.Fatalf("parent %s %v", got.Status, got.Answer)
			}
			if kids := sf.childTasks(parent.ID); len(kids) != 0 {
				t.Fatalf("a refused call started %d tasks", len(kids))
			}
			res := sf.toolResults("parent")
			if len(res) != 1 || !strings.Contains(res[0], tc.want) {
				t.Fatalf("the model saw %v, want %q", res, tc.want)
			}
		})
	}
}

func withAllowed(st tools.ToolState, ids []any) tools.ToolState {
	st.Layers = []map[string]any{{"allowed_target_agents": ids}}
	return st
}

// Two children finishing at the same moment on two workers resume the parent exactly once.
func TestSubAgentsFinishingTogetherResumeOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sf := newSubFixture(t, nil, [][]llm.ScriptTurn{{{Text: "first"}}, {{Text: "second"}}}, nil)
	sf.drv.scripts["parent"], _ = llm.NewScripted([]llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{
			subCall("a", "sub_agent", sf.children[0].ID, "part one"),
			subCall("b", "sub_agent", sf.children[1].ID, "part two"),
		}},
		{Text: "both done"},
	})
	parent := sf.NewTask("split", 10)
	claimed := claimOne(t, sf.Store, "w0", time.Minute)
	sf.Loop.Run(ctx, nil, claimed, "w0")
	if got := sf.Task(parent.ID); got.Status != taskstate.AwaitingSubAgents {
		t.Fatalf("parent %s", got.Status)
	}
	// Both children reach their model turn before either goes on.
	var barrier sync.WaitGroup
	barrier.Add(2)
	sf.drv.before = func(req llm.Request) {
		if strings.HasPrefix(req.System, "child") {
			barrier.Done()
			barrier.Wait()
		}
	}
	var runs sync.WaitGroup
	for _, w := range []string{"w1", "w2"} {
		claimed, err := sf.Store.ClaimQueued(ctx, w, time.Minute, 1)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim %s: %v %v", w, claimed, err)
		}
		runs.Add(1)
		go func(c *store.Task, w string) {
			defer runs.Done()
			sf.Loop.Run(ctx, nil, c, w)
		}(&claimed[0], w)
	}
	runs.Wait()
	sf.drv.before = nil
	if got := sf.Task(parent.ID); got.Status != taskstate.Queued {
		t.Fatalf("parent %s after both children, want QUEUED", got.Status)
	}
	sf.Drain()
	if got := sf.Task(parent.ID); got.Status != taskstate.Completed || *got.Answer != "both done" {
		t.Fatalf("parent %s %v", got.Status, got.Answer)
	}
	if n := len(sf.drv.reqs["parent"]); n != 2 {
		t.Fatalf("parent had %d model turns, want 2 (resumed once)", n)
	}
	res := strings.Join(sf.toolResults("parent"), "|")
	if !strings.Contains(res, "first") || !strings.Contains(res, "second") {
		t.Fatalf("the model saw %s", res)
	}
}

// The resume compare-and-swap itself: of many concurrent callers exactly one queues the parent.
func TestResumeWhenChildrenSettledOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sf := newSubFixture(t, nil, [][]llm.ScriptTurn{{{Text: "done"}}}, nil)
	sf.drv.scripts["parent"], _ = llm.NewScripted([]llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{subCall("a", "sub_agent", sf.children[0].ID, "go")}},
	})
	parent := sf.NewTask("p", 10)
	claimed := claimOne(t, sf.Store, "w0", time.Minute)
	sf.Loop.Run(ctx, nil, claimed, "w0")
	if ok, err := sf.Store.ResumeWhenChildrenSettled(ctx, parent.ID); ok || err != nil {
		t.Fatalf("resumed with a queued child: %v %v", ok, err)
	}
	kid := sf.childTasks(parent.ID)[0]
	storetest.MoveTo(t, sf.Store, kid.ID, taskstate.Completed)
	var mu sync.Mutex
	var wg sync.WaitGroup
	resumed := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := sf.Store.ResumeWhenChildrenSettled(ctx, parent.ID)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				resumed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if resumed != 1 {
		t.Fatalf("resumed %d times, want 1", resumed)
	}
}

// abort-sub-agent aborts a real child and its waiting parent; nothing runs afterwards.
func TestAbortSubAgentCascades(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sf := newSubFixture(t, nil, [][]llm.ScriptTurn{{{Text: "never"}}}, nil)
	sf.drv.scripts["parent"], _ = llm.NewScripted([]llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{subCall("a", "sub_agent", sf.children[0].ID, "go")}},
	})
	parent := sf.NewTask("p", 10)
	claimed := claimOne(t, sf.Store, "w0", time.Minute)
	sf.Loop.Run(ctx, nil, claimed, "w0")
	kid := sf.childTasks(parent.ID)[0]
	reg := tools.NewRegistry()
	if err := core.Register(reg); err != nil {
		t.Fatal(err)
	}
	v, err := task.New(sf.Store, reg).AbortSubAgent(ctx, sf.User, strconv.FormatInt(kid.ID, 10))
	if err != nil || v == nil {
		t.Fatalf("abort-sub-agent: %v", err)
	}
	if c, p := sf.Task(kid.ID), sf.Task(parent.ID); c.Status != taskstate.Aborted || p.Status != taskstate.Aborted {
		t.Fatalf("child %s parent %s, want both ABORTED", c.Status, p.Status)
	}
	sf.Drain()
	if n := len(sf.drv.reqs["child0"]); n != 0 {
		t.Fatalf("the aborted child ran %d turns", n)
	}
}

// A child the loop stops (step budget spent → ABORTED) settles too: the parent resumes and
// the model sees the child's state.
func TestAbortedChildResumesParent(t *testing.T) {
	t.Parallel()
	sf := newSubFixture(t, nil, [][]llm.ScriptTurn{{{ToolCalls: []llm.ScriptToolCall{calcCall("c", "1+1")}}}}, nil)
	sf.drv.scripts["parent"], _ = llm.NewScripted([]llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{subCall("a", "sub_agent", sf.children[0].ID, "go")}},
		{Text: "the child ran out of steps"},
	})
	one := 1
	if _, err := sf.Store.UpdateAgent(context.Background(), sf.children[0].ID, sf.User.ID, store.AgentFields{MaxSteps: &one}, nil); err != nil {
		t.Fatal(err)
	}
	parent := sf.NewTask("p", 10)
	sf.Drain()
	if got := sf.Task(parent.ID); got.Status != taskstate.Completed || *got.Answer != "the child ran out of steps" {
		t.Fatalf("parent %s %v", got.Status, got.Answer)
	}
	if res := strings.Join(sf.toolResults("parent"), "|"); !strings.Contains(res, taskstate.Aborted) {
		t.Fatalf("the model saw %s", res)
	}
}

// Without an override, delegation waits for approval (the tool's declared default).
func TestSubAgentNeedsApprovalByDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sf := newSubFixture(t, nil, [][]llm.ScriptTurn{{{Text: "child says hi"}}}, nil)
	st := sf.States["core.SubAgentTool"]
	st.Overrides = nil
	sf.States["core.SubAgentTool"] = st
	sf.drv.scripts["parent"], _ = llm.NewScripted([]llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{subCall("s1", "sub_agent", sf.children[0].ID, "go")}},
		{Text: "approved and done"},
	})
	parent := sf.NewTask("p", 10)
	sf.Drain()
	if got := sf.Task(parent.ID); got.Status != taskstate.PendingApproval || len(sf.childTasks(parent.ID)) != 0 {
		t.Fatalf("parent %s with %d children, want PENDING_APPROVAL and none", got.Status, len(sf.childTasks(parent.ID)))
	}
	reg := tools.NewRegistry()
	if err := core.Register(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := task.New(sf.Store, reg).Approve(ctx, sf.User, strconv.FormatInt(parent.ID, 10),
		[]store.ToolDecision{{ProviderCallID: "s1", Approve: true}}); err != nil {
		t.Fatal(err)
	}
	sf.Drain()
	if got := sf.Task(parent.ID); got.Status != taskstate.Completed || *got.Answer != "approved and done" {
		t.Fatalf("parent %s %v", got.Status, got.Answer)
	}
	if res := strings.Join(sf.toolResults("parent"), "|"); !strings.Contains(res, "child says hi") {
		t.Fatalf("the model saw %s", res)
	}
}

// A child aborted by its owner through the task service (not the loop) settles too: the
// waiting parent is queued again and resumes with the child's state.
func TestChildAbortedByUserResumesParent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sf := newSubFixture(t, nil, [][]llm.ScriptTurn{{{Text: "never"}}}, nil)
	sf.drv.scripts["parent"], _ = llm.NewScripted([]llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{subCall("a", "sub_agent", sf.children[0].ID, "go")}},
		{Text: "the child was stopped"},
	})
	parent := sf.NewTask("p", 10)
	claimed := claimOne(t, sf.Store, "w0", time.Minute)
	sf.Loop.Run(ctx, nil, claimed, "w0")
	if got := sf.Task(parent.ID); got.Status != taskstate.AwaitingSubAgents {
		t.Fatalf("parent %s, want AWAITING_SUB_AGENTS", got.Status)
	}
	kid := sf.childTasks(parent.ID)[0]
	reg := tools.NewRegistry()
	if err := core.Register(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := task.New(sf.Store, reg).Abort(ctx, sf.User, strconv.FormatInt(kid.ID, 10)); err != nil {
		t.Fatal(err)
	}
	if got := sf.Task(parent.ID); got.Status != taskstate.Queued {
		t.Fatalf("parent %s after its only child was aborted, want QUEUED", got.Status)
	}
	sf.Drain()
	if got := sf.Task(parent.ID); got.Status != taskstate.Completed {
		t.Fatalf("parent %s", got.Status)
	}
}
