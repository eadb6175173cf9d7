package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/agentsvc/svc/account"
	"github.com/agentsvc/svc/agentloop"
	"github.com/agentsvc/svc/config"
	"github.com/agentsvc/svc/mail"
	"github.com/agentsvc/svc/media"
	"github.com/agentsvc/svc/netguard"
	"github.com/agentsvc/svc/push"
	"github.com/agentsvc/svc/secret"
	"github.com/agentsvc/svc/skill"
	"github.com/agentsvc/svc/skills"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
	"github.com/agentsvc/svc/webhook"
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
}

// App is the assembled service: configuration, store, services and HTTP server.
type App struct {
	Config    *config.Loader
	Store     *store.Store
	Accounts  *account.Service
	HTTP      *Server
	Tools     *tools.Registry // registered tools (core, then plugins)
	Skills    *skill.Index    // shipped skills, then plugins' skill folders
	Log       *slog.Logger
	MasterKey []byte
	Net       netguard.Options // outbound screen options (Options.Net)
	clock     func() time.Time // Options.Clock, or time.Now
	Push      *push.Hub        // the embedded push hub; stopped by Close
	Media     *media.Service   // media assets; the worker daemon calls Media.Sweep
	loop      *agentloop.Loop  // built once in Open; returned by Loop
	mail      mail.Sender      // outgoing mail: Options.Mail, else the configured mailer
	hooks     *webhook.Dispatcher
	closers   []io.Closer
}

// Open assembles the service from its configuration: logger, master key, database (migrated),
// stored settings, mail and the HTTP server.
func Open(ctx context.Context, loader *config.Loader, o Options) (*App, error) {
	cfg, err := loader.Load()
	if err != nil {
		return nil, err
	}
	a := &App{Config: loader, Log: o.Logger, Net: o.Net, clock: o.Clock}
	if a.clock == nil {
		a.clock = time.Now
	}
	if a.Log == nil {
		l, c, err := config.NewLogger(cfg)
		if err != nil {
			return nil, err
		}
		a.Log, a.closers = l, append(a.closers, c)
	}
	loader.WithLogger(a.Log)
	if a.MasterKey, err = secret.LoadOrCreateKey(cfg); err != nil {
		return nil, a.fail(err)
	}
	a.Store = o.Store
	if a.Store == nil {
		if a.Store, err = OpenStore(ctx, cfg, a.Log, o.Clock); err != nil {
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
	if err := loader.SetStored(stored); err != nil {
		return nil, a.fail(fmt.Errorf("stored settings: %w", err))
	}
	if err := a.seedLLMConfig(ctx, loader.Current()); err != nil {
		return nil, a.fail(err)
	}
	sender := o.Mail
	if sender == nil {
		sender = &configuredMailer{cfg: loader.Current, log: mail.NewLog(a.Log)}
	}
	a.mail = sender
	if a.Accounts, err = account.New(account.Options{Store: a.Store, Mail: sender, Config: loader.Current,
		Clock: o.Clock, Logger: a.Log, Hash: o.Hash}); err != nil {
		return nil, a.fail(err)
	}
	if a.Push, err = push.NewHub(push.HubOptions{MasterKey: a.MasterKey, Session: sessionUser(a.Accounts),
		Clock: o.Clock, Logger: a.Log}); err != nil {
		return nil, a.fail(err)
	}
	a.closers = append(a.closers, a.Push)
	box, err := secret.NewBox(a.MasterKey)
	if err != nil {
		return nil, a.fail(err)
	}
	var problems []skill.Problem
	if a.Tools, a.Skills, problems, err = Toolbox(); err != nil {
		return nil, a.fail(err)
	}
	for _, p := range problems {
		a.Log.Warn("skill skipped", "source", p.Source, "folder", p.Folder, "err", p.Err)
	}
	a.Media = media.New(a.Store, o.MediaDir, o.Clock).WithLogger(a.Log)
	if err := os.MkdirAll(a.Media.Dir(), 0o750); err != nil {
		return nil, a.fail(fmt.Errorf("create media directory: %w", err))
	}
	// The callback dispatcher before the loop: its ticks wake it.
	a.hooks = a.newWebhooks(o.Clock)
	if a.loop, err = a.buildLoop(); err != nil { // before the HTTP server: the tick endpoint drives it
		return nil, a.fail(err)
	}
	if a.HTTP, err = New(Deps{Config: loader, Store: a.Store, Accounts: a.Accounts, Secrets: box,
		Tools: a.Tools, Skills: a.Skills, Logger: a.Log, Clock: o.Clock, Push: a.Push, Tick: a.loop.Tick, Net: o.Net, Media: a.Media}); err != nil {
		return nil, a.fail(err)
	}
	return a, nil
}

// Toolbox builds the tool registry (core tools) and the skill index (shipped skills first).
// Plugins will add theirs here.
func Toolbox() (*tools.Registry, *skill.Index, []skill.Problem, error) {
	reg := tools.NewRegistry()
	if err := core.Register(reg); err != nil {
		return nil, nil, nil, fmt.Errorf("register core tools: %w", err)
	}
	idx, problems := skill.NewIndex(skills.Provider())
	return reg, idx, problems, nil
}

// OpenStore opens the configured database without migrating it.
func OpenStore(ctx context.Context, cfg *config.Config, log *slog.Logger, clock func() time.Time) (*store.Store, error) {
	opts := store.Options{Driver: cfg.DBDriver, Logger: log, Clock: clock}
	if cfg.DBDriver == "sqlite" {
		opts.SQLitePath, opts.SQLiteBusyTimeout = cfg.SQLitePath(), cfg.SQLiteBusyTimeout
	} else {
		opts.MySQLDSN = cfg.MySQLDSN()
	}
	return store.Open(ctx, opts)
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

// configuredMailer sends through SMTP when mail_driver is smtp (read at each message, so an
// administrator's change applies at once) and logs the message otherwise.
type configuredMailer struct {
	cfg func() *config.Config
	log *mail.LogSender
}

func (m *configuredMailer) Send(ctx context.Context, msg mail.Message) error {
	c := m.cfg()
	if !c.MailConfigured() {
		return m.log.Send(ctx, msg)
	}
	s, err := mail.NewSMTP(mail.SMTPConfig{Host: c.MailHost, Port: c.MailPort, Username: c.MailUsername,
		Password: c.MailPassword, Encryption: c.MailEncryption, From: c.MailFrom, FromName: c.MailFromName})
	if err != nil {
		return err
	}
	return s.Send(ctx, msg)
}
