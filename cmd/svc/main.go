// Command svc is the agent orchestration service: `svc serve` runs the HTTP API (and, in server
// worker mode, the worker daemon and the chat callbacks); `svc migrate` applies database
// migrations; `svc user create` adds an account from the command line.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/agentsvc/svc/internal/domain/agenttemplate"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/server"
)

const usage = `usage: svc <command> [flags]

commands:
  serve                 run the HTTP API and, in server worker mode, the worker daemon (default);
                        --api-only: no worker daemon (run svc worker processes beside it)
  worker                run the worker daemon alone (server worker mode)
  migrate               apply database migrations and print their state
  user create           create an account: --email ADDR [--name NAME] [--admin] [--verified];
                        the password is read from SVC_USER_PASSWORD or the first line of stdin
  template validate F   validate an agent template file (JSON or YAML); exit status 1 on errors

configuration: config.yaml (or SVC_CONFIG_FILE) and SVC_* environment variables; see README.md.
`

func main() {
	if err := run(os.Args[1:], os.Environ(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "svc:", err)
		os.Exit(1)
	}
}

func run(args, environ []string, stdin io.Reader, stdout io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	loader := config.NewLoader(environ)
	switch cmd {
	case "serve":
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		apiOnly := fs.Bool("api-only", false, "run no worker daemon: svc worker processes on the same database run the tasks")
		if err := fs.Parse(args); err != nil {
			return err
		}
		return serve(loader, *apiOnly)
	case "migrate":
		return migrate(loader, stdout)
	case "user":
		if len(args) == 0 || args[0] != "create" {
			return errors.New("usage: svc user create --email ADDR [--name NAME] [--admin] [--verified]")
		}
		return createUser(loader, args[1:], environ, stdin, stdout)
	case "worker":
		return work(loader)
	case "template":
		if len(args) != 2 || args[0] != "validate" {
			return errors.New("usage: svc template validate FILE")
		}
		return validateTemplate(args[1], stdout)
	case "help", "-h", "--help":
		_, err := io.WriteString(stdout, usage)
		return err
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
}

func serve(loader *config.Loader, apiOnly bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	app, err := server.Open(ctx, loader, server.Options{APIOnly: apiOnly})
	if err != nil {
		return err
	}
	defer app.Close()
	cfg := loader.Current()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	// The worker daemon and callbacks in server mode (API-only: callbacks, mails, event
	// streams, no task daemon). On the signal claiming ends first, then the rest of the work
	// stops beside the HTTP server's shutdown, not after it: the daemon must claim nothing
	// while requests finish, nor once the shutdown has ended a client's event stream.
	app.Start(context.WithoutCancel(ctx))
	httpCtx, endHTTP := context.WithCancel(context.WithoutCancel(ctx))
	defer endHTTP()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		app.HaltClaims()
		endHTTP()
		stopWork(app, loader.Current().ShutdownGrace())
	}()
	releaseStartupMemory()
	fmt.Fprintln(os.Stderr, banner(cfg, ln.Addr()))
	err = app.HTTP.Serve(httpCtx, ln, server.RequestGrace(loader.Current().ShutdownGrace()))
	stop() // Serve may have failed by itself: the work stops then too
	<-stopped
	return err
}

// releaseStartupMemory hands the start-up's garbage back to the operating system at once: opening
// the service allocates some 45 MB that is dead once it serves (the decoded contract and its
// validator's router, templates, skills, migrations), and the runtime would otherwise keep most
// of it resident, returning it over minutes. One forced collection (a few milliseconds) halves
// the idle resident set (docs/benchmarks.md, "Issue 14 table on the real binary").
func releaseStartupMemory() { debug.FreeOSMemory() }

// stopWork stops the app's background work (App.Stop) within grace (shutdown_grace_seconds),
// from the signal on. What the stop reports (steps cancelled and handed back, deliveries still
// in flight) is printed; it is the stop working as designed, not a failure of the process.
func stopWork(app *server.App, grace time.Duration) {
	fmt.Fprintf(os.Stderr, "svc: stopping within %s: claiming ended, event streams ended, steps in flight finishing\n", grace)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := app.Stop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "svc:", err)
	}
	fmt.Fprintln(os.Stderr, "svc: stopped")
}

