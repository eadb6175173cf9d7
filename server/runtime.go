package server

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/agentsvc/svc/internal/platform/taskstream"

	"github.com/agentsvc/svc/agentloop"
	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/api"
	"github.com/agentsvc/svc/internal/domain/agent"
	"github.com/agentsvc/svc/internal/domain/agenttemplate"
	"github.com/agentsvc/svc/internal/domain/apikey"
	"github.com/agentsvc/svc/internal/domain/approval/inbox"
	"github.com/agentsvc/svc/internal/domain/chat"
	"github.com/agentsvc/svc/internal/domain/group"
	"github.com/agentsvc/svc/internal/domain/mail"
	"github.com/agentsvc/svc/internal/domain/notification"
	"github.com/agentsvc/svc/internal/domain/picture"
	"github.com/agentsvc/svc/internal/domain/runtimesettings"
	"github.com/agentsvc/svc/internal/domain/schedule"
	"github.com/agentsvc/svc/internal/domain/sso"
	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/domain/usage"
	"github.com/agentsvc/svc/internal/domain/user"
	"github.com/agentsvc/svc/internal/jobs/mailqueue"
	"github.com/agentsvc/svc/internal/jobs/retention"
	"github.com/agentsvc/svc/internal/jobs/worker"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/metrics"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/platform/pgwake"
	"github.com/agentsvc/svc/internal/platform/push"
	"github.com/agentsvc/svc/internal/platform/secret"
	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/internal/platform/startstop"
	"github.com/agentsvc/svc/internal/platform/tracing"
	"github.com/agentsvc/svc/internal/platform/webhook"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/plugins"
	"github.com/agentsvc/svc/plugins/mcp"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools/core"
	"github.com/agentsvc/svc/tools/toolconfig"
)

// Services are the app's services, each built once by Open and shared: the handlers' (api.Deps)
// and those of the background work (the agent loop, the worker daemon, the callback
// dispatcher), so a step's publish hook, the daemon and the handlers use the same instances.
type Services struct {
	api.Deps
	Skills   *skill.Index                      // shipped skills, then plugins' skill folders
	Secrets  *secret.Box                       // seals secrets at rest (model API keys, password-typed settings)
	Hub      *push.Hub                         // the embedded push hub; stopped by Close
	Loop     *agentloop.Loop                   // runs task steps: the daemon (server mode) and the tick endpoint (client mode)
	Daemon   *worker.Daemon[agentloop.Claimed] // server mode: drains the task queue (App.Start)
	Webhooks *webhook.Dispatcher
	Mails    *mailqueue.Dispatcher // sends the mail outbox (every mode; App.Start)
	MCP      *mcp.Manager          // the MCP servers of plugins; closed by Close
	Metrics  *metrics.Metrics      // the Prometheus registry and metrics ({prefix}/metrics)
	Tracer   *tracing.Tracer       // OpenTelemetry spans (no-op unless otel_endpoint is set); shut down by Close
	Wakeups  *pgwake.Listener      // PostgreSQL: other processes' commits wake this one's loops (App.Start)
}

