package server

import (
	"fmt"
	"io"
	"time"
)

// bodyRateWindow is the span over which a body's arrival rate is measured: each window must
// bring min_body_bytes_per_second times its length in bytes (or the rest of the body). The first
// window is the grace a client gets to start sending.
const bodyRateWindow = 10 * time.Second

// bodyTooSlowError fails a body that brought less than its window's share in time.
type bodyTooSlowError struct{ rate int64 }

func (e *bodyTooSlowError) Error() string {
	return fmt.Sprintf("request body arrived slower than %d bytes per second (min_body_bytes_per_second, measured over %d s)",
		e.rate, int(bodyRateWindow/time.Second))
}

// pacedBody enforces a minimum arrival rate on a request body. A total read time alone lets a
// client hold a body slot (and a connection) for the whole of it while sending one byte a
// second; here every bodyRateWindow must bring its quota. Before each read the connection's read
// deadline is moved to the end of the current window (never past total, the request's whole read
// deadline), so a stalled read ends there rather than waiting on a client that sends nothing;
// when the transport cannot set deadlines the check runs after each read instead.
//
// Once the body has been read to its end the deadline is never touched again: the HTTP server
// then reads the connection in the background with its own deadline, and a read error there
// would cancel the request.
type pacedBody struct {
	body        io.ReadCloser
	rate        int64 // bytes per second; 0 applies total only
	remaining   int64 // bytes of the body not yet read; -1 unknown (chunked)
	total       time.Time
	now         func() time.Time
	setDeadline func(time.Time) error // the connection's read deadline (http.ResponseController)
	onEnd       func()                // called once when the body has been read to its end

	windowEnd time.Time // when the current window's quota is due
	owed      int64     // bytes the current window still needs
	done      bool      // the body was read to its end
}

// newPacedBody starts the first window now. length is the body's Content-Length (-1 unknown);
// onEnd (nil: nothing) is called once the body has been read to its end.
func newPacedBody(body io.ReadCloser, rate, length int64, total time.Time, now func() time.Time, setDeadline func(time.Time) error, onEnd func()) *pacedBody {
	b := &pacedBody{body: body, rate: rate, remaining: length, total: total, now: now, setDeadline: setDeadline, onEnd: onEnd}
	b.nextWindow(now())
	return b
}

// nextWindow starts a window at t whose quota is rate times its length, or what is left of the
// body when that is less.
func (b *pacedBody) nextWindow(t time.Time) {
	b.windowEnd = t.Add(bodyRateWindow)
	b.owed = b.rate * int64(bodyRateWindow/time.Second)
	if b.remaining >= 0 && b.remaining < b.owed {
		b.owed = b.remaining
	}
}

// deadline is when the next read must have returned: the end of the current window, or the
// request's total deadline when that comes first.
func (b *pacedBody) deadline() (t time.Time, paced bool) {
	if b.rate > 0 && b.windowEnd.Before(b.total) {
		return b.windowEnd, true
	}
	return b.total, false
}

// Read reads through the pace. Errors: a *bodyTooSlowError when the window ended before its
// quota arrived, else the underlying body's (a timeout at the total deadline among them).
func (b *pacedBody) Read(p []byte) (int, error) {
	if b.done {
		return b.body.Read(p)
	}
	due, paced := b.deadline()
	_ = b.setDeadline(due) // http.ErrNotSupported: checked after the read instead
	n, err := b.body.Read(p)
	now := b.now()
	if b.remaining >= 0 {
		b.remaining -= int64(n)
	}
	if err == io.EOF || b.remaining == 0 {
		b.done = true
		if b.onEnd != nil {
			b.onEnd()
		}
		return n, err
	}
	if now.Before(due) || !paced {
		b.owed -= int64(n)
		if b.owed <= 0 {
			b.nextWindow(now)
		}
		return n, err
	}
	return n, &bodyTooSlowError{rate: b.rate}
}

func (b *pacedBody) Close() error { return b.body.Close() }
