package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/domain/agenttemplate"
	"github.com/agentsvc/svc/internal/domain/mail"
	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/metrics"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/platform/push"
	"github.com/agentsvc/svc/internal/platform/secret"
	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/internal/platform/tracing"
	"github.com/agentsvc/svc/plugins"
	_ "github.com/agentsvc/svc/plugins/searchcore" // the first-party search plugin, compiled in
	"github.com/agentsvc/svc/skills"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

// Options override parts of the assembly, for tests and tools.
type Options struct {
	Store  *store.Store       // nil: open the configured database and migrate it
	Mail   mail.Sender        // nil: SMTP when mail_driver is smtp, else the log
	Clock  func() time.Time   // nil: time.Now
	Logger *slog.Logger       // nil: from log_level and log_path
	Hash   account.HashParams // zero: account.DefaultHashParams
	// Net configures the outbound SSRF screens (callback URLs, read_url). Tests set
	// AllowLoopback to reach httptest servers; production leaves it zero.
	Net netguard.Options
	// MediaDir is where media files are stored; "": storage/media (relative to the working
	// directory).
	MediaDir string
	// APIOnly builds an API-only process (`svc serve --api-only`): Start starts no task daemon
	// and readiness does not ask for one (svc worker processes run the tasks).
	APIOnly bool
}

// App is the assembled service: configuration, store, services and HTTP server.
type App struct {
	*Services                   // every service, built once by Open
	HTTP       *Server          // the HTTP side over the services
	MasterKey  []byte           // seals secrets at rest (Services.Secrets is built from it)
	Net        netguard.Options // outbound screen options (Options.Net)
	clock      func() time.Time // Options.Clock, or time.Now
	mail       mail.Sender      // outgoing mail: Options.Mail, else the configured mailer; the outbox's sender, and the test message's
	llmClients *llmClients      // model HTTP clients: screened for group configurations
	apiOnly    bool             // Options.APIOnly
	stopBy     time.Time        // the deadline of the last bounded Stop: Close's tracer shutdown keeps within it
	closers    []io.Closer
}

