// Package server wires configuration, store and services into the gin engine and runs it:
// the contract gate (routing, body caps, authentication, rate limits, validation), the
// generated strict handlers, and one error envelope for every failure.
package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/gin-gonic/gin"

	svc "github.com/agentsvc/svc"
	"github.com/agentsvc/svc/agentloop"
	"github.com/agentsvc/svc/api"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/domain/agenttemplate"
	"github.com/agentsvc/svc/internal/domain/apikey"
	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/internal/jobs/worker"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/metrics"
	"github.com/agentsvc/svc/internal/platform/push"
	"github.com/agentsvc/svc/internal/platform/ratelimit"
	"github.com/agentsvc/svc/internal/platform/taskstream"
	"github.com/agentsvc/svc/internal/platform/tracing"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/plugins"
	"github.com/agentsvc/svc/store"
)

func init() {
	// Agent templates arrive as raw YAML text; validate them as strings, not as YAML documents.
	openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder)
	// JSON bodies (and +json types, which fall back to it) are one value: bytes after it
	// (`{"a":1}}}`) are refused, where the stock decoder reads the first value and stops.
	openapi3filter.RegisterBodyDecoder("application/json", wholeJSONBodyDecoder)
	gin.SetMode(gin.ReleaseMode)
}

// Rate limits applied through the `x-rate-limit` extension of an operation.
const (
	authAttemptsPerMinute = 10
)

// Server is the HTTP side of the service.
type Server struct {
	cfg      *config.Loader
	store    *store.Store
	accounts *account.Service
	keys     *apikey.Service // per-agent API keys (the per-agent gate)
	log      *slog.Logger
	push     *push.Hub
	handlers *api.API
	clock    func() time.Time
	contract *contract
	limiters map[string]ratelimit.Checker
	bodies   *bodySlots                        // one slot per request body being received (max_request_bodies)
	agentAPI agentAPIState                     // per-agent API: per-key limiters (server/agentapi.go)
	media    *media.Service                    // inline files are spooled to its InlineDir
	plugins  *plugins.Runtime                  // frontend bundles of plugins
	metrics  *metrics.Metrics                  // {prefix}/metrics and the request metrics
	tracer   *tracing.Tracer                   // request spans (no-op when tracing is off)
	pushSvc  *push.Service                     // the push channel (readiness)
	events   *taskstream.Broker                // the task event streams, ended when the server shuts down
	daemon   *worker.Daemon[agentloop.Claimed] // the server-mode worker (readiness)
	proxies  proxies                           // trusted_proxies: whose forwarding headers name the client
	apiOnly  bool                              // the process runs no task daemon (Options.APIOnly): readiness does not ask for one
	prefix   string
	apiBase  string
	engine   *gin.Engine
}

// New builds the engine over the services (it builds none); clock (nil: time.Now) drives the
// rate limits. The mount prefix is read once: changing app_prefix needs a restart.
func New(d *Services, clock func() time.Time) (*Server, error) {
	k, err := embeddedContract()
	if err != nil {
		return nil, err
	}
	if clock == nil {
		clock = time.Now
	}
	cfg := d.Config.Current()
	s := &Server{
		cfg: d.Config, store: d.Store, accounts: d.Accounts, keys: d.APIKeys, log: d.Logger, push: d.Hub,
		handlers: api.New(d.Deps), clock: clock, contract: k,
		prefix: cfg.AppPrefix, apiBase: cfg.AppPrefix + "/api/v1", media: d.Media, plugins: d.Plugins,
		metrics: d.Metrics, tracer: d.Tracer, pushSvc: d.Push, daemon: d.Daemon, events: d.Events,
		bodies: newBodySlots(cfg.MaxRequestBodies),
		// Shared through the database: the budgets hold across every API process.
		limiters: map[string]ratelimit.Checker{
			"auth": ratelimit.NewShared(d.Store, "auth", authAttemptsPerMinute, time.Minute, clock),
		},
	}
	// Client addresses (rate limits) come from forwarding headers only behind a trusted proxy,
	// and only from its right-most untrusted hop (clientaddr.go); gin's own reading of them is off.
	if s.proxies, err = parseProxies(cfg.TrustedProxyList()); err != nil {
		return nil, fmt.Errorf("trusted_proxies: %w", err)
	}
	s.engine = s.routes()
	if err := s.engine.SetTrustedProxies(nil); err != nil {
		return nil, err
	}
	return s, nil
}

