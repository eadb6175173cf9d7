// Package agentloop runs agents: one Tick is one model turn plus the execution of the tool
// calls it produced that need no approval, persisted step by step under the task's lease so a
// crash between steps loses nothing and never executes a tool call twice. The server's worker
// daemon (Run) and the client-mode tick endpoint both call Tick.
package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/platform/startstop"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// Loop holds what a tick needs. Every field except Publish and Log is required.
type Loop struct {
	Store    Store
	Registry *tools.Registry
	// ToolStates gives each registered tool's state for an agent (toolconfig.AgentToolStates).
	ToolStates func(ctx context.Context, agentID int64) (map[string]tools.ToolState, error)
	// Executors run tool calls, keyed by tool class. A class with no entry here is run by its
	// registered tool when that tool implements tools.Executor (plugin tools such as MCP tools).
	Executors map[string]tools.Executor
	// Driver builds the model driver of a stored configuration (it opens the sealed key).
	Driver func(cfg *store.LLMConfig) (llm.Driver, error)
	// Publish is told the task after every tick (push channel); nil publishes nothing.
	Publish func(ctx context.Context, t *store.Task)
	// Lease is how long a worker's hold on a task lasts without news: Run extends it at each
	// step boundary and, while a step runs, every third of it (DefaultLease in server mode), so
	// a dead worker's task is taken back within about a lease.
	Lease time.Duration
	// StepBound is how long one step may keep its lease alive (worker_stale_minutes): a step
	// running longer is taken to be hung, its lease lapses and the reaper takes the task back;
	// 0 keeps it alive for as long as the step runs.
	StepBound time.Duration
	// Clock paces the heartbeat of Run; nil: real timers.
	Clock startstop.Clock
	Log   *slog.Logger
	// Todos must be the TodoBoard the todo executor was built with (core.Deps.Todos).
	Todos *TodoBoard
	// Retry schedules the agent's automatic retry of a FAILED task when its error code is
	// transient (task.Service.ScheduleRetryAfter), waiting at least atLeast (the model
	// provider's Retry-After, zero when none; the service bounds it); nil schedules none.
	Retry func(ctx context.Context, taskID int64, atLeast time.Duration) (bool, error)
	// Observer watches steps, model calls and tool calls (metrics, traces); nil observes
	// nothing.
	Observer Observer
	// CacheConfig keeps what a step reads of its agent's configuration (the agent, ToolStates,
	// the model configuration) between steps and runs, per agent, until the store's
	// configuration version moves (Loop.config); false reads it every step.
	CacheConfig bool
	configs     configCache
}

// Tick performs one step of task id, whose lease workerID holds. It returns the task as the
// step left it. Errors: ErrInvalidState when the task is not RUNNING under workerID's lease
// (aborted, reaped or claimed by someone else: nothing is written); other errors are
// infrastructure failures (the task keeps its state and the reaper or a retry recovers it).
func (l *Loop) Tick(ctx context.Context, id int64, workerID string) (*store.Task, error) {
	t, err := l.Store.Task(ctx, id)
	if err != nil {
		return nil, err
	}
	return l.tick(ctx, t, workerID)
}

// tick is Tick on task t as last read or written (the claim's row, or the previous step's
// result within one Run: the task cannot change meanwhile except by leaving RUNNING under
// workerID's lease, which every write of the step checks).
func (l *Loop) tick(ctx context.Context, t *store.Task, workerID string) (*store.Task, error) {
	if t.Status != taskstate.Running || t.LeaseOwner == nil || *t.LeaseOwner != workerID {
		return nil, svcerr.New(svcerr.ErrInvalidState, "task %d is %s and not leased by %s", t.ID, t.Status, workerID)
	}
	sctx, observed := l.observer().StepStarted(ctx, t)
	out, err := l.step(sctx, t, workerID)
	observed(out, err)
	if err != nil {
		return nil, err
	}
	if l.Publish != nil {
		l.Publish(ctx, out)
	}
	return out, nil
}

// DefaultLease is the server-mode worker's lease (Loop.Lease): short, so that the task of a
// worker that died resumes on another within about a minute (plus the reaper's period).
const DefaultLease = time.Minute

// handBackTimeout bounds the write that hands a task back after a stop or a failed step.
const handBackTimeout = 10 * time.Second