// Open assembles the service from its configuration: logger, master key, database (migrated),
// stored settings, mail, every service (once) and the HTTP server. Background work starts
// with Start.
func Open(ctx context.Context, loader *config.Loader, o Options) (*App, error) {
	cfg, err := loader.Load()
	if err != nil {
		return nil, err
	}
	a := &App{Services: &Services{}, Net: o.Net, clock: o.Clock, apiOnly: o.APIOnly}
	a.Config, a.Logger = loader, o.Logger
	if a.clock == nil {
		a.clock = time.Now
	}
	if a.Logger == nil {
		l, c, err := config.NewLogger(cfg)
		if err != nil {
			return nil, err
		}
		a.Logger, a.closers = l, append(a.closers, c)
	}
	loader.WithLogger(a.Logger)
	if a.MasterKey, err = secret.LoadOrCreateKey(cfg); err != nil {
		return nil, a.fail(err)
	}
	if a.Secrets, err = secret.NewBox(a.MasterKey); err != nil {
		return nil, a.fail(err)
	}
	a.Store = o.Store
	if a.Store == nil {
		if a.Store, err = OpenStore(ctx, cfg, a.Logger, o.Clock); err != nil {
			return nil, a.fail(err)
		}
		a.closers = append(a.closers, a.Store)
		if err := a.Store.Migrate(ctx); err != nil {
			return nil, a.fail(fmt.Errorf("migrate: %w", err))
		}
	}
	stored, err := a.Store.Settings(ctx)
	if err != nil {
		return nil, a.fail(fmt.Errorf("read stored settings: %w", err))
	}
	// The administrator's mail password is sealed at rest; the loader needs it in the clear.
	if stored, err = mail.UnsealStored(stored, a.Secrets); err != nil {
		a.Logger.Warn("stored settings", "err", err)
	}
	if err := loader.SetStored(stored); err != nil {
		return nil, a.fail(fmt.Errorf("stored settings: %w", err))
	}
	if err := a.seedLLMConfig(ctx, loader.Current()); err != nil {
		return nil, a.fail(err)
	}
	sender := o.Mail
	if sender == nil {
		sender = &configuredMailer{cfg: loader, net: o.Net, log: mail.NewLog(a.Logger)}
	}
	a.mail = sender
	a.Metrics = metrics.New()
	if o.Store == nil {
		a.Metrics.WatchDatabase(dbCounts.Snapshot) // what this process sent through OpenStore's counting driver
	}
	if a.Tracer, err = tracing.New(ctx, tracing.Options{Endpoint: cfg.OtelEndpoint, ServiceName: cfg.OtelServiceName}); err != nil {
		return nil, a.fail(err)
	}
	if a.Tracer.Enabled() {
		a.closers = append(a.closers, tracerCloser{a})
		a.Logger.Info("tracing on", "otel_endpoint", cfg.OtelEndpoint, "service_name", cfg.OtelServiceName)
	}
	a.Mails = a.newMails()
	if a.Accounts, err = account.New(account.Options{Store: a.Store, MailQueued: a.Mails.Notify, Config: loader.Current,
		Clock: o.Clock, Logger: a.Logger, Hash: o.Hash}); err != nil {
		return nil, a.fail(err)
	}
	if a.Hub, err = push.NewHub(push.HubOptions{MasterKey: a.MasterKey, Session: sessionUser(a.Accounts),
		SessionStands: a.Accounts.SessionStands, MaxPerUser: func() int { return loader.Current().EventStreamsPerUser },
		Clock: o.Clock, Logger: a.Logger}); err != nil {
		return nil, a.fail(err)
	}
	a.closers = append(a.closers, a.Hub)
	if a.Plugins, err = plugins.NewRuntime(ctx, plugins.Options{Dir: cfg.PluginsDir, Store: a.Store, Log: a.Logger,
		Deps: plugins.Deps{Store: a.Store, Templates: func(ctx context.Context) ([]agenttemplate.Summary, error) {
			return a.Templates.List(ctx) // built below, before any search runs
		}}}); err != nil {
		return nil, a.fail(err)
	}
	var problems []skill.Problem
	if a.Tools, a.Skills, problems, err = Toolbox(a.Plugins.Current().SkillProviders()...); err != nil {
		return nil, a.fail(err)
	}
	for _, p := range problems {
		a.Logger.Warn("skill skipped", "source", p.Source, "folder", p.Folder, "err", p.Err)
	}
	a.startMCP(ctx, cfg)
	a.Media = media.New(a.Store, o.MediaDir, o.Clock).WithLogger(a.Logger)
	if err := os.MkdirAll(a.Media.Dir(), 0o750); err != nil {
		return nil, a.fail(fmt.Errorf("create media directory: %w", err))
	}
	a.buildServices()
	if a.HTTP, err = New(a.Services, a.clock); err != nil {
		return nil, a.fail(err)
	}
	a.HTTP.apiOnly = o.APIOnly
	return a, nil
}

// Start starts the background work: in every mode the mail dispatcher (account mails must go
// out in client mode too), the notification fan-out, the poll of the task event streams and, on
// PostgreSQL, the wake-up listener (other processes' commits); in server worker mode (worker_runtime_mode: server) also the daemon
// draining the task queue and the dispatcher of chat callbacks (in client mode browsers tick
// tasks). The work runs until Stop or until ctx ends; a caller that wants Stop to drain it
// passes a context that outlives its shutdown signal. An API-only app (Options.APIOnly) starts
// what StartAPI starts.
func (a *App) Start(ctx context.Context) {
	a.StartAPI(ctx)
	if a.Config.Current().WorkerRuntimeMode == "server" && !a.apiOnly {
		a.Daemon.Start(ctx)
	}
}

