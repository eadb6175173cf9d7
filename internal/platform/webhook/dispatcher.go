package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/platform/outbox"
	"github.com/agentsvc/svc/internal/platform/startstop"
	"github.com/agentsvc/svc/store"
)

// Delivery limits (document 2, "Events": batches of 25, each POST capped at 5 s, 10 s hard
// ceiling). HeaderTimeout bounds an attempt up to the response headers (screening and
// resolving the host, connecting, TLS, sending the body, waiting for the status line);
// HardTimeout bounds the whole attempt including draining at most MaxResponseDrain bytes of
// the response body (the status decides; the body is discarded).
const (
	BatchSize        = 25
	HeaderTimeout    = 5 * time.Second
	HardTimeout      = 10 * time.Second
	MaxResponseDrain = 64 << 10
	// Lease is how long a claimed delivery stays with its dispatcher: well above HardTimeout,
	// so only a dispatcher that died lets it lapse (another then retries the delivery).
	Lease = time.Minute
)

// Store is the outbox: *store.Store satisfies it.
type Store interface {
	ClaimDeliveries(ctx context.Context, workerID string, limit int, lease time.Duration) ([]store.WebhookDelivery, error)
	FinishDelivery(ctx context.Context, id int64, lease time.Time, ok bool, errText string) error
}

var _ Store = (*store.Store)(nil)

// NewClient returns the HTTP client of callbacks: every attempt screens the URL again with
// opts (https only, at most 2048 characters, public addresses only unless opts.AllowLoopback)
// and connects only to the screened addresses, so DNS rebinding cannot reach a private
// address; redirects are never followed (the 3xx response is returned, and counts as failure).
func NewClient(opts netguard.Options) *http.Client {
	opts.RequireHTTPS = true
	return &http.Client{
		Timeout:       HardTimeout,
		Transport:     netguard.GuardedTransport(opts),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Dispatcher sends due deliveries of the outbox on the loop shared by every outbox
// (internal/platform/outbox). Background work has one owner: Start begins the loop, Stop ends claiming
// and waits for in-flight POSTs; RunOnce sends one batch (tests, or a caller with its own
// schedule). Several dispatchers (processes) may share one database: claims are leased.
type Dispatcher struct {
	Store Store
	// Render turns a delivery's snapshot into the bare chat JSON (the body that is signed).
	Render func(ctx context.Context, d store.WebhookDelivery) ([]byte, error)
	// Client sends the POSTs; nil means NewClient(netguard.Options{}). It must not follow
	// redirects and should screen every attempt (use NewClient).
	Client *http.Client
	// Clock stamps X-Svc-Timestamp and paces Poll; nil means startstop.RealClock(nil).
	Clock  startstop.Clock
	Logger *slog.Logger // nil means slog.Default()
	// WorkerID names this dispatcher in claims; empty means a random id.
	WorkerID string
	// Poll is the idle wait between empty batches (default 1 s); Notify cuts it short.
	Poll time.Duration
	// Concurrency bounds the POSTs in flight within a batch (default 8).
	Concurrency int
	// HeaderTimeout and HardTimeout override the package defaults (tests shorten them).
	HeaderTimeout, HardTimeout time.Duration
	// Attempted is told the outcome of every attempt (metrics); nil tells nobody.
	Attempted func(ok bool)

	initOnce sync.Once
	loop     *outbox.Loop[store.WebhookDelivery]
}

func (d *Dispatcher) init() {
	d.initOnce.Do(func() {
		if d.Client == nil {
			d.Client = NewClient(netguard.Options{})
		}
		if d.Clock == nil {
			d.Clock = startstop.RealClock(nil)
		}
		if d.Logger == nil {
			d.Logger = slog.Default()
		}
		if d.HeaderTimeout <= 0 {
			d.HeaderTimeout = HeaderTimeout
		}
		if d.HardTimeout <= 0 {
			d.HardTimeout = HardTimeout
		}
		d.loop = &outbox.Loop[store.WebhookDelivery]{Name: "webhook", Claim: d.claim, Deliver: d.deliver,
			Clock: d.Clock, Logger: d.Logger, WorkerID: d.WorkerID, Poll: d.Poll, BatchSize: BatchSize,
			Concurrency: d.Concurrency, Lease: Lease}
	})
}

// Start begins sending in the background: a batch whenever deliveries are due, checked every
// Poll and on Notify; ctx's values reach the store calls. A second Start before Stop does
// nothing.
func (d *Dispatcher) Start(ctx context.Context) {
	d.init()
	d.loop.Start(ctx)
}

// Notify makes the loop look for due deliveries at once (a chat settled) instead of waiting
// for the next poll. Safe before Start (the first pass looks anyway) and from any goroutine.
func (d *Dispatcher) Notify() {
	d.init()
	d.loop.Notify()
}

// Stop ends claiming and waits until the POSTs in flight are answered (each is bounded by
// HardTimeout) and recorded, or ctx ends (then an error: deliveries are still in flight).
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.init()
	return d.loop.Stop(ctx)
}

// RunOnce claims one batch of due deliveries (at most BatchSize), sends them (at most
// Concurrency at once) and records each outcome; it returns how many it claimed. Once claimed,
// a batch is sent and recorded even if ctx ends meanwhile (Stop drains).
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	d.init()
	return d.loop.RunOnce(ctx)
}

