package push

import (
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// subscriberKeyLabel is the HKDF info that derives the embedded hub's token key from the master
// key; changing it invalidates every issued subscriber token.
const subscriberKeyLabel = "svc/push/embedded-hub/subscriber-jwt/v1"

// Limits of one subscription request.
const (
	maxSubscribeTopics = 10
	maxTopicLength     = 255
	// DefaultHeartbeat is how often an idle subscription receives a comment line, so proxies
	// keep it open.
	DefaultHeartbeat = 25 * time.Second
	// subscriberBuffer is how many events wait for one subscriber; a subscriber whose buffer
	// is full is too slow: it is disconnected (and reconnects, re-reading what it shows). Its
	// writer moves events into the connection's socket buffer (tens to hundreds of KiB) at once,
	// so the buffer fills only while the client reads nothing; each slot costs every open
	// subscription 24 bytes (16: 384 bytes; it was 64).
	subscriberBuffer = 16
	// DefaultRecheck is how often the hub asks whether the sessions of its open subscriptions
	// still stand (HubOptions.SessionStands): a subscription ends within it of its session.
	DefaultRecheck = time.Second
	// DefaultMaxPerUser is how many subscriptions one user may hold open at once when
	// HubOptions.MaxPerUser says nothing (event_streams_per_user's default).
	DefaultMaxPerUser = 32
	// capRetryAfter is the Retry-After of a subscription refused by the per-user cap.
	capRetryAfter = 5 * time.Second
)

// HubOptions configure the embedded hub.
type HubOptions struct {
	// MasterKey is the service's master key; the subscriber-token key is derived from it with
	// HKDF-SHA256 and a fixed label. Required.
	MasterKey []byte
	// Session authenticates a subscriber without a token by its session cookie; it returns the
	// user's id and the session's or an error (ErrUnauthenticated when there is no valid
	// session). nil: tokens only.
	Session func(r *http.Request) (userID, sessionID int64, err error)
	// SessionStands reports whether the session sessionID (a subscriber token's sid claim, or the
	// cookie's session) still stands: ErrUnauthenticated when it ended (logout, a password change
	// ending it, its user deleted). A token is refused once its session ended, and an open
	// subscription ends within Recheck of its session. nil: tokens live until they expire.
	SessionStands func(ctx context.Context, sessionID int64) error
	// Recheck is how often open subscriptions' sessions are asked (one SessionStands per
	// session, not per subscription); 0 means DefaultRecheck.
	Recheck time.Duration
	// MaxPerUser returns how many subscriptions one user may hold open at once (read at every
	// subscription, so a configuration change applies at once); nil or a value ≤ 0 means
	// DefaultMaxPerUser. Beyond it Subscribe answers ErrRateLimited (429 with Retry-After).
	MaxPerUser func() int
	// Clock is the time source of token checks; nil means time.Now.
	Clock func() time.Time
	// Heartbeat is the period of keep-alive comments; 0 means DefaultHeartbeat, negative none.
	Heartbeat time.Duration
	// Logger receives dropped-event warnings; nil discards them.
	Logger *slog.Logger
}

// Hub is the embedded push hub: an SSE server speaking Mercure's subscribe shape (GET
// ?topic=…&topic=…, text/event-stream). A subscriber authenticates with a subscriber token
// (Authorization: Bearer, or the authorization query parameter) or its session cookie and
// receives only topics it was granted: with a session, its own topics.
//
// Subscriptions are grouped by their set of topics (a stream); a publication goes to every
// subscriber of every stream whose set contains its topic, so a subscriber of several topics
// gets one merged stream. Each subscriber has its own bounded buffer, written by its own
// connection's goroutine: a publication never waits for a subscriber, and a subscriber too
// slow to keep its buffer from filling is disconnected without delaying anyone else. There is
// no history: events published while nobody listens are dropped.
type Hub struct {
	key       []byte
	session   func(*http.Request) (int64, int64, error)
	stands    func(context.Context, int64) error
	recheck   time.Duration
	maxUser   func() int
	now       func() time.Time
	log       *slog.Logger
	ctx       context.Context // ends when the hub stops; ends every subscription
	cancel    context.CancelFunc
	heartbeat time.Duration

	mu      sync.Mutex
	streams map[string]*hubStream // by stream id (the sorted topic set joined by newlines)
	perUser map[int64]int         // open subscriptions by user
	stopped bool
	subs    sync.WaitGroup // running subscriptions
	done    chan struct{}  // closed when the heartbeat loop ends
	checked chan struct{}  // closed when the session recheck loop ends
}

type hubStream struct {
	topics []string
	refs   int                      // open subscriptions
	subs   map[*subscriber]struct{} // those still delivered to (a dropped one leaves at once)
}

// subscriber is one open subscription.
type subscriber struct {
	events chan []byte   // rendered frames waiting to be written
	gone   chan struct{} // closed when the hub drops it (its buffer was full)
	// conn is the hijacked connection the subscription writes to (set under Hub.mu once the
	// connection is taken over); nil while it is not, or when the response is streamed through
	// the http.ResponseWriter (HTTP/2, or a writer that cannot be hijacked).
	conn net.Conn
	// user and session authenticated the subscription (session 0: a token without one, on a hub
	// without SessionStands).
	user, session int64
}

// drop ends the delivery to sub; the caller holds Hub.mu and has removed sub from its stream.
// A write blocked on a client that stopped reading is cut off (a past write deadline).
func (sub *subscriber) drop() {
	close(sub.gone)
	sub.kick()
}

// kick cuts off a write of the hijacked connection blocked on a client that stopped reading;
// the caller holds Hub.mu.
func (sub *subscriber) kick() {
	if sub.conn != nil {
		_ = sub.conn.SetWriteDeadline(aLongTimeAgo)
	}
}

// aLongTimeAgo is a write deadline in the past: it ends a blocked write at once.
var aLongTimeAgo = time.Unix(1, 0)

var _ Publisher = (*Hub)(nil)

// NewHub starts the embedded hub; Close stops it. Errors: a missing or short master key.
func NewHub(o HubOptions) (*Hub, error) {
	if len(o.MasterKey) < 32 {
		return nil, errors.New("push: the master key must be at least 32 bytes")
	}
	key, err := hkdf.Key(sha256.New, o.MasterKey, nil, subscriberKeyLabel, 32)
	if err != nil {
		return nil, fmt.Errorf("push: derive subscriber key: %w", err)
	}
	h := &Hub{key: key, session: o.Session, stands: o.SessionStands, recheck: o.Recheck, maxUser: o.MaxPerUser,
		now: o.Clock, log: o.Logger, heartbeat: o.Heartbeat, streams: map[string]*hubStream{}, perUser: map[int64]int{},
		done: make(chan struct{}), checked: make(chan struct{})}
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.heartbeat == 0 {
		h.heartbeat = DefaultHeartbeat
	}
	if h.recheck <= 0 {
		h.recheck = DefaultRecheck
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	go h.beat()
	go h.check()
	return h, nil
}

// Token issues a subscriber token of this hub for topics, valid for ttl and bound to the
// session sessionID (see HubOptions.SessionStands). It does not check whose topics they are:
// Service.Authorize does.
func (h *Hub) Token(userID, sessionID int64, topics []string, ttl time.Duration) (token string, expiresAt time.Time, err error) {
	return subscriberToken(h.key, userID, sessionID, topics, h.now(), ttl)
}

// Publish queues data as one event for every current subscriber of topic and never blocks: a
// subscriber whose buffer is full loses the event and is disconnected (logged); the others
// are not delayed. Errors: ErrInvalid (empty data: an SSE event needs a data line), ctx's.
func (h *Hub) Publish(ctx context.Context, topic string, data []byte) error {
	if len(data) == 0 {
		return svcerr.New(svcerr.ErrInvalid, "push: an event needs data")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	frame := eventFrame("urn:uuid:"+uuid.NewString(), data)
	dropped := 0
	h.mu.Lock()
	for _, st := range h.streams {
		if !slices.Contains(st.topics, topic) {
			continue
		}
		for sub := range st.subs {
			select {
			case sub.events <- frame:
			default:
				delete(st.subs, sub)
				sub.drop()
				dropped++
			}
		}
	}
	h.mu.Unlock()
	if dropped > 0 {
		h.log.Warn("push: subscriber too slow, disconnected", "topic", topic, "subscribers", dropped)
	}
	return nil
}

// eventFrame renders one server-sent event: its id, then a data line per line of data (so
// multi-line data stays one event), then the blank line that ends it.
func eventFrame(id string, data []byte) []byte {
	b := make([]byte, 0, len(id)+len(data)+16)
	b = append(b, "id: "...)
	b = append(b, id...)
	b = append(b, '\n')
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		b = append(b, "data: "...)
		b = append(b, line...)
		b = append(b, '\n')
	}
	return append(b, '\n')
}

// heartbeatFrame is the keep-alive comment.
var heartbeatFrame = []byte(": heartbeat\n\n")

// Subscribe serves one Mercure-style subscription on w: it authenticates the request, checks
// its topics and streams events until the client goes away or the hub stops. It returns an
// error only before the stream starts; the caller renders it. Errors: ErrBadRequest (no topic,
// too many, too long), ErrUnauthenticated (no credentials, invalid or expired token, no
// session, or the token's session ended), ErrForbidden (a topic the subscriber was not granted),
// ErrRateLimited (the user holds HubOptions.MaxPerUser subscriptions open), ErrUnavailable (hub
// stopped).
//
// Over HTTP/1.x the hub takes the connection over (http.Hijacker), writes the response head
// itself (the headers already set on w, then the stream's; the body ends with the connection)
// and returns at once: the subscription then costs two small goroutines (one writes its events,
// one notices the client leaving) and its buffer, instead of the request's goroutine with its
// handler stack and the server's per-connection buffers. A response that cannot be hijacked
// (HTTP/2) is streamed through w until the subscription ends, as before.
func (h *Hub) Subscribe(w http.ResponseWriter, r *http.Request) error {
	topics, err := requestedTopics(r.URL.Query())
	if err != nil {
		return err
	}
	allowed, user, session, err := h.authenticate(r)
	if err != nil {
		return err
	}
	for _, t := range topics {
		if !slices.Contains(allowed, t) {
			return svcerr.New(svcerr.ErrForbidden, "not allowed to subscribe to topic %q", t)
		}
	}
	id := strings.Join(topics, "\n")
	sub := &subscriber{events: make(chan []byte, subscriberBuffer), gone: make(chan struct{}), user: user, session: session}
	if err := h.acquire(id, topics, sub); err != nil {
		return err
	}
	if r.ProtoMajor == 1 {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			h.handOver(id, sub, conn, w.Header())
			return nil
		}
	}
	defer h.release(id, sub)

	// The hub's end also ends the subscription, so Close does not wait for clients.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(h.ctx, cancel)
	defer stop()
	h.stream(ctx, cancel, w, sub)
	return nil
}

// streamHeadTimeout bounds the writing of a hijacked stream's response head.
const streamHeadTimeout = 10 * time.Second

// handOver writes the response head on sub's hijacked connection (hdr: the headers set on the
// ResponseWriter so far, plus the stream's) and starts the goroutines that serve it. The head is
// written here, on the request's goroutine, so the subscription's own goroutines keep the
// smallest stacks.
func (h *Hub) handOver(id string, sub *subscriber, conn net.Conn, hdr http.Header) {
	h.mu.Lock()
	sub.conn = conn
	stopped := h.stopped
	h.mu.Unlock()
	if stopped || writeStreamHead(conn, hdr) != nil {
		_ = conn.Close()
		h.release(id, sub)
		return
	}
	go h.pump(id, sub, conn)
}

// pump writes sub's events on its hijacked connection until the client goes away, the hub
// drops sub or the hub stops; then it closes the connection and releases sub.
func (h *Hub) pump(id string, sub *subscriber, conn net.Conn) {
	defer h.release(id, sub)
	// The client sends nothing after its request: a read ends when it goes away.
	left := make(chan struct{})
	go func() {
		defer close(left)
		var b [1]byte
		for {
			if _, err := conn.Read(b[:]); err != nil {
				return
			}
		}
	}()
	defer func() {
		_ = conn.Close()
		<-left
	}()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-sub.gone:
			return
		case <-left:
			return
		case frame := <-sub.events:
			select { // the end wins over events still queued
			case <-h.ctx.Done():
				return
			case <-sub.gone:
				return
			default:
			}
			if _, err := conn.Write(frame); err != nil {
				return
			}
		}
	}
}