// StartAPI is Start without the task daemon: the background work of an API-only process
// (`svc serve --api-only`) beside `svc worker` processes on the same database, which claim and
// run the tasks (and run the chores).
func (a *App) StartAPI(ctx context.Context) {
	a.Wakeups.Start(ctx)
	a.Mails.Start(ctx)
	a.Notifications.Start(ctx)
	a.Events.Start(ctx)
	if a.Config.Current().WorkerRuntimeMode == "server" {
		a.Webhooks.Start(ctx)
	}
}

// HaltClaims ends the daemon's claiming and returns once no claim is in flight, without waiting
// for the runs: a stop's first act, before the HTTP server's shutdown or Stop ends the event
// streams and push subscriptions. A client sees a stream end and may act on the stop (release
// the model calls it held, say); while the claimer still ran then, the slot a finishing step
// freed was claimed after the signal (TestOperationsDrill, on a loaded machine).
func (a *App) HaltClaims() { a.Daemon.Halt() }

// Stop drains the background work Start started. At once: the daemon claims nothing more, the
// event streams end and their poll stops. Then in-flight steps finish; in-flight callbacks are
// answered, notices fanned out and mails sent, each recorded; the trace exporter flushes. With
// a deadline on ctx (the stop's grace, shutdown_grace_seconds), each part has its own share of
// it (stopShares): steps still running when theirs ends are cancelled and their tasks handed
// back, and the outboxes and the flush keep their shares whatever the steps took. Without a deadline each
// part waits for its work. It returns nil when nothing was started, and the parts' errors:
// work still in flight when its share ended (steps cancelled and handed back are named too).
func (a *App) Stop(ctx context.Context) error {
	a.HaltClaims()
	a.Events.EndStreams()
	start := time.Now()
	deadline, bounded := ctx.Deadline()
	sh := stopShares{}
	if bounded {
		sh = sharesOf(deadline.Sub(start))
		a.Daemon.HandBack = sh.HandBack
		a.stopBy = deadline
	}
	// Claiming has ended; the streams' broker and the wake listener stop beside the runs.
	side := make(chan []error, 1)
	go func() { side <- []error{a.Events.Stop(ctx), a.Wakeups.Stop(ctx)} }()
	dctx, cancel := sh.until(ctx, start.Add(sh.Steps))
	derr := a.Daemon.Stop(dctx)
	cancel()
	errs := append(<-side, derr)
	// The outboxes sent what the finishing steps queued meanwhile; now their deliveries in
	// flight get their own share, starting when the daemon is done, never eating the flush's.
	octx, cancel := sh.until(ctx, minTime(time.Now().Add(sh.Outboxes), deadline.Add(-sh.Flush)))
	defer cancel()
	outboxes := make(chan error, 2)
	go func() { outboxes <- a.Webhooks.Stop(octx) }()
	go func() { outboxes <- a.Notifications.Stop(octx) }()
	errs = append(errs, a.Mails.Stop(octx), <-outboxes, <-outboxes)
	if a.Tracer.Enabled() {
		fctx, cancel := sh.until(ctx, deadline)
		defer cancel()
		if err := a.Tracer.ForceFlush(fctx); err != nil {
			errs = append(errs, fmt.Errorf("flush traces: %w", err))
		}
	}
	return errors.Join(errs...)
}

// DrainMail sends every due mail of the outbox now, synchronously, and returns how many
// attempts it made (mails waiting for a retry stay queued): for tests, which read the mail
// right after an action without starting the background work, and for tools. It may run
// beside the started dispatcher (claims are leased). Errors: the store's.
func (a *App) DrainMail(ctx context.Context) (int, error) {
	if _, err := a.Notifications.Drain(ctx); err != nil { // the notices' mails first
		return 0, err
	}
	return a.Mails.Drain(ctx)
}

// DrainNotifications fans out every due notice of the notification outbox now, synchronously
// (tests read notifications right after an action without starting the background work), and
// returns how many it handled. Errors: the store's.
func (a *App) DrainNotifications(ctx context.Context) (int, error) {
	return a.Notifications.Drain(ctx)
}

