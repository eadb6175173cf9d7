package apikey

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/domain/agent"
	"github.com/agentsvc/svc/internal/vocab/fieldcheck"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// unauthenticatedMsg is the one answer to every unusable key, so a caller cannot tell a
// missing header from a malformed, unknown, revoked or wrong key.
const unauthenticatedMsg = "a valid API key is required"

// ErrUnauthenticated is what Authenticate returns for any key that does not authenticate.
var ErrUnauthenticated = svcerr.New(svcerr.ErrUnauthenticated, unauthenticatedMsg)

// dummyDigest is compared against when the key id is unknown, so that path costs the same
// digest and comparison as a wrong secret.
var dummyDigest = Digest("no such key")

// Store is what the service needs of the store; *store.Store satisfies it.
type Store interface {
	access.Memberships
	Agent(ctx context.Context, id, viewer int64) (*store.Agent, error)
	APIKeys(ctx context.Context, agentID int64) ([]store.AgentAPIKey, error)
	APIKeyByKeyID(ctx context.Context, keyID string) (*store.AgentAPIKey, error)
	CreateAPIKey(ctx context.Context, k store.AgentAPIKey, check store.AgentCheck) (*store.AgentAPIKey, error)
	RevokeAPIKey(ctx context.Context, agentID int64, keyID string, check store.AgentCheck) error
	TouchAPIKey(ctx context.Context, id int64, at time.Time) error
}

// Service applies the key rules on top of the store.
type Service struct {
	store Store
	clock func() time.Time
}

// New returns the service; clock (nil: time.Now) stamps last use.
func New(st Store, clock func() time.Time) *Service {
	if clock == nil {
		clock = time.Now
	}
	return &Service{store: st, clock: clock}
}

// List returns the active keys of agent agentID, newest first, for a user who may manage it.
// Errors: ErrNotFound "agent not found" (unknown, malformed or invisible), ErrForbidden (visible
// without the manage role).
func (s *Service) List(ctx context.Context, u *store.User, agentID string) ([]store.AgentAPIKey, error) {
	aid, sc, err := s.prepare(ctx, u, agentID)
	if err != nil {
		return nil, err
	}
	a, err := s.store.Agent(ctx, aid, u.ID)
	if err != nil {
		return nil, err
	}
	if err := manage(sc)(a); err != nil {
		return nil, err
	}
	return s.store.APIKeys(ctx, aid)
}

// Create mints a key named name (trimmed; 1 to MaxNameLen characters, no NUL) for agent
// agentID, minted by u, who must be able to manage the agent. It returns the stored key and the
// full key, which is never available again. Errors: ErrInvalid (name, checked first),
// ErrNotFound "agent not found", ErrForbidden.
func (s *Service) Create(ctx context.Context, u *store.User, agentID, name string) (*store.AgentAPIKey, string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, "", svcerr.New(svcerr.ErrInvalid, "name is required")
	}
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > limits.APIKeyNameLen {
		return nil, "", svcerr.New(svcerr.ErrInvalid, "name must be 1 to %d characters", limits.APIKeyNameLen)
	}
	if err := fieldcheck.Text("name", name, limits.APIKeyNameLen); err != nil {
		return nil, "", err // a NUL byte
	}
	aid, sc, err := s.prepare(ctx, u, agentID)
	if err != nil {
		return nil, "", err
	}
	for attempt := 0; ; attempt++ {
		m := Mint()
		k, err := s.store.CreateAPIKey(ctx, store.AgentAPIKey{KeyID: m.ID, AgentID: aid, Name: name,
			SecretDigest: m.Digest, CreatedBy: u.ID}, manage(sc))
		if errors.Is(err, svcerr.ErrConflict) && attempt < 2 {
			continue // an 80-bit id collided: draw again
		}
		if err != nil {
			return nil, "", err
		}
		return k, m.Key, nil
	}
}

// Revoke revokes key keyID of agent agentID for a user who may manage the agent. It is
// idempotent and acts only within that agent: an unknown key id, a key of another agent or an
// already revoked key is no error. Errors: ErrNotFound "agent not found", ErrForbidden.
func (s *Service) Revoke(ctx context.Context, u *store.User, agentID, keyID string) error {
	aid, sc, err := s.prepare(ctx, u, agentID)
	if err != nil {
		return err
	}
	return s.store.RevokeAPIKey(ctx, aid, keyID, manage(sc))
}

// Authenticate checks an Authorization header value: "Bearer <key>" with a well-formed, known,
// unrevoked key whose secret matches the stored digest (compared in constant time). Every
// refusal is ErrUnauthenticated with the same message; database failures are returned as
// they are.
func (s *Service) Authenticate(ctx context.Context, authorization string) (*store.AgentAPIKey, error) {
	scheme, token, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, ErrUnauthenticated
	}
	id, secret, err := Parse(token)
	if err != nil {
		return nil, ErrUnauthenticated
	}
	k, err := s.store.APIKeyByKeyID(ctx, id)
	want := dummyDigest
	switch {
	case errors.Is(err, svcerr.ErrNotFound):
		k = nil
	case err != nil:
		return nil, err
	default:
		want = k.SecretDigest
	}
	match := subtle.ConstantTimeCompare([]byte(Digest(secret)), []byte(want)) == 1
	if k == nil || !match || k.RevokedAt != nil {
		return nil, ErrUnauthenticated
	}
	return k, nil
}

// StillValid reports whether key k still authenticates (not revoked, not deleted with its
// agent), for what outlives the request that authenticated: an open event stream asks it every
// second. Errors: ErrUnauthenticated when it no longer does; database errors.
func (s *Service) StillValid(ctx context.Context, k *store.AgentAPIKey) error {
	cur, err := s.store.APIKeyByKeyID(ctx, k.KeyID)
	if errors.Is(err, svcerr.ErrNotFound) || err == nil && (cur.RevokedAt != nil || cur.ID != k.ID) {
		return ErrUnauthenticated
	}
	return err
}

// Touch records a use of k now. It writes only when the recorded last use is at least
// store.APIKeyTouchInterval old, so last_used_at has about a minute's granularity.
func (s *Service) Touch(ctx context.Context, k *store.AgentAPIKey) error {
	now := s.clock()
	if k.LastUsedAt != nil && now.Sub(*k.LastUsedAt) < store.APIKeyTouchInterval {
		return nil
	}
	return s.store.TouchAPIKey(ctx, k.ID, now)
}

// prepare parses the agent id and loads u's scope.
func (s *Service) prepare(ctx context.Context, u *store.User, agentID string) (int64, *access.Scope, error) {
	aid, err := agent.ParseID(agentID)
	if err != nil {
		return 0, nil, err
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return 0, nil, err
	}
	return aid, sc, nil
}

// manage is the store check for key management: the manage role on the agent's principal
// (ErrNotFound when the agent is invisible, ErrForbidden when visible only).
func manage(sc *access.Scope) store.AgentCheck {
	return func(a *store.Agent) error { return sc.Manage(a.PrincipalID, "agent") }
}
