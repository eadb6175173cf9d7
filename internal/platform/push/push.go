// Package push delivers task and notification events to browsers over server-sent events.
//
// Events go to Mercure-style topics, one pair per user (TaskTopic, NotificationTopic). Three
// publishers exist: the embedded Hub (the service's own SSE hub, served at
// {prefix}/.well-known/mercure, used when mercure_url is empty), Mercure (an external Mercure
// hub, mercure_url and mercure_jwt_key) and Nop (push off: client-worker mode, or a Mercure hub
// without a key). Service picks one from the current configuration at every call, reports the
// channel's status and issues subscriber tokens limited to the caller's own topics.
package push

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Publisher sends one event to the subscribers of a topic. Publishing to a topic nobody listens
// to is not an error: the event is dropped, as a Mercure hub without history does.
type Publisher interface {
	// Publish sends data (one SSE event; usually a JSON document) to topic. Errors: ErrInvalid
	// (empty data on the embedded hub), ErrUnavailable (the hub refused or did not answer).
	Publish(ctx context.Context, topic string, data []byte) error
}

// TaskTopic is the topic of a user's task events: user/{userID}/tasks.
func TaskTopic(userID int64) string { return "user/" + strconv.FormatInt(userID, 10) + "/tasks" }

// NotificationTopic is the topic of a user's in-app notifications: user/{userID}/notifications.
func NotificationTopic(userID int64) string {
	return "user/" + strconv.FormatInt(userID, 10) + "/notifications"
}

// OwnTopics lists every topic userID may subscribe to, tasks first.
func OwnTopics(userID int64) []string {
	return []string{TaskTopic(userID), NotificationTopic(userID)}
}

// Nop is the publisher when push is off: it drops every event.
type Nop struct{}

// Publish drops the event and never fails.
func (Nop) Publish(context.Context, string, []byte) error { return nil }

// Kind says which hub serves push.
type Kind string

// Hub kinds, as the contract's SseHub spells them.
const (
	KindEmbedded Kind = "embedded" // the service's own hub (mercure_url empty)
	KindMercure  Kind = "mercure"  // the configured Mercure hub
)

// Timing of the push channel.
const (
	// PollInterval is how often clients poll GET /tasks/{taskId} without push, in seconds.
	PollInterval = 5
	// TokenTTL is the lifetime of a subscriber token: a client asks for a new one before it
	// ends. On the embedded hub an open subscription outlives its token but not its session
	// (the token's sid); a reconnect needs a valid token of a session that stands. An external
	// Mercure hub knows no sessions: there this lifetime bounds what a token opens after logout.
	TokenTTL = time.Hour
	// PublishTimeout bounds one publication to a Mercure hub.
	PublishTimeout = 5 * time.Second
)

// Status is the state of the push channel.
type Status struct {
	Kind      Kind
	Available bool // false: clients poll instead
}

// StatusOf derives the push status from a configuration, assuming the embedded hub runs.
// Push is off in client-worker mode (the browser gets every post-tick task from its own tick
// calls) and when mercure_url is set without mercure_jwt_key.
func StatusOf(c *config.Config) Status {
	st := Status{Kind: KindEmbedded, Available: true}
	if c.MercureURL != "" {
		st.Kind = KindMercure
		st.Available = c.MercureJWTKey != ""
	}
	if c.WorkerRuntimeMode == "client" {
		st.Available = false
	}
	return st
}

// Service is the push channel as the rest of the service sees it: the publisher chosen by the
// current configuration (it implements Publisher itself), the channel's status, and subscriber
// tokens. It is safe for concurrent use.
type Service struct {
	cfg    func() *config.Config
	hub    *Hub
	client *http.Client
	now    func() time.Time

	mu          sync.Mutex
	mercureFail error // the failure of the last publication to a Mercure hub (nil: it succeeded, or none yet)
}

var _ Publisher = (*Service)(nil)

// NewService returns the push service. cfg is read at every call, so an administrator's change
// of mercure_url or worker_runtime_mode applies at once; the service never modifies what it
// returns (it may be the loader's shared snapshot, config.Loader.View). hub is the embedded
// hub; nil means there is none and embedded push is unavailable. Time comes from the hub's
// clock.
func NewService(cfg func() *config.Config, hub *Hub) *Service {
	s := &Service{cfg: cfg, hub: hub, client: &http.Client{Timeout: PublishTimeout}, now: time.Now}
	if hub != nil {
		s.now = hub.now
	}
	return s
}

// Status reports which hub serves push and whether push is available.
func (s *Service) Status() Status {
	st := StatusOf(s.cfg())
	if st.Kind == KindEmbedded && s.hub == nil {
		st.Available = false
	}
	return st
}