// Run ticks task t (as its claim by workerID returned it) until it leaves RUNNING, its lease is lost, or stop closes. stop is checked
// at each step boundary: the step in flight finishes, then the task is handed back (QUEUED,
// lease cleared) so another worker resumes it at once. ctx bounds the step itself: when it ends
// mid-step after stop closed (a shutdown that cannot wait any longer), the step's calls are
// cancelled and the task is handed back too, counting no recovery (the model is asked again; a
// tool call cancelled after it started is treated as after a crash: run again when repeatable, else reported interrupted). A step that fails for a reason of the worker's (database, a cancelled context) hands the
// task back counting a recovery (store.HandBack), except for a busy database (store.IsTransient:
// a lock timeout, too many connections), which is no fault of the task's. The hand-back is
// retried until handBackTimeout, so a failed step never leaves its task RUNNING under a lease
// nobody renews. A nil stop never closes. Each step starts from the task row the previous one
// wrote (the claim's for the first), so a run reads the task row once per claim, not per step,
// and its conversation once, then only what others append (transcript.go).
func (l *Loop) Run(ctx context.Context, stop <-chan struct{}, t *store.Task, workerID string) {
	l.RunClaimed(ctx, stop, Claimed{Task: t}, workerID)
}

// RunClaimed is Run for a task as Claim returned it: its steps start from the conversation the
// claim read (transcript.go).
func (l *Loop) RunClaimed(ctx context.Context, stop <-chan struct{}, c Claimed, workerID string) {
	t, id := c.Task, c.Task.ID
	ctx = context.WithValue(ctx, inRun{}, newTranscript(c.Messages))
	for {
		select {
		case <-stop:
			l.handBack(ctx, id, workerID, false)
			return
		default:
		}
		out, err := l.tickAlive(ctx, t, workerID)
		if err != nil {
			if errors.Is(err, svcerr.ErrInvalidState) {
				return // aborted, reaped or claimed by another worker meanwhile: nothing of ours to do
			}
			if stopping(ctx, stop) {
				// The stop's grace ran out mid-step (its model or tool call was cancelled): the
				// worker's doing, not the task's, so no recovery is counted.
				l.log().Warn("step cancelled by the stop; handing the task back", "task_id", id, "worker", workerID)
				l.handBack(ctx, id, workerID, false)
				return
			}
			l.log().Error("task step failed; handing the task back", "task_id", id, "worker", workerID, "err", err)
			l.handBack(ctx, id, workerID, !store.IsTransient(err)) // a busy database is not the task's failure
			return
		}
		if t = out; t.Status != taskstate.Running {
			return
		}
		if l.Lease > 0 {
			continue // the step's last write (finish, RUNNING) renewed the lease
		}
		if err := l.Store.ExtendLease(ctx, id, workerID, l.Lease); err != nil {
			if !errors.Is(err, svcerr.ErrInvalidState) && !errors.Is(err, svcerr.ErrNotFound) {
				l.handBack(ctx, id, workerID, !store.IsTransient(err)) // never leave it RUNNING under our lease
			}
			return // aborted or reaped meanwhile: nothing more to do
		}
	}
}