// buildServices builds the services over what Open prepared (store, secrets, accounts, hub,
// tools, media). The callback dispatcher comes before the loop, whose steps wake it; the loop
// before the tick endpoint's client and the daemon, which drive it.
func (a *App) buildServices() {
	s, cfg := a.Services, a.Config.Current()
	s.Groups = group.New(s.Store, s.Secrets).WithLLMNet(func() netguard.Options {
		return group.LLMNet(a.Net, s.Config.Current().LLMAllowedHosts)
	})
	s.Groups.WithMedia(s.Media) // files of a deleted group's assets
	s.Agents = agent.New(s.Store)
	s.Users = user.New(s.Store, s.Accounts, s.Media)
	s.Search = a.searchProviders
	s.PluginAdmin = &plugins.Admin{Runtime: s.Plugins, Config: s.Config.Current, Clock: a.clock,
		Net: a.Net, Timeout: time.Duration(cfg.ToolHTTPTimeout) * time.Second * 4}
	s.ToolConfig = toolconfig.New(s.Store, s.Tools, s.Skills, s.Secrets)
	s.Templates = agenttemplate.New(s.Store, s.Tools, s.Skills).WithPlugins(
		func() []agenttemplate.Entry { return s.Plugins.Current().Templates() },
		func(pkg string) bool { return s.Plugins.Current().Installed(pkg) })
	s.Tasks = task.New(s.Store, s.Tools).WithLog(a.Logger).WithRetryAfterMax(func() time.Duration {
		return time.Duration(s.Config.Current().LLMRetryAfterMaxSeconds) * time.Second // read at every retry
	})
	s.Approvals = inbox.New(s.Store, s.Tasks, a.Logger, a.clock)
	s.Push = push.NewService(s.Config.View, s.Hub)
	s.Notifications = notification.New(s.Store, s.Push, s.Config.Current, a.Logger)
	s.Events = taskstream.New(s.Store, a.Logger)
	s.Events.MaxPerOwner = cfg.EventStreamsPerUser
	s.Schedules = schedule.New(s.Store)
	s.Pictures = picture.New(s.Store, s.Media)
	s.Chats = chat.New(s.Store, s.Tasks, a.Net).WithMedia(s.Media)
	s.APIKeys = apikey.New(s.Store, a.clock)
	s.MailConfig = mail.NewConfigService(s.Store, s.Config, s.Secrets)
	s.MailConfig.Net = a.Net
	s.Settings = runtimesettings.New(s.Store, s.Config, s.Secrets)
	s.Usage = usage.New(s.Store)
	s.SSO = sso.New(sso.Options{Store: &s.Store.Principals, Accounts: s.Accounts, Box: s.Secrets,
		Config: s.Config.Current, Net: a.Net, Logger: a.Logger, Clock: a.clock})
	s.Webhooks = a.newWebhooks()
	s.Webhooks.Attempted = func(ok bool) { s.Metrics.OutboxAttempt("webhook", ok) }
	s.Mails.Attempted = func(ok bool) { s.Metrics.OutboxAttempt("mail", ok) }
	s.Metrics.WatchQueues(s.Store.QueueStats, nil)
	s.Metrics.WatchSubscribers("hub", s.Hub.Subscribers)
	s.Metrics.WatchSubscribers("task_events", s.Events.Subscribers)
	workers := a.workers(cfg.MaxWorkers)
	a.llmClients = newLLMClients(a.Net, workers)
	s.LLMDriver = a.driver // the Test connection of a model configuration calls as a step does
	s.Loop = a.newLoop()
	s.Ticks = worker.NewClient(worker.ClientOptions{Store: s.Store, Tasks: s.Tasks, Config: s.Config.Current, Loop: s.Loop,
		Clock: a.clock, Chores: a.chores(s.Store.ReapDisconnected)})
	// The server-mode reaper runs when worker_stale_minutes > 0 (0 disables it); the tasks it
	// queues again are claimed at once.
	var reap func(context.Context, time.Time) (store.Reaped, error)
	if cfg.WorkerStaleMinutes > 0 {
		reap = s.Store.ReapStale
	}
	chores := a.chores(reap)
	s.Daemon = a.newDaemon(workers, chores)
	chores.Requeued = s.Daemon.Notify
	// What a commit changed wakes the work waiting for it at once (a task queued, created,
	// approved, handed back: the daemon claims; events: the streams; a notice: the fan-out; a
	// mail: the dispatcher): this process's commits through the store's listeners, on
	// PostgreSQL other processes' through the wake-up listener; the polls find what was missed.
	wake := func(c store.Commit) {
		if c.TaskQueued {
			s.Daemon.Notify()
		}
		if len(c.EventTasks) > 0 {
			s.Events.Notify(c.EventTasks)
		}
		if c.Noticed {
			s.Notifications.Notify()
		}
		if c.MailQueued {
			s.Mails.Notify()
		}
	}
	s.Store.AfterCommit(wake)
	s.Wakeups = &pgwake.Listener{Store: s.Store, Wake: wake, Log: a.Logger.With("component", "wakeups"),
		Resync: func(ctx context.Context) { // what was committed while the listener was deaf
			s.Daemon.Notify()
			s.Notifications.Notify()
			s.Mails.Notify()
			s.Webhooks.Notify()
			s.Events.CheckNow(ctx)
		}}
}

// chores is the housekeeping pass of a worker mode, reaping with reap.
func (a *App) chores(reap func(context.Context, time.Time) (store.Reaped, error)) *worker.Chores {
	return &worker.Chores{Reap: reap, Tasks: a.Tasks, Schedules: a.Schedules, Media: a.Media,
		Retention: &retention.Sweeper{Store: a.Store, Clock: a.clock,
			Policy: func() retention.Policy { return retention.PolicyOf(a.Config.Current()) }},
		Idempotency: a.Store.DeleteIdempotencyBefore,
		RateLimits:  a.Store.DeleteRateLimitWindowsBefore, Clock: a.clock, ExpireApprovals: a.Approvals.Expire,
		Changed: func(ctx context.Context, id int64) {
			if t, err := a.Store.Task(ctx, id); err == nil {
				a.taskChanged(ctx, t)
			}
		}}
}

