package agentloop

import (
	"context"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/store"
)

// Observer watches the loop's work for metrics and traces (Loop.Observer; nil observes
// nothing). Each Start method is called when the work begins and returns the context the work
// runs under (a span's) and the function to call when it ends. Implementations must be cheap
// and safe for concurrent use; they never change what the loop does.
type Observer interface {
	// StepStarted: one step (Tick) of task t begins; done gets the task as the step left it
	// (nil) or the step's error.
	StepStarted(ctx context.Context, t *store.Task) (context.Context, func(out *store.Task, err error))
	// ModelCallStarted: the step's model call begins.
	ModelCallStarted(ctx context.Context, c ModelCall) (context.Context, ModelCallObservation)
	// ToolCallStarted: tool call c of task t begins; done gets its recorded status
	// (store.ToolCallExecuted, store.ToolCallFailed) or an infrastructure error.
	ToolCallStarted(ctx context.Context, t *store.Task, c store.ToolCall) (context.Context, func(status string, err error))
}

// ModelCall describes one model call.
type ModelCall struct {
	Task      *store.Task
	Driver    string // the configuration's driver: openai, anthropic, scripted
	Model     string
	Streaming bool // the call is streamed (OnDelta): FirstToken will be called
}

// ModelCallObservation follows one model call.
type ModelCallObservation interface {
	// FirstToken: the first piece of output arrived (streamed calls only; at most once).
	FirstToken()
	// Done: the call returned resp (nil on error) or err.
	Done(resp *llm.Response, err error)
}

// nopObserver observes nothing.
type nopObserver struct{}

func (nopObserver) StepStarted(ctx context.Context, _ *store.Task) (context.Context, func(*store.Task, error)) {
	return ctx, func(*store.Task, error) {}
}

func (nopObserver) ModelCallStarted(ctx context.Context, _ ModelCall) (context.Context, ModelCallObservation) {
	return ctx, nopModelCall{}
}

func (nopObserver) ToolCallStarted(ctx context.Context, _ *store.Task, _ store.ToolCall) (context.Context, func(string, error)) {
	return ctx, func(string, error) {}
}

type nopModelCall struct{}

func (nopModelCall) FirstToken()               {}
func (nopModelCall) Done(*llm.Response, error) {}

func (l *Loop) observer() Observer {
	if l.Observer != nil {
		return l.Observer
	}
	return nopObserver{}
}

// observeModelCall starts observing the model call of req for task t under configuration cfg:
// it wraps req.OnDelta to report the first piece of output, and returns the call's context and
// the function to call with its result.
func (l *Loop) observeModelCall(ctx context.Context, t *store.Task, cfg *store.LLMConfig, req *llm.Request) (context.Context, func(*llm.Response, error)) {
	ctx, obs := l.observer().ModelCallStarted(ctx, ModelCall{Task: t, Driver: cfg.Driver, Model: cfg.Model, Streaming: req.OnDelta != nil})
	if on := req.OnDelta; on != nil {
		first := true
		req.OnDelta = func(d llm.Delta) {
			if first {
				first = false
				obs.FirstToken()
			}
			on(d)
		}
	}
	return ctx, obs.Done
}