// stopping reports whether the run was told to stop and its context has ended: the step in
// flight was cancelled by a stop that could wait no longer.
func stopping(ctx context.Context, stop <-chan struct{}) bool {
	if ctx.Err() == nil {
		return false
	}
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// tickAlive is Tick while a heartbeat extends the lease every third of it, for at most
// StepBound: a long model call or tool keeps its task, a hung one lets the lease lapse.
func (l *Loop) tickAlive(ctx context.Context, t *store.Task, workerID string) (*store.Task, error) {
	done := make(chan struct{})
	beat := make(chan struct{})
	go func(id int64) {
		defer close(beat)
		l.heartbeat(ctx, done, id, workerID)
	}(t.ID)
	out, err := l.tick(ctx, t, workerID)
	close(done)
	<-beat
	return out, err
}

func (l *Loop) heartbeat(ctx context.Context, done <-chan struct{}, id int64, workerID string) {
	clock := l.Clock
	if clock == nil {
		clock = startstop.RealClock(nil)
	}
	started := clock.Now()
	for {
		timer := clock.NewTimer(l.Lease / 3)
		select {
		case <-done:
			timer.Stop()
			return
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
		if l.StepBound > 0 && clock.Now().Sub(started) >= l.StepBound {
			l.log().Warn("step exceeds worker_stale_minutes; its lease is left to lapse", "task_id", id, "worker", workerID)
			return
		}
		if err := l.Store.ExtendLease(ctx, id, workerID, l.Lease); err != nil {
			return // the step ended meanwhile, or the task was aborted: the step finds out itself
		}
	}
}

// handBack returns task id to the queue (store.HandBack) and publishes it; when the hand-back
// failed the task instead (too many recoveries in a row), the agent's automatic retry and the
// parent's resumption apply as for any failure.
func (l *Loop) handBack(ctx context.Context, id int64, workerID string, recovered bool) {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handBackTimeout)
	defer cancel()
	t, err := l.retryHandBack(hctx, id, workerID, recovered)
	if err != nil {
		if !errors.Is(err, svcerr.ErrInvalidState) {
			l.log().Error("hand back task", "task_id", id, "worker", workerID, "err", err)
		}
		return
	}
	if t.Status == taskstate.Failed && l.Retry != nil {
		if _, err := l.Retry(hctx, id, 0); err != nil {
			l.log().Error("schedule retry", "task_id", id, "err", err)
		}
		if t, err = l.Store.Task(hctx, id); err != nil {
			return
		}
	}
	if l.Publish != nil {
		l.Publish(hctx, t)
	}
	if t.Status == taskstate.Failed {
		l.settle(hctx, t)
	}
}

func (l *Loop) log() *slog.Logger {
	if l.Log != nil {
		return l.Log
	}
	return slog.Default()
}

// step is the body of Tick.
func (l *Loop) step(ctx context.Context, t *store.Task, worker string) (*store.Task, error) {
	conf, err := l.config(ctx, t.AgentID, t.UserID)
	if err != nil {
		return nil, fmt.Errorf("configuration of task %d: %w", t.ID, err)
	}
	agent, states := conf.agent, conf.states
	var calls []store.ToolCall // a task that recorded none (every first step) has none to read
	if t.ToolCallCount > 0 {
		if calls, err = l.Store.ToolCalls(ctx, t.ID); err != nil {
			return nil, err
		}
	}
	todos := &taskTodos{data: t.Data}
	if l.Todos != nil {
		l.Todos.m.Store(t.ID, todos)
		defer l.Todos.m.Delete(t.ID)
	}
	run := &execution{loop: l, task: t, agent: agent, owner: conf.owner, worker: worker, states: states, todos: todos}

	// Calls approved since the last step (or interrupted by a crash) are settled first, without
	// a model turn.
	current := calls // the calls as the model request must show them
	if pending := runnable(calls); len(pending) > 0 {
		outcome, _, err := run.execute(ctx, pending, false)
		if err != nil {
			return nil, err
		}
		if outcome != "" {
			return l.finish(ctx, t, worker, store.StepOutcome{Status: outcome, Data: todos.flush()})
		}
		if current, err = l.Store.ToolCalls(ctx, t.ID); err != nil {
			return nil, err
		}
	}
	// A task resumed after a handover completes with its child's answer; one with sub-agents
	// still unsettled (started alongside an approval or a question) waits for them.
	if answer, err := l.handoverAnswer(ctx, t, calls); err != nil {
		return nil, err
	} else if answer != nil {
		return l.finish(ctx, t, worker, store.StepOutcome{Status: taskstate.Completed, Answer: answer, Data: todos.flush()})
	}
	if n, err := l.unsettledChildren(ctx, t, calls); err != nil {
		return nil, err
	} else if n > 0 {
		return l.finish(ctx, t, worker, store.StepOutcome{Status: taskstate.AwaitingSubAgents, Data: todos.flush()})
	}
	if t.StepsUsed >= t.MaxSteps {
		return l.finish(ctx, t, worker, store.StepOutcome{Status: taskstate.Aborted,
			Data: mergeData(todos.flush(), map[string]any{"max_steps_reached": true})})
	}

	cfg := conf.llm
	if cfg == nil {
		return l.fail(ctx, t, worker, taskstate.CodeNoLLMConfiguration,
			"no model configuration: add a default one to the agent's group or a global default", nil)
	}
	driver, err := l.Driver(cfg)
	if err != nil {
		return l.fail(ctx, t, worker, taskstate.CodeBadRequest, "model configuration unusable: "+err.Error(), nil)
	}
	conv := &conversation{loop: l, task: t, agent: agent, states: states, calls: current, cfg: cfg, driver: driver, worker: worker}
	if conf.summary != nil && conf.summary.ID != cfg.ID {
		if conv.summariser, err = l.Driver(conf.summary); err != nil {
			l.log().WarnContext(ctx, "summary model configuration unusable; the agent's own writes summaries", "task_id", t.ID, "err", err)
		} else {
			conv.summaryCfg = conf.summary
		}
	}
	if conf.budgets {
		if u, err := l.overBudget(ctx, t); err != nil {
			return nil, err
		} else if u != nil {
			return l.failBudget(ctx, t, worker, u)
		}
	}
	req, err := conv.build(ctx)
	if err != nil {
		return nil, err
	}
	if req, err = conv.fit(ctx, req, false); err != nil {
		return l.failTooLong(ctx, t, worker, err)
	}
	deltas := newDeltaWriter(ctx, l, t.ID, worker)
	req.OnDelta = func(d llm.Delta) { deltas.add(d.Text, d.Reasoning) }
	mctx, observed := l.observeModelCall(ctx, t, cfg, &req)
	resp, err := driver.Complete(mctx, req)
	streamed := deltas.end()
	observed(resp, err)
	if le := (*llm.Error)(nil); errors.As(err, &le) && le.Code == taskstate.CodeContextTooLong && ctx.Err() == nil {
		// The provider refused the request as too long: compact and try once more.
		if req, err = conv.fit(ctx, req, true); err != nil {
			return l.failTooLong(ctx, t, worker, err)
		}
		deltas = newDeltaWriter(ctx, l, t.ID, worker)
		req.OnDelta = func(d llm.Delta) { deltas.add(d.Text, d.Reasoning) }
		mctx, observed = l.observeModelCall(ctx, t, cfg, &req)
		resp, err = driver.Complete(mctx, req)
		streamed = deltas.end() || streamed
		observed(resp, err)
		if errors.As(err, &le) && le.Code == taskstate.CodeContextTooLong {
			return l.fail(ctx, t, worker, taskstate.CodeContextTooLong, tooLongAfterCompaction+" ("+le.Message+")", nil)
		}
	}
	if err != nil && ctx.Err() != nil {
		// The worker gave up the step (a shutdown that could not wait): not the model's failure.
		return nil, fmt.Errorf("model call of task %d: %w", t.ID, ctx.Err())
	}
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) {
			// The provider's Retry-After (429, 503) holds the automatic retry back.
			return l.failWait(ctx, t, worker, le.Code, le.Message, le.RetryAfter)
		}
		return l.fail(ctx, t, worker, taskstate.CodeUnknown, "model call failed", err)
	}

	// Persist the assistant turn and its calls before running any of them.
	reasoning, _ := json.Marshal(resp.Reasoning)
	if len(resp.Reasoning) == 0 {
		reasoning = nil
	}
	msg := store.NewTaskMessage{Role: store.RoleAssistant, Text: resp.Text, Reasoning: reasoning,
		InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens, Streamed: streamed}
	for _, c := range resp.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, store.MessageToolCall{ProviderCallID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	usage := store.StepOutcome{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens, Steps: 1,
		Call: &store.ModelCall{LLMConfigID: cfg.ID, Model: cfg.Model, InputTokens: resp.Usage.InputTokens,
			CachedInputTokens: min(resp.Usage.CachedInputTokens, resp.Usage.InputTokens), OutputTokens: resp.Usage.OutputTokens,
			Prices: cfg.Prices}}
	if len(resp.ToolCalls) == 0 {
		// An answer: the turn and the step's outcome in one transaction.
		answer := resp.Text
		usage.Status, usage.Answer, usage.Data = taskstate.Completed, &answer, todos.flush()
		out, stored, err := l.Store.FinishTurn(ctx, t.ID, worker, msg, usage)
		if err != nil {
			return nil, err
		}
		wrote(ctx, stored)
		return l.settle(ctx, out), nil
	}
	run.allowed = allowances(current)
	stored, recorded, err := l.Store.AppendAssistantTurn(ctx, t.ID, worker, msg, run.plan(resp.ToolCalls))
	if err != nil {
		return nil, err
	}
	wrote(ctx, stored)
	outcome, last, err := run.execute(ctx, runnable(recorded), true)
	if err != nil {
		return nil, err
	}
	usage.Status, usage.ToolResult = outcome, last
	if outcome == "" {
		usage.Status = taskstate.Running
	}
	for _, c := range recorded {
		if c.Status == store.ToolCallPendingApproval {
			usage.Status = taskstate.PendingApproval
		}
	}
	if usage.Status == taskstate.Running && t.StepsUsed+1 >= t.MaxSteps {
		usage.Status, usage.Data = taskstate.Aborted, map[string]any{"max_steps_reached": true}
	}
	usage.Data = mergeData(usage.Data, todos.flush())
	return l.finish(ctx, t, worker, usage)
}