// writeStreamHead writes the head of an event stream on a hijacked connection: status, the
// headers already set (security headers of the middleware), the stream's own headers. Without
// a length or chunking, the body is everything up to the close of the connection.
func writeStreamHead(conn net.Conn, hdr http.Header) error {
	hdr = hdr.Clone()
	hdr.Del("Content-Length")
	hdr.Del("Transfer-Encoding")
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("Connection", "close")
	hdr.Set("X-Accel-Buffering", "no")
	hdr.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\n")
	if err := hdr.Write(&b); err != nil {
		return err
	}
	b.WriteString("\r\n")
	if err := conn.SetWriteDeadline(time.Now().Add(streamHeadTimeout)); err != nil {
		return err
	}
	if _, err := conn.Write(b.Bytes()); err != nil {
		return err
	}
	return conn.SetWriteDeadline(time.Time{})
}

// stream writes sub's events to w until ctx ends or the hub drops sub. A write blocked on a
// client that stopped reading is cut off (a past write deadline) when the subscription ends,
// so neither Close nor the dropping of a slow subscriber waits for such a client.
func (h *Hub) stream(ctx context.Context, cancel context.CancelFunc, w http.ResponseWriter, sub *subscriber) {
	rc := http.NewResponseController(w)
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("Connection", "keep-alive")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()

	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-ctx.Done():
		case <-sub.gone:
		}
		_ = rc.SetWriteDeadline(time.Now()) // http.ErrNotSupported: the write ends with the client
	}()
	defer func() { cancel(); <-watched }() // no use of w after the handler returns

	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.gone:
			return
		case frame := <-sub.events:
			if _, err := w.Write(frame); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}
}

