package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/vocab/fieldcheck"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// What the protocol endpoints (MCP, A2A) share on top of the chat service: following a chat
// until it settles, and running an action at most once per idempotency key. Neither adds a
// rule: every action is the chat service's, under the key the gate authenticated.

// Bounds of a protocol call's wait for its chat to settle.
const (
	DefaultSettleWait = 60 * time.Second
	MaxSettleWait     = 300 * time.Second
)

// settledView reports whether chat v waits for nobody but its caller: terminal, aborted, or
// blocked for an approval or a question (a failed chat with an automatic retry to come is not).
func settledView(v *task.View) bool {
	return taskstate.IsSettled(v.Task.Status) && v.Task.NextRetryAt == nil
}

// settledEvent reports whether ev is a status event that settles the chat.
func settledEvent(ev *store.TaskEvent) bool {
	return ev.Status != nil && taskstate.IsSettled(ev.Status.Status) && !ev.Status.Retrying && ev.Status.NextRetryAt == nil
}

var errChatSettled = errors.New("chat settled")

// followSink is the taskstream.Sink of a protocol call's wait: each event goes to onEvent, a
// settling status ends the wait.
type followSink struct {
	onEvent    func(*store.TaskEvent)
	authorized func(context.Context) error
}

func (s *followSink) Event(ev *store.TaskEvent, _ map[string]string) error {
	if s.onEvent != nil {
		s.onEvent(ev)
	}
	if settledEvent(ev) {
		return errChatSettled
	}
	return nil
}
func (s *followSink) KeepAlive() error                     { return nil }
func (s *followSink) Flush()                               {}
func (s *followSink) Authorized(ctx context.Context) error { return s.authorized(ctx) }

// followChat waits up to wait for chat id of key k to settle, handing each event written after
// the call to onEvent (nil: none; a chat settled already hands it its status), and returns the
// chat as it is then: settled, or still
// running when the wait ran out or the caller went away. A wait of 0 returns the chat at once.
// The wait holds one of the key's event stream slots (event_streams_per_user); with none free
// it returns the chat at once. Errors: the chat service's (ErrNotFound …) and the store's.
func (a *API) followChat(ctx context.Context, k *store.AgentAPIKey, id int64, wait time.Duration, onEvent func(*store.TaskEvent)) (*task.View, error) {
	sid := strconv.FormatInt(id, 10)
	if wait <= 0 {
		return a.chats.Get(ctx, k, sid)
	}
	// The cursor first, then the chat: a settling written after the cursor is an event the
	// stream delivers, one written before it shows in the chat read here.
	cs, err := a.store.EventCursors(ctx, []int64{id})
	if err != nil {
		return nil, err
	}
	v, err := a.chats.Get(ctx, k, sid)
	if err != nil || len(cs) == 0 {
		return v, err
	}
	if settledView(v) {
		// Settled before the wait began (a fast step): the status it settled in is still told,
		// as the event the stream would have delivered a moment later.
		if onEvent != nil {
			onEvent(&store.TaskEvent{Type: store.EventStatus, Status: &store.StatusEvent{Status: v.Task.Status}})
		}
		return v, nil
	}
	release, err := a.events.Acquire("key:" + strconv.FormatInt(k.ID, 10))
	if err != nil {
		return v, nil // no slot free: answer the chat as it is
	}
	defer release()
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	sink := &followSink{onEvent: onEvent, authorized: func(ctx context.Context) error { return a.apiKeys.StillValid(ctx, k) }}
	if err := a.events.Serve(wctx, id, cs[0].EventSeq, sink); err != nil && !errors.Is(err, errChatSettled) && wctx.Err() == nil {
		return nil, err
	}
	if ctx.Err() != nil { // the caller went away: nobody reads the answer
		return v, nil
	}
	return a.chats.Get(ctx, k, sid)
}

// Waiting for a repeat's first request, as the Idempotency-Key of the HTTP API does.
const (
	onceWait = 10 * time.Second
	oncePoll = 50 * time.Millisecond
)

// checkIdempotencyKey applies the Idempotency-Key header's format (1 to 255 visible ASCII
// characters) to a protocol's idempotency key named name. Errors: ErrInvalid.
func checkIdempotencyKey(name, key string) error { return fieldcheck.ASCII(name, key, 1, 255) }

// once runs act, which starts or moves chat and returns it, at most once per idempotency key
// of key k (the records of the Idempotency-Key header, in their own namespace ns: "mcp", "a2a"):
// the first call acts and records the chat's id; a repeat with the same request (what) answers
// that chat as it is now, waiting while the first still runs; a repeat with another request is
// refused. An empty idem acts without a record. A failed action records nothing, so a retry
// acts again. Errors: act's; ErrInvalid (the key reused for another request), ErrConflict (the
// first is still running after a wait, or failed).
func (a *API) once(ctx context.Context, k *store.AgentAPIKey, ns, idem, what string, act func() (*task.View, error)) (*task.View, error) {
	if idem == "" {
		return act()
	}
	scope, key := "key:"+k.KeyID, ns+":"+idem
	sum := sha256.Sum256([]byte(what))
	hash := hex.EncodeToString(sum[:])
	rec, started, err := a.store.BeginIdempotent(ctx, scope, key, hash)
	if err != nil {
		return nil, err
	}
	if started {
		v, err := act()
		if err != nil {
			_ = a.store.AbandonIdempotent(context.WithoutCancel(ctx), scope, key)
			return nil, err
		}
		if err := a.store.FinishIdempotent(context.WithoutCancel(ctx), scope, key, 200, "text/plain",
			[]byte(strconv.FormatInt(v.Task.ID, 10))); err != nil {
			a.log.WarnContext(ctx, "record idempotent answer", "err", err)
		}
		return v, nil
	}
	if rec.RequestHash != hash {
		return nil, svcerr.New(svcerr.ErrInvalid, "the idempotency key %q was used for a different request", idem)
	}
	wctx, cancel := context.WithTimeout(ctx, onceWait)
	defer cancel()
	for {
		rec, err := a.store.Idempotency(wctx, scope, key)
		switch {
		case err != nil && wctx.Err() == nil:
			return nil, svcerr.New(svcerr.ErrConflict, "the first request with idempotency key %q failed; send it again", idem)
		case err == nil && rec.Status != nil:
			return a.chats.Get(ctx, k, string(rec.Body))
		}
		select {
		case <-wctx.Done():
			return nil, svcerr.New(svcerr.ErrConflict, "a request with idempotency key %q is still running; retry later", idem)
		case <-time.After(oncePoll):
		}
	}
}