// claim leases a batch (Store is read at each claim, so a dispatcher is built before it is set).
func (d *Dispatcher) claim(ctx context.Context, workerID string, limit int, lease time.Duration) ([]store.WebhookDelivery, error) {
	return d.Store.ClaimDeliveries(ctx, workerID, limit, lease)
}

// deliver makes one attempt and records it.
func (d *Dispatcher) deliver(ctx context.Context, del store.WebhookDelivery) {
	status, err := d.send(ctx, del)
	ok := err == nil
	if d.Attempted != nil {
		d.Attempted(ok)
	}
	log := d.Logger.With("delivery_id", del.ID, "task_id", del.TaskID, "key_id", del.KeyID, "status_code", status,
		"attempt", del.Attempts+1, "chat_status", del.Status)
	errText := ""
	if ok {
		log.Info("webhook delivered")
	} else {
		errText = err.Error()
		log.Warn("webhook attempt failed", "err", errText)
	}
	if del.LeaseUntil == nil {
		log.Error("webhook delivery claimed without a lease")
		return
	}
	if ferr := d.Store.FinishDelivery(ctx, del.ID, *del.LeaseUntil, ok, errText); ferr != nil {
		log.Error("record webhook attempt", "err", ferr)
	}
}

// send POSTs the rendered, signed body; it returns the response status (0 without one) and
// nil only for a 2xx answer within HeaderTimeout. The error text is safe to store and log: it
// names neither the URL (which may carry a token) nor the signing material.
func (d *Dispatcher) send(ctx context.Context, del store.WebhookDelivery) (int, error) {
	if d.Render == nil {
		return 0, errors.New("no renderer configured")
	}
	body, err := d.Render(ctx, del)
	if err != nil {
		return 0, fmt.Errorf("render the chat record: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.HardTimeout)
	defer cancel()
	hctx, hcancel := context.WithCancelCause(ctx)
	defer hcancel(nil)
	timer := time.AfterFunc(d.HeaderTimeout, func() { hcancel(errHeaderTimeout) })
	defer timer.Stop()

	req, err := http.NewRequestWithContext(hctx, http.MethodPost, del.URL, bytes.NewReader(body))
	if err != nil {
		return 0, errors.New("the callback URL does not parse")
	}
	ts := d.Clock.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "svc-webhook/1")
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(del.SecretDigest, ts, body))
	req.Header.Set(HeaderKeyID, del.KeyID)
	req.Header.Set(HeaderDeliveryID, strconv.FormatInt(del.ID, 10))
	resp, err := d.Client.Do(req)
	if err != nil {
		if cause := context.Cause(hctx); errors.Is(cause, errHeaderTimeout) {
			return 0, fmt.Errorf("no response within %s", d.HeaderTimeout)
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("no response within %s", d.HardTimeout)
		}
		return 0, fmt.Errorf("send: %w", unwrapURL(err))
	}
	if !timer.Stop() && errors.Is(context.Cause(hctx), errHeaderTimeout) {
		_ = resp.Body.Close()
		return resp.StatusCode, fmt.Errorf("no response within %s", d.HeaderTimeout)
	}
	// Drain a little so the connection can be reused; the hard ceiling still applies.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseDrain))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("answered %d (only 2xx succeeds; redirects are not followed)", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

var errHeaderTimeout = errors.New("response header timeout")

// unwrapURL drops *url.Error's wrapper, whose text repeats the URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