// unsettledChildren counts the sub-agent tasks of t not settled yet; only a call of a tool
// whose executor delegates (tools.Delegator) creates children, so a task without one has none
// to count.
func (l *Loop) unsettledChildren(ctx context.Context, t *store.Task, calls []store.ToolCall) (int64, error) {
	for _, c := range calls {
		if _, ok := l.delegator(c.ToolClass); ok {
			return l.Store.UnsettledChildren(ctx, t.ID)
		}
	}
	return 0, nil
}

// finish records the step's outcome, then resumes a parent whose sub-agents have all settled
// (see settle; FAILED is settled by fail, once its automatic retry is decided).
func (l *Loop) finish(ctx context.Context, t *store.Task, worker string, o store.StepOutcome) (*store.Task, error) {
	if o.Status == taskstate.Running && ctx.Value(inRun{}) != nil {
		o.Lease = l.Lease // Run's renewal between steps, in the same write
	}
	out, err := l.Store.FinishStep(ctx, t.ID, worker, o)
	if err != nil || o.Status == taskstate.Failed {
		return out, err
	}
	return l.settle(ctx, out), nil
}

// fail ends the task FAILED with code, and schedules the agent's automatic retry for
// transient codes.
func (l *Loop) fail(ctx context.Context, t *store.Task, worker, code, msg string, cause error) (*store.Task, error) {
	if cause != nil {
		l.log().Error("task failed", "task_id", t.ID, "code", code, "err", cause)
	}
	return l.failWait(ctx, t, worker, code, msg, 0)
}