// Toolbox builds the tool registry (core tools) and the skill index: the shipped skills first,
// then the plugins' skill folders (so a plugin cannot shadow a shipped skill).
func Toolbox(pluginSkills ...skill.Provider) (*tools.Registry, *skill.Index, []skill.Problem, error) {
	reg := tools.NewRegistry()
	if err := core.Register(reg); err != nil {
		return nil, nil, nil, fmt.Errorf("register core tools: %w", err)
	}
	idx, problems := skill.NewIndex(append([]skill.Provider{skills.Provider()}, pluginSkills...)...)
	return reg, idx, problems, nil
}

// OpenStore opens the configured database without migrating it, through a driver that counts
// its statements and transactions for /metrics (dbcount.go).
func OpenStore(ctx context.Context, cfg *config.Config, log *slog.Logger, clock func() time.Time) (*store.Store, error) {
	opts := store.Options{Driver: cfg.DBDriver, Logger: log, Clock: clock, MaxOpenConns: cfg.DBMaxOpenConns,
		SQLDriverName: countingDriver(cfg.DBDriver)}
	switch cfg.DBDriver {
	case "sqlite":
		opts.SQLitePath, opts.SQLiteBusyTimeout = cfg.SQLitePath(), cfg.SQLiteBusyTimeout
	case "postgres":
		opts.PostgresDSN = cfg.PostgresDSN()
	default:
		opts.MySQLDSN = cfg.MySQLDSN()
	}
	s, err := store.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	if loc, err := time.LoadLocation(cfg.TimeZone); err == nil { // validated with the configuration
		s.SetTimeZone(loc)
	}
	return s, nil
}

func (a *App) fail(err error) error {
	_ = a.Close()
	return err
}

// Close releases the database and the log file.
func (a *App) Close() error {
	var first error
	for i := len(a.closers) - 1; i >= 0; i-- {
		if err := a.closers[i].Close(); err != nil && first == nil {
			first = err
		}
	}
	a.closers = nil
	return first
}

// tracerShutdown bounds the flush of the spans still batched when the app closes.
const tracerShutdown = 5 * time.Second

// tracerCloser flushes and stops the tracer provider at Close. It is closed before the
// database and the log (closers run in reverse), after Stop drained the work that makes spans
// and flushed them within the stop's grace, which bounds this shutdown too.
type tracerCloser struct{ a *App }

func (c tracerCloser) Close() error {
	by := time.Now().Add(tracerShutdown)
	if !c.a.stopBy.IsZero() {
		by = minTime(by, c.a.stopBy)
	}
	ctx, cancel := context.WithDeadline(context.Background(), by)
	defer cancel()
	return c.a.Tracer.Shutdown(ctx)
}

// configuredMailer sends through SMTP when mail_driver is smtp (read at each message, so an
// administrator's change applies at once) and logs the message otherwise: in full in
// development, without its body (one-time links) in production.
type configuredMailer struct {
	cfg *config.Loader
	net netguard.Options // the screen of a mail host saved over the API (mail.ScreenSMTP)
	log *mail.LogSender
}

func (m *configuredMailer) Send(ctx context.Context, msg mail.Message) error {
	c := m.cfg.Current()
	if !c.MailConfigured() {
		if c.IsProduction() {
			return m.log.SendRedacted(ctx, msg)
		}
		return m.log.Send(ctx, msg)
	}
	dial, err := mail.ScreenSMTP(ctx, m.cfg.SourceOf("mail_host"), c, m.net)
	if err != nil {
		return err
	}
	s, err := mail.NewSMTP(mail.SMTPConfig{Host: c.MailHost, Port: c.MailPort, Username: c.MailUsername,
		Password: c.MailPassword, Encryption: c.MailEncryption, From: c.MailFrom, FromName: c.MailFromName, Dial: dial})
	if err != nil {
		return err
	}
	return s.Send(ctx, msg)
}
