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
	"net/http"
	"runtime/debug"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/gin-gonic/gin"

	svc "github.com/agentsvc/svc"
	"github.com/agentsvc/svc/account"
	"github.com/agentsvc/svc/agenttemplate"
	"github.com/agentsvc/svc/api"
	"github.com/agentsvc/svc/config"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/media"
	"github.com/agentsvc/svc/netguard"
	"github.com/agentsvc/svc/push"
	"github.com/agentsvc/svc/ratelimit"
	"github.com/agentsvc/svc/secret"
	"github.com/agentsvc/svc/skill"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/svcerr"
	"github.com/agentsvc/svc/tools"
)

func init() {
	// Agent templates arrive as raw YAML text; validate them as strings, not as YAML documents.
	openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder)
	gin.SetMode(gin.ReleaseMode)
}

// Rate limits applied through the `x-rate-limit` extension of an operation.
const (
	authAttemptsPerMinute = 10
)

// Deps are what the server needs from the process.
type Deps struct {
	Config   *config.Loader
	Store    *store.Store
	Accounts *account.Service
	Secrets  *secret.Box
	Tools    *tools.Registry
	Skills   *skill.Index
	Logger   *slog.Logger
	Clock    func() time.Time
	Push     *push.Hub // the embedded push hub; nil: none
	// Tick runs one agent-loop step (agentloop.Loop.Tick) for the client-mode tick endpoint.
	Tick func(ctx context.Context, taskID int64, workerID string) (*store.Task, error)
	Net  netguard.Options // outbound SSRF screen (callback URLs)
	// Media stores media assets; nil: files below storage/media.
	Media *media.Service
}

// Server is the HTTP side of the service.
type Server struct {
	cfg      *config.Loader
	store    *store.Store
	accounts *account.Service
	secrets  *secret.Box
	tools    *tools.Registry
	skills   *skill.Index
	log      *slog.Logger
	push     *push.Hub
	tick     func(ctx context.Context, taskID int64, workerID string) (*store.Task, error)
	clock    func() time.Time
	net      netguard.Options
	media    *media.Service
	contract *contract
	limiters map[string]*ratelimit.Limiter
	agentAPI agentAPIState // per-agent API: per-key limiters (server/agentapi.go)
	prefix   string
	apiBase  string
	engine   *gin.Engine
}

// New builds the engine. The mount prefix is read once: changing app_prefix needs a restart.
func New(d Deps) (*Server, error) {
	doc, err := gen.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("load embedded contract: %w", err)
	}
	k, err := newContract(doc)
	if err != nil {
		return nil, err
	}
	clock := d.Clock
	if clock == nil {
		clock = time.Now
	}
	cfg := d.Config.Current()
	s := &Server{
		cfg: d.Config, store: d.Store, accounts: d.Accounts, secrets: d.Secrets, tools: d.Tools, skills: d.Skills, log: d.Logger, push: d.Push, tick: d.Tick, clock: clock, net: d.Net, media: d.Media, contract: k,
		prefix: cfg.AppPrefix, apiBase: cfg.AppPrefix + "/api/v1",
		limiters: map[string]*ratelimit.Limiter{
			"auth": ratelimit.New(authAttemptsPerMinute, time.Minute, clock),
		},
	}
	s.engine = s.routes()
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
	e.Use(s.recover, s.logRequests)
	e.NoRoute(func(c *gin.Context) {
		s.fail(c, svcerr.New(svcerr.ErrNotFound, "no route for %s %s", c.Request.Method, c.Request.URL.Path))
	})
	e.NoMethod(func(c *gin.Context) {
		if s.agentAPIHidden(c) { // an unmounted per-agent API has no methods either
			return
		}
		s.fail(c, svcerr.New(svcerr.ErrMethodNotAllowed, "method %s is not allowed here", c.Request.Method))
	})

	root := e.Group(s.prefix)
	root.GET("/healthz", s.healthz)
	root.GET("/.well-known/mercure", s.subscribe)
	root.GET("/api/v1/openapi.yaml", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/yaml", svc.OpenAPI)
	})
	root.GET("/schemas/agent-template.schema.json", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/schema+json", agenttemplate.SchemaJSON(s.schemaURL(c)))
	})

	handlers := api.New(api.Deps{Config: s.cfg, Store: s.store, Accounts: s.accounts, Secrets: s.secrets, Tools: s.tools, Skills: s.skills, Logger: s.log, Push: s.push,
		Tick: s.tick, Clock: s.clock, Net: s.net, Media: s.media})
	strict := gen.NewStrictHandlerWithOptions(handlers.Strict(), nil, gen.StrictGinServerOptions{
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

// schemaURL is {schema_url}: the template schema's public address.
func (s *Server) schemaURL(c *gin.Context) string {
	return s.cfg.Current().PublicBase(c.Request) + "/schemas/agent-template.schema.json"
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

func (s *Server) logRequests(c *gin.Context) {
	start := time.Now()
	c.Next()
	s.log.InfoContext(c.Request.Context(), "request", "method", c.Request.Method,
		"path", c.Request.URL.Path, "status", c.Writer.Status(), "duration_ms", time.Since(start).Milliseconds())
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
	hs := &http.Server{Addr: addr, Handler: s.engine, ReadHeaderTimeout: 10 * time.Second}
	if s.push != nil {
		hs.RegisterOnShutdown(func() { _ = s.push.Close() }) // end open subscriptions so Shutdown can finish
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	s.log.Info("listening", "addr", addr, "prefix", s.prefix)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func constantTimeEqual(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