// failWait is fail for a failure whose cause asked for a wait before the next attempt (the
// model provider's Retry-After): the automatic retry waits at least retryAfter.
func (l *Loop) failWait(ctx context.Context, t *store.Task, worker, code, msg string, retryAfter time.Duration) (*store.Task, error) {
	if len(msg) > 1000 {
		msg = msg[:1000]
	}
	out, err := l.finish(ctx, t, worker, store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: code, Message: msg}})
	if err != nil {
		return nil, err
	}
	if l.Retry != nil {
		scheduled, err := l.Retry(ctx, t.ID, retryAfter)
		if err != nil {
			return nil, err
		}
		if scheduled {
			if out, err = l.Store.Task(ctx, t.ID); err != nil {
				return nil, err
			}
		}
	}
	return l.settle(ctx, out), nil
}

// request builds the model request from the stored conversation: user and assistant turns in
// order, and after each assistant turn one tool result per call, derived from the call's row
// (executed result, failure, rejection with its reason, or the user's answers).
// calls are the task's tool calls as the step read them (the step's own writes since are on
// calls that are no longer runnable, which the step re-reads: see step).
func (l *Loop) request(ctx context.Context, t *store.Task, a *store.Agent, states map[string]tools.ToolState, calls []store.ToolCall, sm *store.Summary) (llm.Request, []int64, error) {
	msgs, err := l.messages(ctx, t)
	if err != nil {
		return llm.Request{}, nil, err
	}
	var batches []store.QuestionBatch
	if len(calls) > 0 { // a question batch belongs to a tool call
		if batches, err = l.Store.QuestionBatches(ctx, t.ID); err != nil {
			return llm.Request{}, nil, err
		}
	}
	byCall := map[string]store.ToolCall{}
	for _, c := range calls {
		byCall[c.ProviderCallID] = c
	}
	answers := map[string]store.QuestionBatch{}
	for _, b := range batches {
		answers[b.ToolCallID] = b
	}
	// Sub-agent calls: the result is derived from the child tasks (status, answer or error).
	subs, err := l.subAgentResults(ctx, calls)
	if err != nil {
		return llm.Request{}, nil, err
	}
	req := llm.Request{System: a.SystemPrompt}
	var seqs []int64 // the stored message each of req.Messages comes from
	if sm != nil {
		req.System = withSummary(a.SystemPrompt, sm.Text)
	}
	for _, m := range msgs {
		if sm != nil && int64(m.Sequence) <= sm.ThroughSequence {
			if m.Role == store.RoleAssistant {
				req.Compacted++
			}
			continue // the summary stands in for it
		}
		switch m.Role {
		case store.RoleUser:
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Text: m.Text})
		case store.RoleAssistant:
			am := llm.Message{Role: llm.RoleAssistant, Text: m.Text}
			if len(m.Reasoning) > 0 {
				_ = json.Unmarshal(m.Reasoning, &am.Reasoning)
			}
			for _, c := range m.ToolCalls {
				am.ToolCalls = append(am.ToolCalls, llm.ToolCall{ID: c.ProviderCallID, Name: c.Name, Arguments: c.Arguments})
			}
			req.Messages = append(req.Messages, am)
			for _, c := range m.ToolCalls {
				text, isErr := toolResult(byCall[c.ProviderCallID], answers)
				if sub, ok := subs[c.ProviderCallID]; ok {
					text, isErr = sub, false
				}
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: c.ProviderCallID, Text: text, IsError: isErr})
			}
		}
		for len(seqs) < len(req.Messages) {
			seqs = append(seqs, int64(m.Sequence))
		}
	}
	for _, mt := range l.Registry.ModelTools() {
		st, ok := states[mt.Class]
		if !ok || !st.Enabled {
			continue
		}
		req.Tools = append(req.Tools, llm.ToolDef{Name: mt.Name, Description: mt.Description, Parameters: mt.Parameters})
	}
	return req, seqs, nil
}