// work runs the worker daemon alone (scaling out: several `svc worker` processes may share one
// database) until SIGINT or SIGTERM.
func work(loader *config.Loader) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	app, err := server.Open(ctx, loader, server.Options{})
	if err != nil {
		return err
	}
	defer app.Close()
	if mode := loader.Current().WorkerRuntimeMode; mode != "server" {
		return fmt.Errorf("svc worker needs worker_runtime_mode=server (it is %q: browsers tick tasks)", mode)
	}
	var health chan error // worker_health_listen: /healthz and /readyz of this worker
	if addr := loader.Current().WorkerHealthListen; addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("worker_health_listen: %w", err)
		}
		health = make(chan error, 1)
		go func() { health <- app.HTTP.ServeHealth(ctx, ln) }()
		fmt.Fprintln(os.Stderr, "svc: worker health on http://"+ln.Addr().String()+"/readyz")
	}
	app.Start(context.WithoutCancel(ctx))
	releaseStartupMemory()
	fmt.Fprintln(os.Stderr, "svc: worker running")
	<-ctx.Done()
	stopWork(app, loader.Current().ShutdownGrace())
	if health != nil {
		if err := <-health; err != nil {
			return fmt.Errorf("worker_health_listen: %w", err)
		}
	}
	return nil
}

// banner is the line `svc serve` prints at start: the address the listener is bound to (all
// interfaces when the host is empty or unspecified, so an operator is not told "localhost" while
// the port is open to the network), a URL to open, the database (never its password), the worker
// mode and where the log goes.
func banner(cfg *config.Config, addr net.Addr) string {
	db := cfg.DBDriver + " " + cfg.SQLitePath()
	if cfg.DBDriver != "sqlite" {
		db = fmt.Sprintf("%s %s@%s/%s", cfg.DBDriver, cfg.DBUser, cfg.DBAddr(), cfg.DBName)
	}
	return fmt.Sprintf("svc: serving on %s (database %s, worker mode %s, log %s at level %s)",
		displayAddr(addr, cfg.AppPrefix), db, cfg.WorkerRuntimeMode, cfg.LogPath, cfg.LogLevel)
}

// displayAddr names the bound address as it is and a URL that reaches it from this machine.
func displayAddr(addr net.Addr, prefix string) string {
	bound := addr.String()
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return bound
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return fmt.Sprintf("%s, all interfaces (on this machine http://localhost:%s%s/)", bound, port, prefix)
	}
	return fmt.Sprintf("%s (http://%s%s/)", bound, bound, prefix)
}

func migrate(loader *config.Loader, stdout io.Writer) error {
	ctx := context.Background()
	cfg, err := loader.Load()
	if err != nil {
		return err
	}
	log, closer, err := config.NewLogger(cfg)
	if err != nil {
		return err
	}
	defer closer.Close()
	st, err := server.OpenStore(ctx, cfg, log, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	states, err := st.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	for _, s := range states {
		fmt.Fprintf(stdout, "%04d %-30s applied=%v\n", s.Version, s.Name, s.Applied)
	}
	return nil
}

func createUser(loader *config.Loader, args, environ []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("user create", flag.ContinueOnError)
	email := fs.String("email", "", "login address (required)")
	name := fs.String("name", "", "display name")
	admin := fs.Bool("admin", false, "make the user an administrator")
	verified := fs.Bool("verified", false, "mark the address as verified")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *email == "" {
		return errors.New("--email is required")
	}
	password := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "SVC_USER_PASSWORD="); ok {
			password = v
		}
	}
	if password == "" {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read password: %w", err)
		}
		password = strings.TrimRight(line, "\r\n")
	}
	ctx := context.Background()
	app, err := server.Open(ctx, loader, server.Options{})
	if err != nil {
		return err
	}
	defer app.Close()
	u, err := app.Accounts.CreateUser(ctx, *email, password, *name, *admin, *verified)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "created user %d <%s> admin=%v\n", u.ID, u.Email, u.IsAdmin())
	return nil
}

// errTemplateInvalid makes the command exit non-zero after the findings are printed.
var errTemplateInvalid = errors.New("template has errors")

func validateTemplate(path string, stdout io.Writer) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	reg, idx, _, err := server.Toolbox()
	if err != nil {
		return err
	}
	cat := agenttemplate.ToolCatalog{Registry: reg, Skill: idx.Exists}
	rep := agenttemplate.Validate(agenttemplate.Input{Raw: raw, Source: agenttemplate.SourceUploaded}, cat)
	for _, f := range rep.Errors {
		fmt.Fprintf(stdout, "error   %-32s %-24s %s\n", f.Code, pointer(f.Path), f.Message)
	}
	for _, f := range rep.Warnings {
		fmt.Fprintf(stdout, "warning %-32s %-24s %s\n", f.Code, pointer(f.Path), f.Message)
	}
	fmt.Fprintf(stdout, "%s: %d errors, %d warnings\n", path, len(rep.Errors), len(rep.Warnings))
	if !rep.Valid {
		return errTemplateInvalid
	}
	return nil
}

func pointer(p string) string {
	if p == "" {
		return "/"
	}
	return p
}
