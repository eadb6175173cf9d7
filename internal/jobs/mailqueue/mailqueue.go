// Package mailqueue delivers the durable mail outbox (store.EnqueueMail, mail_outbox): a
// Dispatcher on the loop shared by every outbox (internal/platform/outbox) claims due mails with a
// lease, sends each through the service's mail.Sender with a per-attempt timeout and records
// the outcome (delivered, or a failed attempt scheduled again by store.MailBackoff and kept as
// failed after the last). Every mail the service sends goes through it except the
// administrator's test message, which is sent directly so its outcome can be answered.
//
// Delivery is at-least-once, like callbacks: the outcome is recorded right after the send
// returns; a process that dies between the two leaves the mail leased, and once the lease
// lapses another dispatcher sends it again (at most once more per such crash). A restart
// loses nothing: the mail stays pending in the database.
package mailqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentsvc/svc/internal/domain/mail"
	"github.com/agentsvc/svc/internal/platform/outbox"
	"github.com/agentsvc/svc/internal/platform/startstop"
	"github.com/agentsvc/svc/store"
)

// Delivery limits.
const (
	// AttemptTimeout bounds one attempt (connect, TLS, authenticate, send): a slow or dead
	// SMTP server costs one dispatcher slot for this long at most, never a task worker.
	AttemptTimeout = time.Minute
	// Lease is how long a claimed mail stays with its dispatcher: well above AttemptTimeout,
	// so only a dispatcher that died lets it lapse.
	Lease = 3 * time.Minute
	// BatchSize is the most mails one claim takes; DefaultConcurrency the default bound of
	// SMTP sessions at once (mail servers limit connections per client).
	BatchSize          = 25
	DefaultConcurrency = 4
)

// Store is the outbox: *store.Store satisfies it.
type Store interface {
	ClaimMails(ctx context.Context, workerID string, limit int, lease time.Duration) ([]store.Mail, error)
	FinishMail(ctx context.Context, id int64, lease time.Time, ok bool, errText string) (bool, error)
}

var _ Store = (*store.Store)(nil)

// Dispatcher sends due mails of the outbox. Background work has one owner: Start begins the
// loop, Stop ends claiming and waits for the sends in flight; RunOnce sends one batch and
// Drain every due batch (tests, or a caller that must see the outbox sent).
type Dispatcher struct {
	Store Store
	// Sender delivers one message. It is asked at every attempt, so a sender that reads the
	// effective mail configuration per message (the app's) applies an administrator's change
	// to the mails still queued.
	Sender mail.Sender
	// Clock paces Poll; nil means startstop.RealClock(nil).
	Clock  startstop.Clock
	Logger *slog.Logger // nil means slog.Default()
	// WorkerID names this dispatcher in claims; empty means a random id.
	WorkerID string
	// Poll is the idle wait between empty batches (default 1 s); Notify cuts it short.
	Poll time.Duration
	// Concurrency bounds the SMTP sessions in flight (default DefaultConcurrency).
	Concurrency int
	// Timeout overrides AttemptTimeout (tests shorten it).
	Timeout time.Duration
	// Attempted is told the outcome of every attempt (metrics); nil tells nobody.
	Attempted func(ok bool)

	initOnce sync.Once
	loop     *outbox.Loop[store.Mail]
}

func (d *Dispatcher) init() {
	d.initOnce.Do(func() {
		if d.Logger == nil {
			d.Logger = slog.Default()
		}
		if d.Timeout <= 0 {
			d.Timeout = AttemptTimeout
		}
		if d.Concurrency <= 0 {
			d.Concurrency = DefaultConcurrency
		}
		lease := Lease
		if lease < 2*d.Timeout {
			lease = 2 * d.Timeout
		}
		d.loop = &outbox.Loop[store.Mail]{Name: "mail", Claim: d.claim, Deliver: d.deliver, Clock: d.Clock,
			Logger: d.Logger, WorkerID: d.WorkerID, Poll: d.Poll, BatchSize: BatchSize, Concurrency: d.Concurrency, Lease: lease}
	})
}

// Start begins sending in the background: a batch whenever mails are due, checked every Poll
// and on Notify. A second Start before Stop does nothing.
func (d *Dispatcher) Start(ctx context.Context) {
	d.init()
	d.loop.Start(ctx)
}

// Notify makes the loop look for due mails at once (one was just queued). Safe before Start
// and from any goroutine.
func (d *Dispatcher) Notify() {
	d.init()
	d.loop.Notify()
}

// Stop ends claiming and waits until the sends in flight (each bounded by Timeout) are
// recorded, or ctx ends (then an error: sends are still in flight).
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.init()
	return d.loop.Stop(ctx)
}

// RunOnce claims one batch of due mails, sends them and records each outcome; it returns how
// many it claimed. Errors: the store's (claiming), never a send's (those are recorded).
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	d.init()
	return d.loop.RunOnce(ctx)
}

// Drain sends every due mail now, batch after batch, and returns how many attempts it made;
// mails waiting for a retry are not due and stay queued. It may run beside the background
// loop (claims are leased). Errors: the store's.
func (d *Dispatcher) Drain(ctx context.Context) (int, error) {
	d.init()
	return d.loop.Drain(ctx)
}

// claim leases a batch (Store is read at each claim).
func (d *Dispatcher) claim(ctx context.Context, workerID string, limit int, lease time.Duration) ([]store.Mail, error) {
	return d.Store.ClaimMails(ctx, workerID, limit, lease)
}

// deliver makes one attempt at m and records it.
func (d *Dispatcher) deliver(ctx context.Context, m store.Mail) {
	log := d.Logger.With("mail_id", m.ID, "kind", m.Kind, "attempt", m.Attempts+1)
	err := d.send(ctx, m)
	if d.Attempted != nil {
		d.Attempted(err == nil)
	}
	errText := ""
	if err == nil {
		log.Info("mail delivered")
	} else {
		errText = err.Error()
		log.Warn("mail attempt failed", "err", errText)
	}
	if m.LeaseUntil == nil {
		log.Error("mail claimed without a lease")
		return
	}
	gaveUp, ferr := d.Store.FinishMail(ctx, m.ID, *m.LeaseUntil, err == nil, errText)
	switch {
	case ferr != nil:
		log.Error("record mail attempt", "err", ferr)
	case gaveUp:
		log.Error("mail given up after its last attempt; kept as failed", "attempts", m.Attempts+1, "err", errText)
	}
}

// send makes one bounded attempt. The error text is safe to store and log (the senders never
// put the password in errors).
func (d *Dispatcher) send(ctx context.Context, m store.Mail) error {
	if d.Sender == nil {
		return errors.New("no mail sender configured")
	}
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	err := d.Sender.Send(ctx, mail.Message{To: m.To, Subject: m.Subject, Text: m.Text, HTML: m.HTML})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("no answer within %s: %w", d.Timeout, err)
	}
	return err
}