// Handler is the root HTTP handler.
func (s *Server) Handler() http.Handler { return s.engine }

func (s *Server) routes() *gin.Engine {
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.UseRawPath = true
	e.UnescapePathValues = true
	e.RemoveExtraSlash = false
	e.Use(s.observe, s.logRequests, s.recover, s.securityHeaders)
	con := newConsole(s.prefix, svc.Console)
	e.NoRoute(func(c *gin.Context) {
		if s.agentAPIHidden(c) { // an unmounted per-agent API says so for its unknown paths too
			return
		}
		if con.serve(c) {
			c.Set(ctxOperation, "console")
			return
		}
		s.fail(c, svcerr.New(svcerr.ErrNotFound, "no route for %s %s", c.Request.Method, c.Request.URL.Path))
	})
	e.NoMethod(func(c *gin.Context) {
		if s.agentAPIHidden(c) { // an unmounted per-agent API says so for every method
			return
		}
		s.fail(c, svcerr.New(svcerr.ErrMethodNotAllowed, "method %s is not allowed here", c.Request.Method))
	})

	root := e.Group(s.prefix)
	root.GET("/healthz", s.healthz)
	root.GET("/readyz", s.readyz)
	root.GET("/metrics", s.metricsEndpoint)
	root.GET("/.well-known/mercure", s.subscribe)
	root.GET("/api/v1/openapi.yaml", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/yaml", svc.OpenAPI)
	})
	root.GET("/plugins/:slug/*file", s.pluginFrontend)
	root.GET("/schemas/plugin.schema.json", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/schema+json", svc.PluginSchema)
	})
	root.GET("/schemas/agent-template.schema.json", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/schema+json", agenttemplate.SchemaJSON(s.cfg.Current().PublicBase()+"/schemas/agent-template.schema.json"))
	})

	strict := gen.NewStrictHandlerWithOptions(s.handlers.Strict(), nil, gen.StrictGinServerOptions{
		RequestErrorHandlerFunc: func(c *gin.Context, err error) {
			s.fail(c, svcerr.New(svcerr.ErrInvalid, "invalid request: %v", err))
		},
		ResponseErrorHandlerFunc: func(c *gin.Context, err error) { s.fail(c, err) },
		HandlerErrorFunc:         func(c *gin.Context, err error) { s.fail(c, err) },
	})
	apiGroup := e.Group(s.apiBase, s.gate)
	gen.RegisterHandlersWithOptions(apiGroup, strict, gen.GinServerOptions{
		ErrorHandler: func(c *gin.Context, err error, status int) {
			s.fail(c, svcerr.New(svcerr.ErrInvalid, "%v", err))
		},
	})
	return e
}

// fail sends err as the envelope.
func (s *Server) fail(c *gin.Context, err error) { writeError(c, s.log, err) }

func (s *Server) recover(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			s.log.ErrorContext(c.Request.Context(), "panic serving request",
				"method", c.Request.Method, "path", c.Request.URL.Path, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			if !c.Writer.Written() {
				s.fail(c, fmt.Errorf("panic: %v", r))
			}
			c.Abort()
		}
	}()
	c.Next()
}

func (s *Server) healthz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		s.log.ErrorContext(ctx, "health check", "err", err)
		s.fail(c, svcerr.New(svcerr.ErrUnavailable, "database unreachable"))
		return
	}
	c.JSON(http.StatusOK, gin.H{"data": gin.H{"status": "ok"}})
}

// Run serves on addr until ctx ends, then shuts down gracefully (in-flight requests finish,
// up to grace).
func (s *Server) Run(ctx context.Context, addr string, grace time.Duration) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln, grace)
}

