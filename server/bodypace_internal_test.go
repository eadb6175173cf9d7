package server

import (
	"errors"
	"io"
	"net/http"
	"os"
	"testing"
	"time"
)

// step is one read of a fake connection: after so long, n bytes arrive (n < 0: the end).
type step struct {
	after time.Duration
	n     int
}

// fakeConn is a body on a fake clock. With deadlines it behaves as a socket does: a read whose
// bytes would come after the deadline returns a timeout at the deadline.
type fakeConn struct {
	now       time.Time
	steps     []step
	deadline  time.Time
	deadlines int  // SetReadDeadline calls
	honour    bool // false: the transport cannot set deadlines
}

func (f *fakeConn) clock() time.Time { return f.now }

func (f *fakeConn) setDeadline(t time.Time) error {
	f.deadlines++
	if !f.honour {
		return http.ErrNotSupported
	}
	f.deadline = t
	return nil
}

func (f *fakeConn) Read(p []byte) (int, error) {
	if len(f.steps) == 0 {
		return 0, io.EOF
	}
	s := f.steps[0]
	if f.honour && !f.deadline.IsZero() && !f.now.Add(s.after).Before(f.deadline) {
		f.now = f.deadline
		return 0, os.ErrDeadlineExceeded
	}
	f.steps = f.steps[1:]
	f.now = f.now.Add(s.after)
	if s.n < 0 {
		return 0, io.EOF
	}
	return s.n, nil
}

func (f *fakeConn) Close() error { return nil }

// every returns count steps of n bytes each, d apart.
func every(d time.Duration, n, count int) []step {
	out := make([]step, count)
	for i := range out {
		out[i] = step{d, n}
	}
	return out
}

// readAll reads b to its end and returns the bytes read and the error that ended it (nil: EOF).
func readAll(b io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	total := 0
	for {
		n, err := b.Read(buf)
		total += n
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// TestPacedBody: a body must bring min_body_bytes_per_second in every window of bodyRateWindow
// (or the rest of itself), else it fails with bodyTooSlowError at the window's end — not at the
// total read deadline, which a trickling client used to be let run to (issue 22, item 2).
func TestPacedBody(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	const rate = 100 // bytes per second: 1000 per window
	for _, tc := range []struct {
		name    string
		steps   []step
		length  int64
		rate    int64
		honour  bool
		want    int           // bytes read
		slow    bool          // ends with bodyTooSlowError
		timeout bool          // ends with the transport's timeout (the total deadline)
		ends    time.Duration // when it ends, from start
	}{
		{name: "one byte a second", steps: every(time.Second, 1, 60), length: 60, rate: rate, honour: true,
			want: 9, slow: true, ends: bodyRateWindow},
		{name: "steady above the rate", steps: append(every(time.Second, 200, 25), step{0, -1}), length: 5000, rate: rate, honour: true,
			want: 5000, ends: 25 * time.Second},
		{name: "bursts each window", steps: append(every(9*time.Second, 1000, 5), step{0, -1}), length: -1, rate: rate, honour: true,
			want: 5000, ends: 45 * time.Second},
		{name: "a window short", steps: []step{{9 * time.Second, 1000}, {5 * time.Second, 999}, {5 * time.Second, 1}}, length: 3000, rate: rate, honour: true,
			want: 1999, slow: true, ends: 19 * time.Second},
		{name: "small body within the window", steps: []step{{9 * time.Second, 50}}, length: 50, rate: rate, honour: true,
			want: 50, ends: 9 * time.Second},
		{name: "small body after the window", steps: []step{{11 * time.Second, 50}}, length: 50, rate: rate, honour: true,
			want: 0, slow: true, ends: bodyRateWindow},
		{name: "rate off: only the total deadline", steps: every(time.Second, 1, 100), length: 100, rate: 0, honour: true,
			want: 59, timeout: true, ends: time.Minute},
		{name: "total deadline first", steps: every(time.Second, 200, 100), length: 20000, rate: rate, honour: true,
			want: 11800, timeout: true, ends: time.Minute},
		{name: "no deadlines: checked after the read", steps: every(time.Second, 1, 60), length: 60, rate: rate, honour: false,
			want: 10, slow: true, ends: bodyRateWindow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeConn{now: start, steps: tc.steps, honour: tc.honour}
			ended := 0
			b := newPacedBody(f, tc.rate, tc.length, start.Add(time.Minute), f.clock, f.setDeadline, func() { ended++ })
			n, err := readAll(b)
			if whole := !tc.slow && !tc.timeout; (ended == 1) != whole || ended > 1 {
				t.Errorf("onEnd called %d times, want %d", ended, map[bool]int{true: 1}[whole])
			}
			var slow *bodyTooSlowError
			switch {
			case tc.slow && !errors.As(err, &slow):
				t.Errorf("err %v, want bodyTooSlowError", err)
			case tc.timeout && (!errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &slow)):
				t.Errorf("err %v, want the transport's timeout", err)
			case !tc.slow && !tc.timeout && err != nil:
				t.Errorf("err %v, want the whole body", err)
			}
			if n != tc.want {
				t.Errorf("read %d bytes, want %d", n, tc.want)
			}
			if got := f.now.Sub(start); got != tc.ends {
				t.Errorf("ended after %v, want %v", got, tc.ends)
			}
		})
	}
}

// TestPacedBodyLeavesTheDeadlineAfterTheEnd: once the body has been read to its end the
// connection's deadline is the HTTP server's again (its background read must not time out), and
// onEnd (which frees the body slot) has run once.
func TestPacedBodyLeavesTheDeadlineAfterTheEnd(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	f := &fakeConn{now: start, steps: []step{{time.Second, 10}}, honour: true}
	ended := 0
	b := newPacedBody(f, 100, 10, start.Add(time.Minute), f.clock, f.setDeadline, func() { ended++ })
	if n, err := readAll(b); n != 10 || err != nil {
		t.Fatalf("read %d, %v", n, err)
	}
	before := f.deadlines
	if _, err := b.Read(make([]byte, 8)); err != io.EOF {
		t.Fatalf("read after the end: %v, want EOF", err)
	}
	if f.deadlines != before {
		t.Errorf("the deadline was set %d more times after the end", f.deadlines-before)
	}
	if ended != 1 {
		t.Errorf("onEnd called %d times, want 1", ended)
	}
}