// requestedTopics returns the topic parameters, sorted and without duplicates.
func requestedTopics(q url.Values) ([]string, error) {
	topics := q["topic"]
	if len(topics) == 0 {
		return nil, svcerr.New(svcerr.ErrBadRequest, "missing topic parameter")
	}
	if len(topics) > maxSubscribeTopics {
		return nil, svcerr.New(svcerr.ErrBadRequest, "at most %d topics per subscription", maxSubscribeTopics)
	}
	for _, t := range topics {
		if t == "" || len(t) > maxTopicLength {
			return nil, svcerr.New(svcerr.ErrBadRequest, "a topic must have 1 to %d characters", maxTopicLength)
		}
	}
	out := slices.Clone(topics)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// authenticate returns the topics the request's credentials grant (a token's mercure.subscribe
// claim, or the session user's own topics), the user and the session they stand for. A token,
// when present, is used even if a session cookie is sent too; it is refused once its session
// ended (HubOptions.SessionStands).
func (h *Hub) authenticate(r *http.Request) (topics []string, user, session int64, err error) {
	tok := ""
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, rest, ok := strings.Cut(a, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return nil, 0, 0, svcerr.New(svcerr.ErrUnauthenticated, "the Authorization header must be a Bearer token")
		}
		tok = strings.TrimSpace(rest)
	} else {
		tok = r.URL.Query().Get("authorization")
	}
	if tok != "" {
		c, err := h.verify(tok)
		if err != nil {
			return nil, 0, 0, svcerr.New(svcerr.ErrUnauthenticated, "invalid or expired subscriber token")
		}
		uid, err := strconv.ParseInt(c.Subject, 10, 64)
		if err != nil {
			return nil, 0, 0, svcerr.New(svcerr.ErrUnauthenticated, "invalid or expired subscriber token")
		}
		if h.stands != nil {
			if err := h.stands(r.Context(), c.Session); err != nil {
				if errors.Is(err, svcerr.ErrUnauthenticated) {
					return nil, 0, 0, svcerr.New(svcerr.ErrUnauthenticated, "the session this subscriber token was issued to has ended")
				}
				return nil, 0, 0, err
			}
		}
		return c.Mercure.Subscribe, uid, c.Session, nil
	}
	if h.session == nil {
		return nil, 0, 0, svcerr.New(svcerr.ErrUnauthenticated, "a subscriber token is required")
	}
	uid, sid, err := h.session(r)
	if err != nil {
		if errors.Is(err, svcerr.ErrUnauthenticated) {
			return nil, 0, 0, svcerr.New(svcerr.ErrUnauthenticated, "a subscriber token or a session is required")
		}
		return nil, 0, 0, err
	}
	return OwnTopics(uid), uid, sid, nil
}

