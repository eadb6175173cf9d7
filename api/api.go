// Package api implements gen.StrictServerInterface: each handler converts the generated request
// into a service call and the result back into a generated response. Rules live in the services
// (account, user, task …), who may call them included; errors are returned as categorised
// errors and rendered by the server.
package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/domain/agent"
	"github.com/agentsvc/svc/internal/domain/agenttemplate"
	"github.com/agentsvc/svc/internal/domain/apikey"
	"github.com/agentsvc/svc/internal/domain/approval/inbox"
	"github.com/agentsvc/svc/internal/domain/chat"
	"github.com/agentsvc/svc/internal/domain/group"
	"github.com/agentsvc/svc/internal/domain/mail"
	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/internal/domain/memory"
	"github.com/agentsvc/svc/internal/domain/notification"
	"github.com/agentsvc/svc/internal/domain/picture"
	"github.com/agentsvc/svc/internal/domain/runtimesettings"
	"github.com/agentsvc/svc/internal/domain/schedule"
	"github.com/agentsvc/svc/internal/domain/spool"
	"github.com/agentsvc/svc/internal/domain/sso"
	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/domain/usage"
	"github.com/agentsvc/svc/internal/domain/user"
	"github.com/agentsvc/svc/internal/jobs/worker"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/push"
	"github.com/agentsvc/svc/internal/platform/taskstream"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/plugins"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/toolconfig"
)

// Deps are what the handlers call: the configuration, the store and the services, each built
// once by server.Open and shared with the background workers (the agent loop, the daemon).
type Deps struct {
	Config        *config.Loader
	Store         *store.Store
	Logger        *slog.Logger
	Accounts      *account.Service
	Users         *user.Service // accounts and roles (administrators), a user's profile and locations
	Groups        *group.Service
	Agents        *agent.Service
	ToolConfig    *toolconfig.Service            // tool configuration: settings layers, agent and group tools
	Templates     *agenttemplate.Service         // agent templates: catalog, validate, import, export
	Tasks         *task.Service                  // tasks: state machine, approvals, questions, retries
	Push          *push.Service                  // push: /sse status, subscription info, subscriber tokens
	Ticks         *worker.Client                 // client-worker mode: tick and housekeeping
	Schedules     *schedule.Service              // prompt templates and scheduled runs
	Chats         *chat.Service                  // per-agent API chats (key-scoped view of tasks)
	Media         *media.Service                 // media assets: storage, derivatives, per-agent scope
	Pictures      *picture.Service               // pictures of users, agents and groups
	APIKeys       *apikey.Service                // per-agent API keys
	Plugins       *plugins.Runtime               // loaded plugins: inventory, search providers
	PluginAdmin   *plugins.Admin                 // catalog, install, update, uninstall
	Notifications *notification.Service          // in-app notifications and subscriptions
	Tools         *tools.Registry                // registered tools (core, then plugins')
	Search        func() []plugins.NamedProvider // palette search providers (compiled-in plugins, plugin MCP tools)
	MailConfig    *mail.ConfigService            // the administrator's mail configuration and test message
	Settings      *runtimesettings.Service       // the runtime settings administrators may change
	Events        *taskstream.Broker             // task event streams
	Approvals     *inbox.Service                 // the approvals inbox and batch decisions
	SSO           *sso.Service                   // single sign-on providers and the OpenID Connect flow
	Usage         *usage.Service                 // usage sums and budgets
	// LLMDriver is the model driver a task's step uses for a configuration (its HTTP client and
	// outbound screen included): a configuration's Test connection calls through it.
	LLMDriver func(*store.LLMConfig) (llm.Driver, error)
}

// API implements every operation of the contract; operations not built yet live in
// unimplemented.gen.go (written by cmd/stubgen) and answer 501.
type API struct {
	cfg           *config.Loader
	store         *store.Store
	accounts      *account.Service
	users         *user.Service
	groups        *group.Service
	agents        *agent.Service
	tcfg          *toolconfig.Service
	templates     *agenttemplate.Service
	tasks         *task.Service
	inbox         *inbox.Service
	push          *push.Service
	ticks         *worker.Client
	schedules     *schedule.Service
	memories      *memory.Service
	chats         *chat.Service
	media         *media.Service
	pictures      *picture.Service
	apiKeys       *apikey.Service
	plugins       *plugins.Runtime
	notifications *notification.Service
	pluginAdmin   *plugins.Admin
	search        func() []plugins.NamedProvider
	tools         *tools.Registry
	log           *slog.Logger
	mailConfig    *mail.ConfigService
	settings      *runtimesettings.Service
	events        *taskstream.Broker
	sso           *sso.Service
	llmDriver     func(*store.LLMConfig) (llm.Driver, error)
	mcp           http.Handler // POST /agent-api/mcp (agentmcp.go)
	usage         *usage.Service
}

var _ gen.StrictServerInterface = (*API)(nil)

// New returns the handlers over d's services (it builds none).
func New(d Deps) *API {
	a := &API{cfg: d.Config, store: d.Store, accounts: d.Accounts, users: d.Users, groups: d.Groups, agents: d.Agents, tcfg: d.ToolConfig,
		templates: d.Templates, tasks: d.Tasks, inbox: d.Approvals, push: d.Push, ticks: d.Ticks, schedules: d.Schedules, memories: memory.New(d.Store), chats: d.Chats,
		media: d.Media, pictures: d.Pictures, apiKeys: d.APIKeys, plugins: d.Plugins, notifications: d.Notifications, pluginAdmin: d.PluginAdmin, search: d.Search, tools: d.Tools, log: d.Logger,
		mailConfig: d.MailConfig, settings: d.Settings, events: d.Events, llmDriver: d.LLMDriver, usage: d.Usage, sso: d.SSO}
	a.mcp = newMCPHandler(a)
	return a
}

// UnimplementedOperations lists the operationIds that answer 501 NOT_IMPLEMENTED.
func UnimplementedOperations() []string { return append([]string(nil), unimplementedOps...) }

// caller returns the authenticated identity the gate put on ctx.
func caller(ctx context.Context) (*account.Identity, error) {
	id := account.IdentityFrom(ctx)
	if id == nil {
		return nil, svcerr.New(svcerr.ErrUnauthenticated, "authentication required")
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
	// Inline holds the inline files the gate decoded while the body streamed, for operations
	// marked x-inline-files (their data URLs are placeholders in the body); nil otherwise.
	Inline *spool.Files
	// Limit is the request's per-key rate-limit event when the gate left it to the request's
	// write (a chat start: counted in the task's transaction); nil otherwise. The gate counts
	// it after the handler when no write did.
	Limit *store.LimitHit
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

// client is the address and user agent of the request's sender, recorded with the sessions it
// opens (empty outside a request).
func client(ctx context.Context) (ip, userAgent string) {
	ri := requestInfo(ctx)
	if ri.Request != nil {
		userAgent = ri.Request.UserAgent()
	}
	return ri.ClientIP, userAgent
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
	return a.cfg.Current().PublicBase()
}