// newLoop builds the agent loop over the app's store, tools and configuration, with the core
// executors built once over their dependencies (core.Deps); after every step it follows the
// task with taskChanged.
func (a *App) newLoop() *agentloop.Loop {
	cfg := a.Config.Current()
	board := &agentloop.TodoBoard{}
	execs := core.Executors(core.Deps{
		Skills:      a.Skills,
		Users:       a.Store,
		Todos:       board,
		Memories:    a.Store,
		Net:         a.Net,
		HTTPTimeout: time.Duration(cfg.ToolHTTPTimeout) * time.Second,
		Media:       a.Store,
		Files:       a.Media,
		Schedules:   a.Schedules,
		Agents:      a.ToolConfig,
		SubAgents:   agentloop.SubAgents{Store: a.Store},
	})
	return &agentloop.Loop{
		Store: a.Store, Registry: a.Tools, ToolStates: a.ToolConfig.AgentToolStates, Executors: execs, CacheConfig: true,
		Todos: board, Publish: a.taskChanged, Retry: a.Tasks.ScheduleRetryAfter, Log: a.Logger,
		Lease: agentloop.DefaultLease, StepBound: time.Duration(cfg.WorkerStaleMinutes) * time.Minute, Clock: startstop.RealClock(a.clock),
		Driver:   a.driver,
		Observer: loopObserver{m: a.Metrics, t: a.Tracer},
	}
}

// taskChanged follows a task that a step or housekeeping moved: it publishes the task to its
// owner's topic on the push channel and wakes the callback dispatcher when the change enqueued
// a callback. (Mails and notifications of the change were written in its transaction.)
func (a *App) taskChanged(ctx context.Context, t *store.Task) {
	v, err := a.Tasks.ViewOf(ctx, t)
	if err == nil {
		var data []byte
		if data, err = api.TaskEvent(v); err == nil {
			err = a.Push.Publish(ctx, push.TaskTopic(t.UserID), data)
		}
	}
	if err != nil {
		a.Logger.Warn("publish task", "task_id", t.ID, "err", err)
	}
	if t.CallbackURL != nil && taskstate.IsSettled(t.Status) {
		a.Webhooks.Notify() // the change enqueued a callback: send it now rather than at the next poll
	}
}

// newWebhooks builds the dispatcher of chat callbacks. In server mode Start starts it with the
// daemon and Stop drains the POSTs in flight; it polls the outbox every second and wakes when
// a step settles a chat with a callback_url. Bodies are the chat record of the settled
// snapshot (api.ChatBody, as the per-agent API shows the chat), sent by a client that screens
// every attempt with the app's outbound options (https only) and never follows redirects.
func (a *App) newWebhooks() *webhook.Dispatcher {
	return &webhook.Dispatcher{
		Store: a.Store,
		Render: func(_ context.Context, d store.WebhookDelivery) ([]byte, error) {
			return api.ChatBody(a.Tasks.SnapshotView(d.Snapshot))
		},
		Client: webhook.NewClient(a.Net),
		Clock:  startstop.RealClock(a.clock),
		Logger: a.Logger.With("component", "webhook"),
	}
}

// newMails builds the dispatcher of the mail outbox. Start starts it in every worker mode and
// Stop drains the sends in flight; it polls every second and wakes when an account flow or a
// finished scheduled run queued a mail. It sends through the app's sender, which reads the
// effective mail configuration (file, environment, administrator's settings) at each attempt,
// so a changed configuration applies to the mails still queued; each attempt is bounded by
// mailqueue.AttemptTimeout.
func (a *App) newMails() *mailqueue.Dispatcher {
	return &mailqueue.Dispatcher{
		Store:  a.Store,
		Sender: a.mail,
		Clock:  startstop.RealClock(a.clock),
		Logger: a.Logger.With("component", "mail"),
	}
}

// driver returns the model driver of a stored configuration: built once (opening its sealed
// key) and reused until the configuration or the settings it depends on change, over the
// shared clients of a.llmClients (group configurations through the screened one).
func (a *App) driver(c *store.LLMConfig) (llm.Driver, error) {
	cfg := a.Config.View()
	key := driverKey(c, cfg.LLMTimeout, cfg.LLMAllowedHosts)
	return a.llmClients.driver(c, key, func() (llm.Driver, error) { return a.buildDriver(c, cfg) })
}

