package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/domain/toolpolicy"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

// unknownTool is the class recorded for a call naming no registered tool; it fails when run.
const unknownTool = "unknown.UnknownTool"

// execution is one step's view of a task while its calls are planned and run.
type execution struct {
	loop   *Loop
	task   *store.Task
	agent  *store.Agent
	owner  int64 // the agent's owning user (stepConfig.owner)
	worker string
	states map[string]tools.ToolState
	todos  *taskTodos
	// allowed holds the operations allowed for the rest of the task (allowances).
	allowed map[string]bool
}

// plan turns the model's calls into rows, each passed through the approval gate (gate). The
// first PENDING call is recorded as started (the step runs it right away; see execute).
func (e *execution) plan(calls []llm.ToolCall) []store.NewToolCall {
	out := make([]store.NewToolCall, 0, len(calls))
	defer func() {
		for i := range out {
			if out[i].Status == store.ToolCallPending {
				out[i].Started = true
				return
			}
		}
	}()
	for _, c := range calls {
		args := map[string]any{}
		_ = json.Unmarshal(c.Arguments, &args)
		nc := store.NewToolCall{ProviderCallID: c.ID, ToolClass: unknownTool, Name: c.Name,
			Status: store.ToolCallPending, Arguments: args}
		e.gate(&nc, args)
		out = append(out, nc)
	}
	return out
}

// maxRefusalLen bounds the reason recorded for a refusal (the model's own text may be in it).
const maxRefusalLen = 1000

// gate is the approval gate of one call (issue 26), deciding before anyone is asked, in order:
//  1. a call whose tool is unknown or off, or whose operation is missing, unknown or off, is
//     refused (REJECTED, gate "refused", the reason told to the model): it never reaches an
//     approval, automatic or human;
//  2. the first matching rule of the operation's approval policy (toolpolicy) allows it
//     (PENDING), denies it (REJECTED with the rule's reason) or asks (PENDING_APPROVAL) —
//     an ask rule asks every time, whatever was allowed for the task;
//  3. an operation an earlier approval allowed for the rest of the task runs (gate "task");
//  4. the operation's approval flag decides (declared default, agent override).
//
// A held call carries its operation's approval timeout override, if any.
func (e *execution) gate(nc *store.NewToolCall, args map[string]any) {
	refuse := func(format string, a ...any) {
		reason := fmt.Sprintf(format, a...)
		if len(reason) > maxRefusalLen {
			reason = reason[:maxRefusalLen]
		}
		nc.Status, nc.Gate, nc.Reason = store.ToolCallRejected, store.GateRefused, reason
	}
	t, ok := e.loop.Registry.LookupModelName(nc.Name)
	if !ok {
		refuse("there is no tool named %q", nc.Name)
		return
	}
	spec := t.Spec()
	nc.ToolClass = spec.Class
	st := e.states[spec.Class]
	if !st.Enabled {
		refuse("the tool %s is not enabled for this agent", nc.Name)
		return
	}
	op, err := tools.OperationFor(spec, args)
	if err != nil {
		msg, _, _ := svcerr.Public(err)
		refuse("the tool %s cannot tell which operation to run: %s", nc.Name, msg)
		return
	}
	o, ok := spec.Operation(op)
	if !ok {
		refuse("the tool %s has no operation %q", nc.Name, op)
		return
	}
	nc.Operation = op
	// A call held below waits as long as its operation's override says (the store keeps it only
	// for a held call); nil leaves the agent's timeout in force.
	nc.ApprovalTimeoutSeconds = st.Overrides[op].ApprovalTimeoutSeconds
	enabled, approval := st.Overrides[op].Effective(o)
	if !enabled {
		refuse("the operation %s of %s is disabled for this agent", op, nc.Name)
		return
	}
	callArgs := args
	if d, ok := tools.Discriminator(spec); ok {
		callArgs = withoutKey(args, d)
	}
	switch d, decided, err := policyDecision(st, op, callArgs); {
	case err != nil:
		// A stored policy that no longer reads is no reason to run unasked.
		e.loop.log().Error("approval policy unreadable; asking", "agent_id", e.agent.ID, "tool", spec.Class, "err", err)
		nc.Status = store.ToolCallPendingApproval
		return
	case decided:
		nc.Gate = store.GateRule(d.Rule)
		switch d.Action {
		case toolpolicy.Allow:
		case toolpolicy.Deny:
			nc.Status, nc.Reason = store.ToolCallRejected, d.Reason
		default:
			nc.Status = store.ToolCallPendingApproval
		}
		return
	}
	if !approval {
		return
	}
	if e.allowed[spec.Class+"\x00"+op] {
		nc.Gate = store.GateTask
		return
	}
	nc.Status = store.ToolCallPendingApproval
}

