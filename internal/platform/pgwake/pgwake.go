// Package pgwake carries wake-ups between the processes of one deployment on PostgreSQL: each
// process holds one connection LISTENing on the store's wake channel, and what another process
// committed (a task queued, events, a notice, a mail: store.Commit, sent by the store with NOTIFY
// after each commit while another process listens) wakes this process's loops as its own commits do, in milliseconds instead
// of at their next poll.
//
// The polls stay: they are the fallback when a notification is lost (the sender died between
// commit and NOTIFY, or this listener was down). When its connection fails the listener
// reconnects with capped exponential backoff, and after each connect it runs Resync so that
// what was committed while it was deaf is picked up at once rather than at the next poll. On
// SQLite and MySQL/MariaDB Start does nothing.
package pgwake

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsvc/svc/internal/platform/startstop"
	"github.com/agentsvc/svc/store"
)

// Defaults of a Listener.
const (
	DefaultMinBackoff = 100 * time.Millisecond // the first wait before reconnecting
	DefaultMaxBackoff = 30 * time.Second       // the longest wait between two attempts
	// DefaultCheck is how long the listener waits for a notification before it pings its
	// connection: a connection cut without a reset (a dropped route) is noticed within it.
	DefaultCheck = 30 * time.Second
	// pingTimeout bounds the check of an idle connection.
	pingTimeout = 10 * time.Second
)

// Listener is the one LISTENing connection of a process. Build it with its fields, run it with
// Start and Stop (App.Start/Stop). Zero durations mean the defaults.
type Listener struct {
	Store *store.Store
	// Wake receives what a commit of another process changed (the process's own commits reach
	// it through store.AfterCommit). It runs on the listener's goroutine: it only wakes loops.
	Wake func(store.Commit)
	// Resync runs after each (re)connect: notifications sent while the listener was not
	// listening are lost, so it wakes every loop once (each reads what is waiting).
	Resync     func(ctx context.Context)
	Log        *slog.Logger
	MinBackoff time.Duration
	MaxBackoff time.Duration
	Check      time.Duration

	base      startstop.Base
	connected atomic.Bool
	connects  atomic.Int64
}

// Enabled reports whether the store has a wake channel (PostgreSQL).
func (l *Listener) Enabled() bool { return l.Store.WakeChannel() != "" }

// Start runs the listener until Stop or ctx ends; it does nothing off PostgreSQL.
func (l *Listener) Start(ctx context.Context) {
	if l.Enabled() {
		l.base.Start(ctx, l.run)
	}
}

// Stop closes the connection and waits for the listener to return. Errors: ctx's, when it ended
// first.
func (l *Listener) Stop(ctx context.Context) error { return l.base.Stop(ctx) }

// Connected reports whether the listener is LISTENing now (metrics, readiness details, tests).
func (l *Listener) Connected() bool { return l.connected.Load() }

// Connects is how many times the listener connected (1 after the first connect; tests see a
// reconnect as the count moving).
func (l *Listener) Connects() int64 { return l.connects.Load() }

func (l *Listener) run(ctx context.Context) {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		conn, err := l.Store.ListenWake(ctx)
		if err == nil {
			backoff = 0
			l.connects.Add(1)
			l.connected.Store(true)
			if l.Resync != nil {
				l.Resync(ctx)
			}
			err = l.listen(ctx, conn)
			l.connected.Store(false)
			_ = conn.Close(context.WithoutCancel(ctx))
		}
		if ctx.Err() != nil {
			return
		}
		backoff = l.next(backoff)
		l.log().Warn("wake-up listener lost its connection; polling covers meanwhile", "err", err, "retry_in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// listen hands every notification to Wake until the connection fails or ctx ends; every Check
// without a notification it pings the connection. Errors: the connection's.
func (l *Listener) listen(ctx context.Context, conn *pgx.Conn) error {
	check := l.Check
	if check <= 0 {
		check = DefaultCheck
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, check)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if c, ok := l.Store.WakeCommit(n.Payload); ok && l.Wake != nil {
				l.Wake(c)
			}
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			pctx, cancel := context.WithTimeout(ctx, pingTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// next is the wait after one of prev: doubled, capped at MaxBackoff, with up to a quarter of
// jitter so that processes cut off together do not reconnect in step.
func (l *Listener) next(prev time.Duration) time.Duration {
	lo, hi := l.MinBackoff, l.MaxBackoff
	if lo <= 0 {
		lo = DefaultMinBackoff
	}
	if hi <= 0 {
		hi = DefaultMaxBackoff
	}
	d := min(max(prev*2, lo), hi)
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

func (l *Listener) log() *slog.Logger {
	if l.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Log
}