// buildDriver builds the model driver of a stored configuration, opening its sealed key.
func (a *App) buildDriver(c *store.LLMConfig, cfg *config.Config) (llm.Driver, error) {
	lc := llm.Config{Driver: c.Driver, Model: c.Model, Temperature: c.Temperature,
		Timeout: time.Duration(cfg.LLMTimeout) * time.Second, HTTPClient: a.llmClients.For(c, cfg.LLMAllowedHosts)}
	if c.BaseURL != nil {
		lc.BaseURL = *c.BaseURL
	}
	if c.APIKeySealed != "" {
		key, err := a.Secrets.Open(c.APIKeySealed)
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

// Automatic worker concurrency (max_workers 0), per dialect, measured with BenchmarkDrain
// (docs/benchmarks.md, "Worker concurrency sweep"): a run waiting for its
// model holds no connection, so throughput follows the number of runs until the database is
// the limit; the bounded pool keeps the database's contention bounded beyond that. Equal to
// the default pools (store.DefaultMaxOpenConns).
const (
	autoWorkersSQLite = 16
	autoWorkersMySQL  = 32
	// autoWorkersPostgres is PostgreSQL's default pool (its max_connections, 100 by default, is
	// smaller than MariaDB's 151); not measured in a sweep yet.
	autoWorkersPostgres = 24
)

// workers is the server-mode daemon's concurrency for max_workers n: n, or the dialect's
// automatic value when n is 0; never above the connection pool, since every run needs a
// connection for its writes and more runs than connections only wait for one.
func (a *App) workers(n int) int {
	pool := a.Store.MaxOpenConns()
	if n == 0 {
		n = autoWorkersSQLite
		switch a.Store.Dialect() {
		case store.DialectMySQL:
			n = autoWorkersMySQL
		case store.DialectPostgres:
			n = autoWorkersPostgres
		}
	} else if pool > 0 && n > pool {
		a.Logger.Warn("max_workers is above the connection pool; capped", "max_workers", n, "db_max_open_conns", pool)
	}
	if pool > 0 {
		n = min(n, pool)
	}
	return n
}

// claimLingerMySQL is the daemon's ClaimLinger on MySQL/MariaDB, where a claim is seven round
// trips in one transaction: the slots that free within it go in one claim (docs/benchmarks.md,
// issue 28's eighth session). On SQLite (a claim in the process) and PostgreSQL (a claim of
// three statements) it only delayed the runs.
const claimLingerMySQL = time.Millisecond

// choresEvery is the server-mode housekeeping period: a fraction of the lease, so a task whose
// worker died is taken back within about DefaultLease plus this.
const choresEvery = agentloop.DefaultLease / 4

// newDaemon builds the server-mode daemon draining the queue with the loop, at most
// maxWorkers runs at once, and running chores every choresEvery. Each process gets its own worker
// id, so two processes on one database never run the same task at once (claims are atomic in
// the store).
func (a *App) newDaemon(maxWorkers int, chores *worker.Chores) *worker.Daemon[agentloop.Claimed] {
	host, _ := os.Hostname()
	id := fmt.Sprintf("%s:%d:%d", host, os.Getpid(), time.Now().UnixNano())
	loop := a.Loop
	var linger time.Duration
	if a.Store.Dialect() == store.DialectMySQL {
		linger = claimLingerMySQL
	}
	return &worker.Daemon[agentloop.Claimed]{
		MaxWorkers:  maxWorkers,
		Poll:        time.Second,
		ClaimLinger: linger,
		Log:         a.Logger,
		Clock:       startstop.RealClock(a.clock),
		Claim: func(ctx context.Context, n int) ([]agentloop.Claimed, error) {
			cs, err := loop.Claim(ctx, id, n)
			now := a.clock()
			for _, c := range cs {
				t := c.Task
				// Claim latency is measured on first claims (queued since creation); a resumed
				// task's wait is the user's or a retry's, not the queue's.
				a.Metrics.Claimed(t.StepsUsed == 0 && t.RetryCount == 0 && t.Recoveries == 0, now.Sub(t.CreatedAt))
			}
			return cs, err
		},
		Run: func(ctx context.Context, stop <-chan struct{}, c agentloop.Claimed) {
			loop.RunClaimed(ctx, stop, c, id)
		},
		ChoresEvery: choresEvery,
		Chores:      func(ctx context.Context) error { _, err := chores.Run(ctx); return err },
	}
}
