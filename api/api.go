// Package api implements gen.StrictServerInterface: each handler converts the generated request
// into a service call and the result back into a generated response. Rules live in the services
// (account, store …); errors are returned as categorised errors and rendered by the server.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentsvc/svc/account"
	"github.com/agentsvc/svc/agent"
	"github.com/agentsvc/svc/chat"
	"github.com/agentsvc/svc/config"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/group"
	"github.com/agentsvc/svc/media"
	"github.com/agentsvc/svc/netguard"
	"github.com/agentsvc/svc/picture"
	"github.com/agentsvc/svc/push"
	"github.com/agentsvc/svc/schedule"
	"github.com/agentsvc/svc/secret"
	"github.com/agentsvc/svc/skill"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/svcerr"
	"github.com/agentsvc/svc/task"
	"github.com/agentsvc/svc/templateimport"
	"github.com/agentsvc/svc/tick"
	"github.com/agentsvc/svc/toolconfig"
	"github.com/agentsvc/svc/tools"
)

// Deps are the services the handlers call.
type Deps struct {
	Config   *config.Loader
	Store    *store.Store
	Accounts *account.Service
	Secrets  *secret.Box // seals secrets at rest (model API keys, password-typed settings)
	Tools    *tools.Registry
	Skills   *skill.Index
	Logger   *slog.Logger
	Push     *push.Hub // the embedded push hub; nil: none (embedded push unavailable)
	// Tick runs one agent-loop step of a task leased to workerID (agentloop.Loop.Tick); the
	// client-mode tick endpoint calls it. nil: ticks fail as an internal error.
	Tick  func(ctx context.Context, taskID int64, workerID string) (*store.Task, error)
	Clock func() time.Time // drives per-user rate limits; nil: time.Now
	Net   netguard.Options // outbound SSRF screen of callback URLs (tests: AllowLoopback)
	Media *media.Service   // media assets; nil: files below storage/media
}

// API implements every operation of the contract; operations not built yet live in
// unimplemented.gen.go (written by internal/stubgen) and answer 501.
type API struct {
	cfg      *config.Loader
	store    *store.Store
	accounts *account.Service
	secrets  *secret.Box
	tools    *tools.Registry
	skills   *skill.Index
	log      *slog.Logger
	net      netguard.Options // outbound SSRF screen (callback URLs)
	// Services of later areas are added below, one line each, constructed in New.
	groups    *group.Service
	agents    *agent.Service
	tcfg      *toolconfig.Service     // tool configuration: settings layers, agent and group tools
	templates *templateimport.Service // agent templates: catalog, validate, import, export
	tasks     *task.Service           // tasks: state machine, approvals, questions, retries
	push      *push.Service           // push: /sse status, subscription info, subscriber tokens
	ticks     *tick.Service           // client-worker mode: tick and housekeeping
	schedules *schedule.Service       // prompt templates and scheduled runs
	chats     *chat.Service           // per-agent API chats (key-scoped view of tasks)
	media     *media.Service          // media assets: storage, derivatives, per-agent scope
	pictures  *picture.Service        // pictures of users, agents and groups
}

var _ gen.StrictServerInterface = (*API)(nil)

// New returns the handlers.
func New(d Deps) *API {
	a := &API{cfg: d.Config, store: d.Store, accounts: d.Accounts, secrets: d.Secrets, tools: d.Tools, skills: d.Skills, log: d.Logger, net: d.Net}
	// Services of later areas are constructed here, one statement each.
	a.groups = group.New(d.Store, d.Secrets)
	a.agents = agent.New(d.Store)
	a.tcfg = toolconfig.New(d.Store, d.Tools, d.Skills, d.Secrets)
	a.templates = templateimport.New(d.Store, d.Tools, d.Skills)
	a.tasks = task.New(d.Store, d.Tools)
	a.push = push.NewService(d.Config.Current, d.Push)
	a.schedules = schedule.New(d.Store)
	if a.media = d.Media; a.media == nil {
		a.media = media.New(d.Store, "", d.Clock)
	}
	a.pictures = picture.New(d.Store, a.media)
	a.groups.WithMedia(a.media) // files of a deleted group's assets
	a.chats = chat.New(d.Store, a.tasks, d.Net).WithMedia(a.media)
	a.ticks = tick.New(tick.Options{Store: d.Store, Tasks: a.tasks, Config: d.Config.Current, Tick: d.Tick, Clock: d.Clock,
		SweepMedia: a.media.Sweep})
	return a
}

// UnimplementedOperations lists the operationIds that answer 501 NOT_IMPLEMENTED.
func UnimplementedOperations() []string { return append([]string(nil), unimplementedOps...) }

func notImplemented(op string) error {
	return svcerr.New(svcerr.ErrNotImplemented, "%s is not implemented yet", op)
}

// caller returns the authenticated identity the gate put on ctx.
func caller(ctx context.Context) (*account.Identity, error) {
	id := account.IdentityFrom(ctx)
	if id == nil {
		return nil, svcerr.New(svcerr.ErrUnauthenticated, "authentication required")
	}
	return id, nil
}

// admin returns the caller when it is an administrator, ErrForbidden otherwise.
func admin(ctx context.Context) (*account.Identity, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if !id.User.IsAdmin() {
		return nil, svcerr.New(svcerr.ErrForbidden, "administrator rights required")
	}
	return id, nil
}

// Strict returns the handlers as the generated strict-server interface. Each handler receives
// the request's own context, never the pooled *gin.Context.
func (a *API) Strict() gen.StrictServerInterface { return strictAdapter{a} }

// RequestInfo is what handlers may read of the HTTP request; the server's gate stores it in the
// request context.
type RequestInfo struct {
	Request  *http.Request
	ClientIP string
	// RawBody is the body exactly as sent (empty, never nil, when there was none), captured by
	// the gate only for operations whose body may be raw text (application/yaml or text/plain:
	// the agent template uploads); nil for every other operation.
	RawBody []byte
}

type requestInfoKey struct{}

// WithRequestInfo returns ctx carrying ri.
func WithRequestInfo(ctx context.Context, ri RequestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, ri)
}

func requestInfo(ctx context.Context) RequestInfo {
	ri, _ := ctx.Value(requestInfoKey{}).(RequestInfo)
	return ri
}

// request returns the HTTP request the gate recorded, or nil outside a request.
func request(ctx context.Context) *http.Request { return requestInfo(ctx).Request }

// requestContext turns the generated handler's *gin.Context into the request's own context.
func requestContext(ctx context.Context) context.Context {
	if c, ok := ctx.(*gin.Context); ok && c.Request != nil {
		return c.Request.Context()
	}
	return ctx
}

// publicBase is the public origin with the mount prefix (see config.Config.PublicBase).
func (a *API) publicBase(ctx context.Context) string {
	return a.cfg.Current().PublicBase(request(ctx))
}
