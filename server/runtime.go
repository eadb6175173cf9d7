package server

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/agentsvc/svc/agentloop"
	"github.com/agentsvc/svc/api"
	"github.com/agentsvc/svc/llm"
	"github.com/agentsvc/svc/notify"
	"github.com/agentsvc/svc/push"
	"github.com/agentsvc/svc/schedule"
	"github.com/agentsvc/svc/secret"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/task"
	"github.com/agentsvc/svc/toolconfig"
	"github.com/agentsvc/svc/tools/core"
	"github.com/agentsvc/svc/webhook"
	"github.com/agentsvc/svc/worker"
)

// Loop returns the agent loop over the app's store, tools and configuration (built once by
// Open and shared with the client-mode tick endpoint); after every tick it publishes the task
// to its owner's topic on the push channel.
func (a *App) Loop() (*agentloop.Loop, error) {
	if a.loop != nil {
		return a.loop, nil
	}
	return a.buildLoop()
}

func (a *App) buildLoop() (*agentloop.Loop, error) {
	box, err := secret.NewBox(a.MasterKey)
	if err != nil {
		return nil, err
	}
	cfg := a.Config.Current()
	board := &agentloop.TodoBoard{}
	tc := toolconfig.New(a.Store, a.Tools, a.Skills, box)
	execs := core.Executors(core.Deps{Skills: a.Skills, Users: a.Store, Todos: board, Net: a.Net,
		HTTPTimeout: time.Duration(cfg.ToolHTTPTimeout) * time.Second})
	execs[agentloop.MediaToolClass] = &agentloop.MediaExecutor{Store: a.Store, Files: a.Media}
	tasks := task.New(a.Store, a.Tools)
	pub := push.NewService(a.Config.Current, a.Push)
	notifier := &notify.ScheduledRuns{Store: a.Store, Mail: a.mail, Config: a.Config.Current, Log: a.Log}
	publish := func(ctx context.Context, t *store.Task) {
		v, err := tasks.ViewOf(ctx, t)
		if err == nil {
			var data []byte
			if data, err = api.TaskEvent(v); err == nil {
				err = pub.Publish(ctx, push.TaskTopic(t.UserID), data)
			}
		}
		if err != nil {
			a.Log.Warn("publish task", "task_id", t.ID, "err", err)
		}
		if t.CallbackURL != nil && slices.Contains(store.CallbackStates, t.Status) {
			a.hooks.Notify() // the step enqueued a callback: send it now rather than at the next poll
		}
		notifier.TaskSettled(ctx, t) // a scheduled run's task that just finished: mail its owner
	}
	return &agentloop.Loop{
		Store: a.Store, Registry: a.Tools, ToolStates: tc.AgentToolStates, Executors: execs,
		Todos: board, Publish: publish, Retry: tasks.ScheduleRetry, Log: a.Log, Lease: leaseFor(cfg.WorkerStaleMinutes),
		AgentTools: tc,
		Driver:     func(c *store.LLMConfig) (llm.Driver, error) { return a.driver(box, c) },
	}, nil
}

// Webhooks returns the dispatcher of chat callbacks (built once by Open). In server mode the
// worker's owner starts it with the worker daemon and stops it on shutdown (Stop drains the
// POSTs in flight); it polls the outbox every second and wakes when a tick settles a chat with
// a callback_url.
func (a *App) Webhooks() *webhook.Dispatcher { return a.hooks }

// newWebhooks builds the dispatcher: bodies are the chat record of the settled snapshot
// (api.ChatBody, as the per-agent API shows the chat), sent by a client that screens every
// attempt with the app's outbound options (https only) and never follows redirects.
func (a *App) newWebhooks(clock func() time.Time) *webhook.Dispatcher {
	tasks := task.New(a.Store, a.Tools)
	return &webhook.Dispatcher{
		Store: a.Store,
		Render: func(_ context.Context, d store.WebhookDelivery) ([]byte, error) {
			return api.ChatBody(tasks.SnapshotView(d.Snapshot))
		},
		Client: webhook.NewClient(a.Net),
		Clock:  clock,
		Logger: a.Log.With("component", "webhook"),
	}
}

// driver builds the model driver of a stored configuration, opening its sealed key.
func (a *App) driver(box *secret.Box, c *store.LLMConfig) (llm.Driver, error) {
	lc := llm.Config{Driver: c.Driver, Model: c.Model, Temperature: c.Temperature,
		Timeout: time.Duration(a.Config.Current().LLMTimeout) * time.Second}
	if c.BaseURL != nil {
		lc.BaseURL = *c.BaseURL
	}
	if c.APIKeySealed != "" {
		key, err := box.Open(c.APIKeySealed)
		if err != nil {
			return nil, fmt.Errorf("model configuration %d: the API key cannot be opened (was the master key changed?)", c.ID)
		}
		lc.APIKey = string(key)
	}
	if c.MaxTokensOutput != nil {
		lc.MaxTokensOutput = *c.MaxTokensOutput
	}
	if c.Timeout != nil {
		lc.Timeout = time.Duration(*c.Timeout) * time.Second
	}
	return llm.New(lc)
}

// leaseFor is the worker lease: the reaper treats a RUNNING task as orphaned once its lease
// expired, so the lease is the stale period (worker_stale_minutes; 0 disables the reaper and
// leaves a long lease).
func leaseFor(staleMinutes int) time.Duration {
	if staleMinutes <= 0 {
		return 24 * time.Hour
	}
	return time.Duration(staleMinutes) * time.Minute
}

// Worker returns the server-mode daemon draining the queue with loop. Each process gets its
// own worker id, so two processes on one database never run the same task at once (claims
// are atomic in the store).
func (a *App) Worker(loop *agentloop.Loop) *worker.Daemon {
	cfg := a.Config.Current()
	host, _ := os.Hostname()
	id := fmt.Sprintf("%s:%d:%d", host, os.Getpid(), time.Now().UnixNano())
	d := &worker.Daemon{
		MaxWorkers: cfg.MaxWorkers,
		Log:        a.Log,
		Claim: func(ctx context.Context, n int) ([]int64, error) {
			ts, err := a.Store.ClaimQueued(ctx, id, loop.Lease, n)
			ids := make([]int64, len(ts))
			for i, t := range ts {
				ids[i] = t.ID
			}
			return ids, err
		},
		Run: func(stop context.Context, taskID int64) { loop.Run(stop, taskID, id) },
	}
	// Chores run every ReapEvery: reaping (when worker_stale_minutes > 0; 0 disables the reaper),
	// dispatching due scheduled runs and sweeping expired media uploads (always).
	tasks, schedules, reap := task.New(a.Store, a.Tools), schedule.New(a.Store), cfg.WorkerStaleMinutes > 0
	d.Reap = func(ctx context.Context) error {
		var err error
		if reap {
			var ids []int64
			ids, err = a.Store.ReapStale(ctx, a.clock())
			for _, id := range ids { // ORPHANED is transient: the agent's retry chain applies
				if rerr := tasks.Reaped(ctx, id); rerr != nil && err == nil {
					err = rerr
				}
			}
		}
		if _, derr := schedules.DispatchDue(ctx, a.clock()); derr != nil && err == nil {
			err = derr
		}
		if _, serr := a.Media.Sweep(ctx); serr != nil && err == nil { // expired media uploads
			err = serr
		}
		return err
	}
	return d
}
