package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Cross-process wake-ups (PostgreSQL). After a transaction that changed something other
// processes wait for (a Commit: a task queued, events, a notice, a mail) committed, the store
// sends NOTIFY on its wake channel with what changed; every process of the service holds one
// connection LISTENing on it (internal/platform/pgwake) and tells its own commit listeners, as
// if the commit were its own. The notification is sent right after the commit, on a pooled
// connection, never inside the transaction: a NOTIFY that fails (the server's notification queue
// full behind a stuck listener) must not roll the write back. A notification lost (the process
// died between commit and NOTIFY, a listener reconnecting) costs only latency: every loop keeps
// its poll. A store sends only while another store's listener is connected on its channel
// (othersListen): a process alone has nobody to wake. SQLite and MySQL/MariaDB have no such
// channel and rely on the polls alone.

// wakeChannelPrefix starts the channel name; the schema follows, so two deployments sharing a
// database in different schemas (the test suites do) do not wake each other.
const wakeChannelPrefix = "svc_wake:"

// maxWakeIDs bounds the task ids of one notification: PostgreSQL's payload is at most 8000
// bytes, and an id takes at most 20 (a larger set is sent as several notifications).
const maxWakeIDs = 300

// wakeTimeout bounds the NOTIFY after a commit (the caller's context may end with the commit).
const wakeTimeout = 2 * time.Second

type wake struct {
	dsn     string // the pool's DSN on PostgreSQL; "" on the other dialects
	channel string // wakeChannelPrefix + the connection's schema; "" off PostgreSQL
	origin  string // this store's id: a listener skips the notifications of its own store

	// others caches whether another store's listener is connected (othersListen).
	mu         sync.Mutex
	others     bool
	othersRead time.Time
}

// listenerAppName starts the application_name of the wake listeners' connections:
// "svc-wake <origin> <channel's hash>" (listenerName), so that a store can count the other
// stores listening on its channel (othersListen) within the 63 bytes PostgreSQL keeps.
const listenerAppName = "svc-wake"

// listenerName is the application_name of this store's wake listener.
func (s *Store) listenerName() string {
	return listenerAppName + " " + s.wake.origin + " " + s.channelTag()
}

// channelTag is a short hash of the wake channel, which names it in listenerName.
func (s *Store) channelTag() string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s.wake.channel))
	return fmt.Sprintf("%08x", h.Sum32())
}

// How long othersListen trusts what it read: a store alone asks again every second (a process
// that starts meanwhile waits at most that long, then its polls' interval, for the first
// wake-ups); once others listen, every half minute (one that left costs only NOTIFYs).
const (
	othersAloneTTL = time.Second
	othersSeenTTL  = 30 * time.Second
)

// wakePayload is the wire form of a Commit on the wake channel.
type wakePayload struct {
	Origin  string  `json:"o"`
	Events  []int64 `json:"e,omitempty"`
	Queued  bool    `json:"q,omitempty"`
	Mail    bool    `json:"m,omitempty"`
	Noticed bool    `json:"n,omitempty"`
	// Hello says a listener just connected (ListenWake): the stores that hear it know another
	// listens before their cached answer expires (othersListen).
	Hello bool `json:"h,omitempty"`
}