// verify checks a subscriber token's signature (HS256 with the hub's key only) and expiry.
func (h *Hub) verify(tok string) (*claims, error) {
	var c claims
	_, err := jwt.ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return h.key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(h.now))
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// acquire registers sub on stream id, creating the stream for its first subscription.
func (h *Hub) acquire(id string, topics []string, sub *subscriber) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return svcerr.New(svcerr.ErrUnavailable, "the push hub is shutting down")
	}
	limit := 0
	if h.maxUser != nil {
		limit = h.maxUser()
	}
	if limit <= 0 {
		limit = DefaultMaxPerUser
	}
	if h.perUser[sub.user] >= limit {
		return svcerr.RateLimited(capRetryAfter, fmt.Sprintf("at most %d push subscriptions may be open at once; close one first", limit))
	}
	h.perUser[sub.user]++
	st := h.streams[id]
	if st == nil {
		st = &hubStream{topics: topics, subs: map[*subscriber]struct{}{}}
		h.streams[id] = st
	}
	st.refs++
	st.subs[sub] = struct{}{}
	h.subs.Add(1)
	return nil
}

// release ends sub's subscription of stream id and removes the stream after its last one.
func (h *Hub) release(id string, sub *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.streams[id]; st != nil {
		delete(st.subs, sub)
		if st.refs--; st.refs == 0 {
			delete(h.streams, id)
		}
	}
	if h.perUser[sub.user]--; h.perUser[sub.user] <= 0 {
		delete(h.perUser, sub.user)
	}
	h.subs.Done()
}

