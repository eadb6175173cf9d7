package server

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gin-gonic/gin"

	"github.com/agentsvc/svc/api"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/ratelimit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// The per-agent API (/agent-api/*, security scheme agentKey) is mounted only while the setting
// SVC_AGENT_API is on and the worker runs in server mode, both read per request; otherwise its
// paths answer 404 AGENT_API_DISABLED naming the setting, before any authentication. When mounted, a
// request needs `Authorization: Bearer <key>` (never a session cookie) and is limited per key
// to SVC_AGENT_API_RATE_LIMIT_MAX requests a minute.

// agentAPISegment is the first path segment of the per-agent API below the API base.
const agentAPISegment = "/agent-api"

// maxAgentLimiters bounds the limiters kept for past values of the per-key budget.
const maxAgentLimiters = 8

// agentAPIState is the per-agent API's share of the server: one limiter per configured budget,
// so a budget changed at runtime applies at once, with fresh counts (the zero value is ready to
// use). The limiters keep their counts in the database, named after the budget, so every API
// process with the same setting shares each key's budget.
type agentAPIState struct {
	mu       sync.Mutex
	limiters map[int]*ratelimit.Shared
}

// limiter returns the limiter allowing max requests a minute per key.
func (a *agentAPIState) limiter(b ratelimit.Backend, max int, clock func() time.Time) *ratelimit.Shared {
	a.mu.Lock()
	defer a.mu.Unlock()
	if l, ok := a.limiters[max]; ok {
		return l
	}
	if a.limiters == nil || len(a.limiters) >= maxAgentLimiters {
		a.limiters = map[int]*ratelimit.Shared{}
	}
	l := ratelimit.NewShared(b, "agent-key/"+strconv.Itoa(max), max, time.Minute, clock)
	a.limiters[max] = l
	return l
}

// agentAPIMounted reports whether the per-agent API is served under cfg.
func agentAPIMounted(cfg *config.Config) bool {
	return cfg != nil && cfg.AgentAPI && cfg.WorkerRuntimeMode == "server"
}

// agentAPIHidden answers a request for a /agent-api path while the per-agent API is not
// mounted with 404 AGENT_API_DISABLED, whose message names what to change (the setting
// SVC_AGENT_API, or the worker runtime mode), and reports whether it did. The gate calls it for
// the API's routes and gin's NoMethod and NoRoute handlers for wrong methods and unknown paths
// under it, before any authentication: a bare 404 "no route" read like a mistyped path.
func (s *Server) agentAPIHidden(c *gin.Context) bool {
	rel := strings.TrimPrefix(c.Request.URL.EscapedPath(), s.apiBase)
	if rel != agentAPISegment && !strings.HasPrefix(rel, agentAPISegment+"/") {
		return false
	}
	cfg := s.cfg.View()
	if agentAPIMounted(cfg) {
		return false
	}
	s.fail(c, agentAPIDisabled(cfg))
	return true
}

// agentAPIDisabled says why the per-agent API is not mounted under cfg. Errors:
// ErrAgentAPIDisabled.
func agentAPIDisabled(cfg *config.Config) error {
	if cfg != nil && cfg.AgentAPI {
		return svcerr.New(svcerr.ErrAgentAPIDisabled,
			"the per-agent API is off: it is served only when the worker runtime mode (SVC_WORKER_RUNTIME_MODE) is server, and this process runs as %s", cfg.WorkerRuntimeMode)
	}
	return svcerr.New(svcerr.ErrAgentAPIDisabled,
		"the per-agent API is off: an administrator turns on the setting SVC_AGENT_API (Settings in the console, or the environment)")
}

// usesAgentKey reports whether the security requirements name the agentKey scheme.
func usesAgentKey(reqs openapi3.SecurityRequirements) bool {
	for _, req := range reqs {
		if _, ok := req["agentKey"]; ok {
			return true
		}
	}
	return false
}

// authenticateAgentKey authenticates a per-agent API request by its bearer key (every refusal
// is the same 401), applies the key's rate limit (429 with Retry-After), records the key's use
// and returns the context carrying the key. Session cookies play no part. For the operations of
// foldedLimit the limit's event is left pending in the context (ratelimit.PendingFrom) unless
// the counts this process read last refuse it already: the gate hands it to the operation's
// write (limitHit) and counts it after the handler when no write did.
func (s *Server) authenticateAgentKey(c *gin.Context, op *openapi3.Operation) (context.Context, error) {
	ctx := c.Request.Context()
	k, err := s.keys.Authenticate(ctx, c.GetHeader("Authorization"))
	if err != nil {
		return nil, err
	}
	max := defaultAgentAPIRate
	if cfg := s.cfg.View(); cfg != nil && cfg.AgentAPIRateLimitMax > 0 {
		max = cfg.AgentAPIRateLimitMax
	}
	c.Set(logKeyID, k.KeyID)
	lim := s.agentAPI.limiter(s.store, max, s.clock)
	if foldedLimit[operationID(op)] {
		p, ok, wait := lim.Defer(k.KeyID)
		if !ok {
			return nil, agentKeyLimited(wait)
		}
		ctx = ratelimit.WithPending(ctx, p)
	} else {
		ok, wait, err := lim.Check(ctx, k.KeyID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, agentKeyLimited(wait)
		}
	}
	if err := s.keys.Touch(ctx, k); err != nil {
		// Bookkeeping only: the request goes on.
		s.log.WarnContext(ctx, "record API key use", "key_id", k.KeyID, "err", err)
	}
	return api.WithAgentKey(ctx, k), nil
}

// foldedLimit are the per-agent API operations whose one write transaction also counts the
// key's rate-limit event (issue 28, item 7: a chat start paid a second write transaction only
// for the shared window).
var foldedLimit = map[string]bool{"startAgentChat": true}

// agentKeyLimited is the refusal of a key over its budget. Errors: ErrRateLimited.
func agentKeyLimited(wait time.Duration) error {
	return svcerr.RateLimited(wait, "too many requests for this API key; retry later")
}

// limitHit is p for the request's write (api.RequestInfo.Limit): counted in its transaction,
// refused as the gate refuses.
func limitHit(p *ratelimit.Pending) *store.LimitHit {
	return &store.LimitHit{Key: p.Key(), Start: p.Start(), Window: p.Window(), Allow: p.Decide,
		Refused: func() error { return agentKeyLimited(p.Wait()) }, Done: p.Done}
}

// settleLimit counts a request's pending rate-limit event that no write counted (the request
// failed before its write, or had none), after the handler: the budget is spent as if the gate
// had counted it. A failure is logged; the answer is already decided.
func (s *Server) settleLimit(c *gin.Context, p *ratelimit.Pending) {
	ctx := context.WithoutCancel(c.Request.Context())
	if _, _, err := p.Settle(ctx); err != nil {
		s.log.WarnContext(ctx, "count a rate-limited request", "err", err)
	}
}

// defaultAgentAPIRate is the per-key budget when the setting holds no positive value.
const defaultAgentAPIRate = 60