// policyDecision applies the approval policy of operation op as the settings layers hold it:
// the highest layer that has rules for op (agent over group) decides alone.
func policyDecision(st tools.ToolState, op string, args map[string]any) (toolpolicy.Decision, bool, error) {
	for i := len(st.Layers) - 1; i >= 0; i-- {
		raw, ok := st.Layers[i][toolpolicy.Key]
		if !ok || tools.IsUnset(raw) {
			continue
		}
		if m, ok := raw.(map[string]any); ok && m[op] == nil {
			continue
		}
		p, err := toolpolicy.Parse(raw, nil)
		if err != nil {
			return toolpolicy.Decision{}, false, err
		}
		d, ok := p.Decide(op, args)
		return d, ok, nil
	}
	return toolpolicy.Decision{}, false, nil
}

// allowances returns the tool operations (class NUL operation) an approval allowed for the rest
// of the task (store.ToolDecision.AllowForTask), from the task's recorded calls.
func allowances(calls []store.ToolCall) map[string]bool {
	var out map[string]bool
	for _, c := range calls {
		if c.AllowForTask && c.ApprovedArguments != nil {
			if out == nil {
				out = map[string]bool{}
			}
			out[c.ToolClass+"\x00"+c.Operation] = true
		}
	}
	return out
}

// interruptedResult is what the model sees of a call a crash interrupted that is not run
// again (its operation is not repeatable: it may have had effects).
const interruptedResult = "the call was interrupted by a worker restart and was not repeated"

// execute runs calls in order and returns the state the task must enter because of them
// (AWAITING_INPUT after a question, else AWAITING_SUB_AGENTS after a sub-agent call), or ""
// when the loop may go on. Each call is started with a compare-and-swap and its outcome
// recorded at once. A call a crash interrupted (started, never finished) is run again when its
// operation is repeatable (at least once; RestartToolCall counts it, the transcript shows it)
// and otherwise fails as interrupted (at most once: it may have had effects). When turn is set,
// calls are those the step's model turn has just recorded: a call recorded as started (plan) is
// not started again, and the last call's outcome is returned instead of written, for the step's
// finish to record in its own transaction (a crash in between leaves it interrupted, as one
// during the call).
func (e *execution) execute(ctx context.Context, calls []store.ToolCall, turn bool) (string, *store.ToolResult, error) {
	l, outcome := e.loop, ""
	var last *store.ToolResult
	for i, c := range calls {
		switch {
		case turn && c.ExecutedAt != nil:
			// started with its row (NewToolCall.Started)
		case c.ExecutedAt != nil && e.repeatable(c):
			if err := l.Store.RestartToolCall(ctx, e.task.ID, e.worker, c.ID); err != nil {
				return "", nil, err
			}
		default:
			if err := l.Store.BeginToolCall(ctx, e.task.ID, e.worker, c.ID); err != nil {
				if !errors.Is(err, svcerr.ErrInvalidState) {
					return "", nil, err
				}
				// Started before a crash and never finished: it may have had effects, so it is
				// not run again; the model is told.
				if err := e.record(ctx, c, store.ToolCallFailed, resultRecord{Error: interruptedResult}); err != nil {
					return "", nil, err
				}
				continue
			}
		}
		cctx, observed := l.observer().ToolCallStarted(ctx, e.task, c)
		res, status, err := e.run(cctx, c)
		observed(status, err)
		if err != nil {
			return "", nil, err
		}
		if res.Pause != nil && res.Pause.Kind == tools.PauseQuestion {
			var qs []store.Question
			if err := json.Unmarshal(res.Pause.Questions, &qs); err != nil {
				status, res = store.ToolCallFailed, tools.Result{}
				if err := e.record(ctx, c, status, resultRecord{Error: "malformed question batch"}); err != nil {
					return "", nil, err
				}
				continue
			}
			if _, err := l.Store.RecordQuestions(ctx, e.task.ID, e.worker, c.ProviderCallID, qs); err != nil {
				return "", nil, err
			}
			outcome = taskstate.AwaitingInput
		}
		if res.Pause != nil && res.Pause.Kind == tools.PauseSubAgent && outcome == "" {
			outcome = taskstate.AwaitingSubAgents // a pending question is answered first
		}
		rec := resultRecord{Content: res.Content, Data: res.Data}
		if status == store.ToolCallFailed {
			rec = resultRecord{Error: res.Content}
		}
		rec = budgeted(rec, e.resultBudget(c))
		if turn && i == len(calls)-1 {
			raw, err := json.Marshal(rec)
			if err != nil {
				return "", nil, err
			}
			last = &store.ToolResult{CallID: c.ID, ToolCallUpdate: store.ToolCallUpdate{Status: status, Result: raw}}
			continue
		}
		if err := e.record(ctx, c, status, rec); err != nil {
			return "", nil, err
		}
	}
	return outcome, last, nil
}

// repeatable reports whether call c's operation is declared safe to run again
// (tools.Operation.Repeatable), as its tool is registered now: a tool no longer registered, or
// an operation it no longer declares, is not.
func (e *execution) repeatable(c store.ToolCall) bool {
	spec, ok := e.loop.Registry.Spec(c.ToolClass)
	if !ok {
		return false
	}
	o, ok := spec.Operation(c.Operation)
	return ok && o.Repeatable
}