// openWake names the wake channel on PostgreSQL (by the schema the pool's connections work in).
func (s *Store) openWake(ctx context.Context) error {
	if s.wake.dsn == "" {
		return nil
	}
	var schema sql.NullString
	if err := s.db.WithContext(ctx).Raw("SELECT current_schema()").Scan(&schema).Error; err != nil {
		return fmt.Errorf("store: read the current schema: %w", err)
	}
	name := "public"
	if schema.Valid && schema.String != "" {
		name = schema.String
	}
	ch := wakeChannelPrefix + name
	if len(ch) > 63 { // NAMEDATALEN - 1: pg_notify refuses longer names
		ch = ch[:63]
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	s.wake.channel, s.wake.origin = ch, hex.EncodeToString(b[:])
	return nil
}

// WakeChannel is the channel this store's commits are announced on ("" on SQLite and
// MySQL/MariaDB, which have none).
func (s *Store) WakeChannel() string { return s.wake.channel }

// ListenWake opens a connection of its own (outside the pool) and LISTENs on the wake channel:
// the caller waits on it (pgx.Conn.WaitForNotification), hands each payload to WakeCommit, and
// closes it. Errors: ErrInvalid off PostgreSQL; connection failures uncategorised.
func (s *Store) ListenWake(ctx context.Context) (*pgx.Conn, error) {
	if s.wake.channel == "" {
		return nil, fmt.Errorf("store: %s has no wake channel: %w", s.dialect, svcerr.ErrInvalid)
	}
	cfg, err := pgx.ParseConfig(s.wake.dsn)
	if err != nil {
		return nil, fmt.Errorf("store: wake listener: %w", err)
	}
	cfg.RuntimeParams["application_name"] = s.listenerName()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: wake listener: %w", err)
	}
	// Whoever listens already hears this connection arrive (a hello; a failed one costs only
	// latency), and is heard from again (the next othersListen reads afresh). The LISTEN comes
	// last: it stays the connection's statement in pg_stat_activity.
	hello, _ := json.Marshal(wakePayload{Origin: s.wake.origin, Hello: true})
	_, _ = conn.Exec(ctx, "SELECT pg_notify($1, $2)", s.wake.channel, string(hello))
	s.wake.mu.Lock()
	s.wake.othersRead = time.Time{}
	s.wake.mu.Unlock()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.wake.channel}.Sanitize()); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("store: wake listener: %w", err)
	}
	return conn, nil
}

// WakeCommit decodes a notification of the wake channel. ok is false for a payload this store
// sent itself (its listeners were told at its commit), for one it cannot read, and for a hello
// (which only tells this store that another listens).
func (s *Store) WakeCommit(payload string) (c Commit, ok bool) {
	var p wakePayload
	if len(payload) > 8000 || json.Unmarshal([]byte(payload), &p) != nil || p.Origin == s.wake.origin {
		return Commit{}, false
	}
	s.wake.mu.Lock() // another store sent it: it listens, or did a moment ago
	s.wake.others, s.wake.othersRead = true, time.Now()
	s.wake.mu.Unlock()
	c = Commit{EventTasks: p.Events, TaskQueued: p.Queued, MailQueued: p.Mail, Noticed: p.Noticed}
	return c, !c.empty()
}

// announce sends c on the wake channel (PostgreSQL), after its transaction committed. A failure
// is logged, never returned: the write stands and the other processes' polls find it.
func (s *Store) announce(ctx context.Context, c Commit) {
	if s.wake.channel == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wakeTimeout)
	defer cancel()
	if !s.othersListen(ctx) {
		return
	}
	for _, p := range wakePayloads(s.wake.origin, c) {
		if err := s.db.WithContext(ctx).Exec("SELECT pg_notify(?, ?)", s.wake.channel, p).Error; err != nil {
			s.log.Warn("store: wake-up not sent (other processes find the change at their next poll)", "err", err)
			return
		}
	}
}

// othersListen reports whether a wake listener of another store is connected on this store's
// channel (by application_name: listenerName with another origin), read at most once per
// othersAloneTTL while none is, per othersSeenTTL once one is. A process alone — the embedded
// default, svc serve with its worker — then sends no NOTIFY that nobody would hear: it was
// one statement in six of a one-step task (issue 28). A failed read counts as yes.
func (s *Store) othersListen(ctx context.Context) bool {
	w := &s.wake
	w.mu.Lock()
	defer w.mu.Unlock()
	ttl := othersAloneTTL
	if w.others {
		ttl = othersSeenTTL
	}
	if !w.othersRead.IsZero() && time.Since(w.othersRead) < ttl {
		return w.others
	}
	var n int64
	err := s.db.WithContext(ctx).Raw("SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() "+
		"AND application_name LIKE ? AND application_name <> ?", listenerAppName+" % "+s.channelTag(), s.listenerName()).Scan(&n).Error
	w.others, w.othersRead = err != nil || n > 0, time.Now()
	return w.others
}

// wakePayloads encodes c as one or more payloads of at most maxWakeIDs task ids each.
func wakePayloads(origin string, c Commit) []string {
	var out []string
	ids := c.EventTasks
	for first := true; first || len(ids) > 0; first = false {
		p := wakePayload{Origin: origin}
		if first {
			p.Queued, p.Mail, p.Noticed = c.TaskQueued, c.MailQueued, c.Noticed
		}
		n := min(len(ids), maxWakeIDs)
		p.Events, ids = ids[:n], ids[n:]
		b, _ := json.Marshal(p) // plain fields: never fails
		out = append(out, string(b))
	}
	return out
}