// Publisher returns the publisher the current configuration selects: the embedded hub, a
// Mercure publisher, or Nop when push is unavailable.
func (s *Service) Publisher() Publisher {
	c := s.cfg()
	st := s.Status()
	switch {
	case !st.Available:
		return Nop{}
	case st.Kind == KindMercure:
		return NewMercure(c.MercurePublishURL, []byte(c.MercureJWTKey), s.client)
	default:
		return s.hub
	}
}

// Publish sends data to topic through the publisher the configuration selects (see Publisher).
func (s *Service) Publish(ctx context.Context, topic string, data []byte) error {
	p := s.Publisher()
	err := p.Publish(ctx, topic, data)
	if _, ok := p.(*Mercure); ok {
		s.mu.Lock()
		s.mercureFail = err
		s.mu.Unlock()
	}
	return err
}

// Ready says whether the push channel works, for the readiness check: nil when push is off by
// configuration (clients poll), when the embedded hub runs, or when the last publication to the
// Mercure hub did not fail (none yet counts as working); otherwise why not.
func (s *Service) Ready() error {
	st := StatusOf(s.cfg())
	switch {
	case !st.Available:
		return nil
	case st.Kind == KindEmbedded:
		if s.hub == nil || !s.hub.Running() {
			return errors.New("the embedded push hub is not running")
		}
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mercureFail != nil {
		return fmt.Errorf("the last publication to the Mercure hub failed: %w", s.mercureFail)
	}
	return nil
}

// HubURL is the absolute subscribe URL of the hub: mercure_url, or {base}/.well-known/mercure
// for the embedded hub, where base is the public origin with the mount prefix.
func (s *Service) HubURL(base string) string {
	if c := s.cfg(); c.MercureURL != "" {
		return c.MercureURL
	}
	return base + "/.well-known/mercure"
}

// Grant is a subscriber token and what it allows.
type Grant struct {
	Token     string
	Kind      Kind
	HubURL    string
	Topics    []string
	ExpiresAt time.Time
}

// Authorize issues userID a subscriber token for topics, bound to the session sessionID (the
// embedded hub refuses it, and ends its subscriptions, once that session ended; a Mercure hub
// cannot, so there the token's lifetime bounds a subscription) (default: both own topics; duplicates
// are dropped), signed for the hub in use. base is the public origin with the mount prefix (see
// HubURL). Errors: ErrNotFound when push is unavailable, ErrForbidden when a topic is not one of
// userID's own.
func (s *Service) Authorize(userID, sessionID int64, topics []string, base string) (*Grant, error) {
	st := s.Status()
	if !st.Available {
		return nil, svcerr.New(svcerr.ErrNotFound, "push is not available; poll GET /tasks/{taskId} instead")
	}
	granted, err := ownTopics(userID, topics)
	if err != nil {
		return nil, err
	}
	key := []byte(s.cfg().MercureJWTKey)
	if st.Kind == KindEmbedded {
		key = s.hub.key
	}
	now := s.now()
	tok, exp, err := subscriberToken(key, userID, sessionID, granted, now, TokenTTL)
	if err != nil {
		return nil, err
	}
	return &Grant{Token: tok, Kind: st.Kind, HubURL: s.HubURL(base), Topics: granted, ExpiresAt: exp}, nil
}

// ownTopics checks that every requested topic is one of userID's own and returns them without
// duplicates; no topic means all own topics. Errors: ErrForbidden.
func ownTopics(userID int64, topics []string) ([]string, error) {
	own := OwnTopics(userID)
	if len(topics) == 0 {
		return own, nil
	}
	out := make([]string, 0, len(topics))
	for _, t := range topics {
		if !slices.Contains(own, t) {
			return nil, svcerr.New(svcerr.ErrForbidden, "topic %q is not one of your own topics", t)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// claims is the JWT body Mercure reads: the mercure claim lists the topics a subscriber may
// receive (subscribe) or a publisher may send to (publish).
type claims struct {
	Mercure mercureClaim `json:"mercure"`
	// Session is the id of the session the token was issued to (never its token or digest):
	// the embedded hub ends with it what the token opened.
	Session int64 `json:"sid,omitempty"`
	jwt.RegisteredClaims
}

type mercureClaim struct {
	Subscribe []string `json:"subscribe,omitempty"`
	Publish   []string `json:"publish,omitempty"`
}

// subscriberToken signs an HS256 subscriber JWT for topics, valid from now for ttl, bound to the
// session sessionID.
func subscriberToken(key []byte, userID, sessionID int64, topics []string, now time.Time, ttl time.Duration) (string, time.Time, error) {
	exp := now.Add(ttl).Truncate(time.Second)
	c := claims{
		Mercure: mercureClaim{Subscribe: topics},
		Session: sessionID,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   strconv.FormatInt(userID, 10),
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp),
		},
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(key)
	if err != nil {
		return "", time.Time{}, err
	}
	return tok, exp.UTC(), nil
}