// Subscribers is the number of open subscriptions (metrics).
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, st := range h.streams {
		n += st.refs
	}
	return n
}

// Running reports whether the hub accepts subscriptions (it was not closed).
func (h *Hub) Running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.stopped
}

// beat sends a keep-alive comment to every stream until the hub stops.
func (h *Hub) beat() {
	defer close(h.done)
	if h.heartbeat < 0 {
		return
	}
	t := time.NewTicker(h.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
			h.mu.Lock()
			for _, st := range h.streams {
				for sub := range st.subs {
					select {
					case sub.events <- heartbeatFrame:
					default: // events are waiting: the subscription is not idle
					}
				}
			}
			h.mu.Unlock()
		}
	}
}

// check ends, every Recheck, the open subscriptions whose session ended: it asks SessionStands
// once per session (not holding the hub's lock), then drops that session's subscribers, which
// end as a slow one does (the hijacked connection's pump or the streaming handler returns).
func (h *Hub) check() {
	defer close(h.checked)
	if h.stands == nil {
		return
	}
	t := time.NewTicker(h.recheck)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		sessions := map[int64]struct{}{}
		for _, st := range h.streams {
			for sub := range st.subs {
				sessions[sub.session] = struct{}{}
			}
		}
		h.mu.Unlock()
		ended := map[int64]struct{}{}
		for sid := range sessions {
			err := h.stands(h.ctx, sid)
			switch {
			case err == nil:
			case errors.Is(err, svcerr.ErrUnauthenticated):
				ended[sid] = struct{}{}
			case h.ctx.Err() != nil:
				return
			default: // a database hiccup ends nothing; the next pass asks again
				h.log.Warn("push: session check failed", "error", err)
			}
		}
		if len(ended) == 0 {
			continue
		}
		n := 0
		h.mu.Lock()
		for _, st := range h.streams {
			for sub := range st.subs {
				if _, ok := ended[sub.session]; ok {
					delete(st.subs, sub)
					sub.drop()
					n++
				}
			}
		}
		h.mu.Unlock()
		if n > 0 {
			h.log.Info("push: subscriptions ended with their session", "subscribers", n)
		}
	}
}

// Close stops the hub: it refuses new subscriptions, ends the open ones and waits for them to
// finish. It is safe to call more than once and always returns nil.
func (h *Hub) Close() error {
	h.mu.Lock()
	h.stopped = true
	for _, st := range h.streams {
		for sub := range st.subs {
			sub.kick() // a write blocked on a client that stopped reading ends now
		}
	}
	h.mu.Unlock()
	h.cancel()
	h.subs.Wait()
	<-h.done
	<-h.checked
	return nil
}