// Serve is Run on a listener the caller opened; it closes ln. The timeouts are read here
// (http_read_timeout, http_write_timeout, http_idle_timeout): changing them needs a restart.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	cfg := s.cfg.Current()
	hs := &http.Server{Handler: s.engine, ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:  time.Duration(cfg.HTTPReadTimeout) * time.Second,
		WriteTimeout: time.Duration(cfg.HTTPWriteTimeout) * time.Second,
		IdleTimeout:  time.Duration(cfg.HTTPIdleTimeout) * time.Second,
		ErrorLog:     slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	// Open event streams and push subscriptions would hold Shutdown until their clients go
	// away: they end at once (between two events; clients reconnect elsewhere, the task
	// streams with Last-Event-ID).
	if s.push != nil {
		hs.RegisterOnShutdown(func() { _ = s.push.Close() })
	}
	if s.events != nil {
		hs.RegisterOnShutdown(s.events.EndStreams)
	}
	var ms *http.Server // metrics_listen: /metrics alone, without a token
	if cfg.MetricsListen != "" {
		mln, err := net.Listen("tcp", cfg.MetricsListen)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("metrics_listen: %w", err)
		}
		ms = &http.Server{Handler: s.MetricsHandler(), ReadHeaderTimeout: readHeaderTimeout,
			WriteTimeout: time.Minute, ErrorLog: hs.ErrorLog}
		go func() {
			if err := ms.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("metrics listener", "err", err)
			}
		}()
		s.log.Info("serving metrics", "addr", mln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	s.log.Info("listening", "addr", ln.Addr().String(), "prefix", s.prefix)
	select {
	case err := <-errc:
		if ms != nil {
			_ = ms.Close()
		}
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if ms != nil {
		_ = ms.Shutdown(sctx)
	}
	if err := hs.Shutdown(sctx); err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("shutdown: %w", err)
		}
		// The requests' share of the grace is over: what still runs (a client stalled mid-body,
		// a handler waiting on a loaded database) is cut, as a stop cuts the steps still running
		// at the end of theirs. The stop itself went as designed.
		s.log.Warn("shutdown: requests still in flight at the end of their share of the grace were cut", "share", grace)
		_ = hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func constantTimeEqual(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// pluginPageCSP is the policy of a plugin's frontend files. A plugin's page is code its
// author wrote, served from the console's origin; the `sandbox allow-scripts` directive gives
// it an opaque origin wherever it is shown (the console's sandboxed frame, or opened directly),
// so its scripts run but cannot read the console's cookies, storage or pages, and its requests
// to the API carry no session (they come from origin "null"; the session cookie is SameSite=Lax
// and changes need the CSRF token). Its own files only: scripts, styles, images, fonts and
// fetches of the bundle; no forms, no plugins; framed only by this origin.
const pluginPageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"font-src 'self'; media-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; " +
	"frame-ancestors 'self'; sandbox allow-scripts"

// pluginFrontend serves, read-only, the prebuilt frontend bundle of an enabled plugin: the files
// of the folder holding its frontendEntry, under {prefix}/plugins/<slug>/ (the entry itself at
// that address's index), sandboxed by pluginPageCSP. The files are public (no session is
// needed), so they allow any origin: a sandboxed page's origin is "null", and module scripts
// and fetches are CORS requests. http.Dir keeps every path inside the folder; folders are not
// listed.
func (s *Server) pluginFrontend(c *gin.Context) {
	l, ok := s.plugins.Current().Get(c.Param("slug"))
	if !ok || !l.Enabled() || l.Manifest == nil || l.Manifest.FrontendEntry == "" {
		s.fail(c, svcerr.New(svcerr.ErrNotFound, "no frontend for plugin %q", c.Param("slug")))
		return
	}
	entry := filepath.FromSlash(l.Manifest.FrontendEntry)
	dir := filepath.Join(l.Dir, filepath.Dir(entry))
	name := c.Param("file")
	if name == "/" || name == "" {
		name = "/" + filepath.Base(entry)
	}
	f, err := http.Dir(dir).Open(name)
	if err != nil {
		s.fail(c, svcerr.New(svcerr.ErrNotFound, "no such file in the frontend of plugin %q", l.Slug))
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.IsDir() {
		s.fail(c, svcerr.New(svcerr.ErrNotFound, "no such file in the frontend of plugin %q", l.Slug))
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", pluginPageCSP)
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Cache-Control", "no-cache")
	http.ServeContent(c.Writer, c.Request, fi.Name(), fi.ModTime(), f)
}