// run executes one started call. A tool's own failure (ToolError) is a FAILED call the model
// sees; only infrastructure failures are returned as errors.
func (e *execution) run(ctx context.Context, c store.ToolCall) (tools.Result, string, error) {
	failed := func(msg string) (tools.Result, string, error) {
		return tools.Result{Content: msg}, store.ToolCallFailed, nil
	}
	spec, ok := e.loop.Registry.Spec(c.ToolClass)
	if !ok {
		return failed(fmt.Sprintf("there is no tool named %q", c.Name))
	}
	st := e.states[spec.Class]
	if !st.Enabled {
		return failed(fmt.Sprintf("the tool %s is not enabled for this agent", c.Name))
	}
	o, ok := spec.Operation(c.Operation)
	if !ok {
		return failed(fmt.Sprintf("the tool %s has no operation %q", c.Name, c.Operation))
	}
	if enabled, _ := st.Overrides[o.Name].Effective(o); !enabled {
		return failed(fmt.Sprintf("the operation %s of %s is disabled for this agent", o.Name, c.Name))
	}
	exec, ok := e.loop.executor(spec.Class)
	if !ok {
		return failed(fmt.Sprintf("the tool %s cannot run in this release", c.Name))
	}
	args := c.ProposedArguments
	if c.ApprovedArguments != nil {
		args = c.ApprovedArguments // what was approved is what runs
	}
	if d, ok := tools.Discriminator(spec); ok {
		args = withoutKey(args, d)
	}
	settings, _ := tools.Cascade(spec, st.Layers...)
	res, err := exec.Execute(ctx, tools.Call{Operation: o.Name, Args: args, Settings: settings, TaskID: e.task.ID,
		MessageSequence: c.MessageSequence, AgentID: e.agent.ID, OwnerUserID: e.owner, UserID: e.task.UserID, ProviderCallID: c.ProviderCallID})
	var te *tools.ToolError
	switch {
	case errors.As(err, &te):
		return failed(te.Msg)
	case err != nil:
		e.loop.log().Error("tool failed", "task_id", e.task.ID, "tool", spec.Class, "err", err)
		return failed("the tool failed unexpectedly")
	}
	return res, store.ToolCallExecuted, nil
}

// executor returns the executor of tool class: its entry in Executors, else the registered
// tool itself when it runs itself. Plugin tools come and go while the service runs (an MCP
// server's tools): a registered tool that runs itself needs no entry in Executors.
func (l *Loop) executor(class string) (tools.Executor, bool) {
	if x, ok := l.Executors[class]; ok {
		return x, true
	}
	if t, found := l.Registry.Lookup(class); found {
		x, ok := t.(tools.Executor)
		return x, ok
	}
	return nil, false
}

func (e *execution) record(ctx context.Context, c store.ToolCall, status string, r resultRecord) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return e.loop.Store.UpdateToolCall(ctx, e.task.ID, e.worker, c.ID, store.ToolCallUpdate{Status: status, Result: raw})
}

// ownerUser is the user who owns the agent (document 2, schema rule 4): the user of a personal
// principal, or 0 for a group-owned agent.
func (l *Loop) ownerUser(ctx context.Context, a *store.Agent) (int64, error) {
	id, err := l.Store.UserOfPrincipal(ctx, a.PrincipalID)
	if errors.Is(err, svcerr.ErrNotFound) {
		return 0, nil
	}
	return id, err
}

func withoutKey(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// taskTodos keeps the todo tool's checklist in the task's data; changes are written with the
// step's outcome (under the lease).
type taskTodos struct {
	data    map[string]any
	changed []core.Todo
	dirty   bool
}

// TodoBoard is the core.TodoStore the todo executor is built with: it finds the checklist of
// the task being ticked (each tick registers its task's list for the duration of the step).
type TodoBoard struct{ m sync.Map }

var _ core.TodoStore = (*TodoBoard)(nil)

func (b *TodoBoard) list(taskID int64) (*taskTodos, error) {
	v, ok := b.m.Load(taskID)
	if !ok {
		return nil, fmt.Errorf("task %d is not being ticked", taskID)
	}
	return v.(*taskTodos), nil
}

// Todos returns the checklist of a task being ticked.
func (b *TodoBoard) Todos(ctx context.Context, taskID int64) ([]core.Todo, error) {
	t, err := b.list(taskID)
	if err != nil {
		return nil, err
	}
	return t.get(), nil
}

// SaveTodos replaces the checklist; it is written with the step's outcome.
func (b *TodoBoard) SaveTodos(ctx context.Context, taskID int64, todos []core.Todo) error {
	t, err := b.list(taskID)
	if err != nil {
		return err
	}
	t.changed, t.dirty = append([]core.Todo(nil), todos...), true
	return nil
}

func (t *taskTodos) get() []core.Todo {
	if t.dirty {
		return append([]core.Todo(nil), t.changed...)
	}
	var out []core.Todo
	if raw, ok := t.data["todos"]; ok {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &out)
	}
	return out
}

func (t *taskTodos) flush() map[string]any {
	if !t.dirty {
		return nil
	}
	return map[string]any{"todos": t.changed}
}
