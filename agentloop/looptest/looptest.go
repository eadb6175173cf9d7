// Package looptest is the test kit for running tools through the agent loop, as the server
// does, over a throwaway store: a Fixture holds a user, a group, an agent "Bot" of the group, a
// scripted model behind a Recorder, the core tools registered with their executors, and the
// tool states the loop reads. The agent loop's own tests and the core tools' tests use it; a
// test adjusts what only it needs after New (wrap an executor in Loop.Executors, set
// Loop.Retry, swap Rec or Loop.Driver, rebuild the executors with Executors).
package looptest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop"
	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

// Recorder wraps a driver and keeps every request it saw. Driver may be replaced before the
// loop runs (to hook or replace the model).
type Recorder struct {
	Driver llm.Driver

	mu   sync.Mutex
	reqs []llm.Request
}

// Complete records req and passes it to Driver.
func (r *Recorder) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Driver.Complete(ctx, req)
}

// Requests returns the requests seen so far, oldest first.
func (r *Recorder) Requests() []llm.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]llm.Request(nil), r.reqs...)
}

// Fixture runs tools through the agent loop. The loop's driver is whatever Rec is when the
// model is called, and its tool states are States (the calculator, ask_user_question and todo
// are enabled); Loop.Executors is the core executors over the loop's todo board and sub-agents.
type Fixture struct {
	T      testing.TB
	Store  *store.Store
	Loop   *agentloop.Loop
	Rec    *Recorder
	User   *store.User
	Agent  *store.Agent
	States map[string]tools.ToolState
}

// Option changes how New builds the fixture.
type Option func(*options)

type options struct {
	clock  func() time.Time
	config []func(*store.LLMConfig)
}

// WithLLMConfig changes the group's model configuration (withConfig) before it is created.
func WithLLMConfig(f func(*store.LLMConfig)) Option {
	return func(o *options) { o.config = append(o.config, f) }
}

// WithClock puts the store on clock instead of the real time.
func WithClock(clock func() time.Time) Option {
	return func(o *options) { o.clock = clock }
}

// New builds the fixture: the model answers with turns, the agent "Bot" has agentFields (its
// name aside), and withConfig gives the group a model configuration.
func New(t testing.TB, turns []llm.ScriptTurn, agentFields store.AgentFields, withConfig bool, opts ...Option) *Fixture {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	st := storetest.NewWithClock(t, o.clock)
	u := storetest.User(t, st)
	g := storetest.Group(t, st, u)
	if withConfig {
		storetest.LLMConfig(t, st, g.ID, o.config...)
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
	f := &Fixture{T: t, Store: st, Rec: &Recorder{Driver: scripted}, User: u, Agent: a,
		States: map[string]tools.ToolState{
			"core.CalculatorTool":      {Enabled: true},
			"core.AskUserQuestionTool": {Enabled: true},
			"core.TodoTool":            {Enabled: true},
		}}
	f.Loop = &agentloop.Loop{
		Store: st, Registry: reg, Executors: core.Executors(core.Deps{Todos: board, SubAgents: agentloop.SubAgents{Store: st}}), Lease: time.Minute, Todos: board,
		ToolStates: func(context.Context, int64) (map[string]tools.ToolState, error) { return f.States, nil },
		Driver:     func(*store.LLMConfig) (llm.Driver, error) { return f.Rec, nil },
	}
	return f
}

// Executors rebuilds the loop's core executors over deps (the todo board and the sub-agents
// stay the loop's); executors a test wrapped or added before are replaced.
func (f *Fixture) Executors(deps core.Deps) {
	deps.Todos, deps.SubAgents = f.Loop.Todos, agentloop.SubAgents{Store: f.Store}
	f.Loop.Executors = core.Executors(deps)
}

// NewTask queues a task for the agent by the user.
func (f *Fixture) NewTask(prompt string, maxSteps int) *store.Task {
	f.T.Helper()
	return storetest.Task(f.T, f.Store, f.Agent, f.User.ID, func(nt *store.NewTask) { nt.Prompt, nt.MaxSteps = prompt, maxSteps })
}

// Drain claims and runs every QUEUED task until nothing is claimable, like the daemon.
func (f *Fixture) Drain() {
	f.T.Helper()
	for {
		claimed, err := f.Store.ClaimQueued(context.Background(), "w1", time.Minute, 10)
		if err != nil {
			f.T.Fatal(err)
		}
		if len(claimed) == 0 {
			return
		}
		for i := range claimed {
			f.Loop.Run(context.Background(), nil, &claimed[i], "w1")
		}
	}
}

// Task reads task id from the store.
func (f *Fixture) Task(id int64) *store.Task {
	f.T.Helper()
	task, err := f.Store.Task(context.Background(), id)
	if err != nil {
		f.T.Fatal(err)
	}
	return task
}

// ToolResults maps the provider call ids of a request's tool results to their messages.
func ToolResults(req llm.Request) map[string]llm.Message {
	out := map[string]llm.Message{}
	for _, m := range req.Messages {
		if m.Role == llm.RoleTool {
			out[m.ToolCallID] = m
		}
	}
	return out
}
