package core_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop"
	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/domain/schedule"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
	"github.com/agentsvc/svc/tools/toolconfig"
)

// recorder wraps a driver and keeps every request it saw.
type recorder struct {
	mu   sync.Mutex
	d    llm.Driver
	reqs []llm.Request
}

func (r *recorder) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.d.Complete(ctx, req)
}

// fixture runs core tools through the agent loop, as the server does, over a throwaway store: a
// user, a group, an agent "Bot" of the group, a scripted model (rec) and the core executors
// built over deps. Tools are enabled through states (the calculator, ask_user_question and
// todo are).
type fixture struct {
	t      *testing.T
	st     *store.Store
	loop   *agentloop.Loop
	rec    *recorder
	user   *store.User
	agent  *store.Agent
	states map[string]tools.ToolState
}

// newFixture builds the fixture; withConfig gives the group a model configuration.
func newFixture(t *testing.T, turns []llm.ScriptTurn, agentFields store.AgentFields, withConfig bool) *fixture {
	t.Helper()
	st := storetest.New(t)
	u := storetest.User(t, st)
	g := storetest.Group(t, st, u)
	if withConfig {
		storetest.LLMConfig(t, st, g.ID)
	}
	a := storetest.Agent(t, st, g.PrincipalID, func(f *store.AgentFields) {
		name := "Bot"
		*f, f.Name = agentFields, &name
	})
	reg := tools.NewRegistry()
	if err := core.Register(reg); err != nil {
		t.Fatal(err)
	}
	scripted, err := llm.NewScripted(turns)
	if err != nil {
		t.Fatal(err)
	}
	board := &agentloop.TodoBoard{}
	f := &fixture{t: t, st: st, rec: &recorder{d: scripted}, user: u, agent: a,
		states: map[string]tools.ToolState{
			"core.CalculatorTool":      {Enabled: true},
			"core.AskUserQuestionTool": {Enabled: true},
			"core.TodoTool":            {Enabled: true},
		}}
	f.loop = &agentloop.Loop{
		Store: st, Registry: reg, Executors: core.Executors(core.Deps{Todos: board, SubAgents: agentloop.SubAgents{Store: st}}), Lease: time.Minute, Todos: board,
		ToolStates: func(context.Context, int64) (map[string]tools.ToolState, error) { return f.states, nil },
		Driver:     func(*store.LLMConfig) (llm.Driver, error) { return f.rec, nil },
	}
	return f
}

// executors rebuilds the loop's core executors over deps (the todo board and the sub-agents
// stay the loop's).
func (f *fixture) executors(deps core.Deps) {
	deps.Todos, deps.SubAgents = f.loop.Todos, agentloop.SubAgents{Store: f.st}
	f.loop.Executors = core.Executors(deps)
}

func (f *fixture) newTask(prompt string, maxSteps int) *store.Task {
	f.t.Helper()
	return storetest.Task(f.t, f.st, f.agent, f.user.ID, func(nt *store.NewTask) { nt.Prompt, nt.MaxSteps = prompt, maxSteps })
}

// drain claims and runs every QUEUED task until nothing is claimable, like the daemon.
func (f *fixture) drain() {
	f.t.Helper()
	for {
		claimed, err := f.st.ClaimQueued(context.Background(), "w1", time.Minute, 10)
		if err != nil {
			f.t.Fatal(err)
		}
		if len(claimed) == 0 {
			return
		}
		for i := range claimed {
			f.loop.Run(context.Background(), nil, &claimed[i], "w1")
		}
	}
}

func (f *fixture) task(id int64) *store.Task {
	f.t.Helper()
	task, err := f.st.Task(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return task
}

// toolResults maps the provider call ids of a request's tool results to their text.
func toolResults(req llm.Request) map[string]llm.Message {
	out := map[string]llm.Message{}
	for _, m := range req.Messages {
		if m.Role == llm.RoleTool {
			out[m.ToolCallID] = m
		}
	}
	return out
}

// The services the server hands the core executors (server/runtime.go) satisfy their interfaces.
var (
	_ core.UserInfoSource  = (*store.Store)(nil)
	_ core.MediaSource     = (*store.Store)(nil)
	_ core.ScheduleService = (*schedule.Service)(nil)
	_ core.AgentService    = (*toolconfig.Service)(nil)
	_ core.TodoStore       = (*agentloop.TodoBoard)(nil)
	_ core.SubAgents       = agentloop.SubAgents{}
)