// toolResult is what the model is told about a call.
func toolResult(c store.ToolCall, answers map[string]store.QuestionBatch) (string, bool) {
	if b, ok := answers[c.ProviderCallID]; ok && b.Answers != nil {
		out, _ := json.Marshal(map[string]any{"answers": b.Answers})
		return string(out), false
	}
	switch c.Status {
	case store.ToolCallExecuted:
		var r resultRecord
		if json.Unmarshal(c.Result, &r) == nil && r.Content != "" {
			return cutResult(r.Content, r.SentChars), false
		}
		return string(c.Result), false
	case store.ToolCallFailed:
		var r resultRecord
		if json.Unmarshal(c.Result, &r) == nil && r.Error != "" {
			return "Error: " + cutResult(r.Error, r.SentChars), true
		}
		return "Error: the tool call failed", true
	case store.ToolCallRejected:
		reason := "no reason given"
		if c.Reason != nil && strings.TrimSpace(*c.Reason) != "" {
			reason = *c.Reason
		}
		if c.Gate == store.GateRefused {
			return "This tool call was refused before it ran: " + reason, true
		}
		if n, ok := c.PolicyRule(); ok {
			return fmt.Sprintf("This tool call was denied by the agent's approval policy (rule %d). Reason: %s", n, reason), true
		}
		return "The user rejected this tool call. Reason: " + reason, true
	}
	return "The tool call has no result.", true
}

// resultRecord is how a call's outcome is stored in the transcript.
type resultRecord struct {
	Content string          `json:"content,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
	Error   string          `json:"error,omitempty"`
	// SentChars is set when Content (or Error) passed the call's budget: the characters of it
	// the model is sent (see budgeted).
	SentChars *int `json:"sent_chars,omitempty"`
}

// runnable returns the calls that may run now: pending or approved, and never started.
func runnable(calls []store.ToolCall) []store.ToolCall {
	var out []store.ToolCall
	for _, c := range calls {
		if c.Status == store.ToolCallPending || c.Status == store.ToolCallApproved {
			out = append(out, c)
		}
	}
	return out
}

func mergeData(a, b map[string]any) map[string]any {
	if len(a) == 0 {
		return b
	}
	for k, v := range b {
		a[k] = v
	}
	return a
}
