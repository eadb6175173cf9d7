package agentloop

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/agentsvc/svc/store"
)

// deltaLog is a Store that only records delta writes.
type deltaLog struct {
	Store
	deltas []store.Delta
}

func (d *deltaLog) AppendDelta(_ context.Context, _ int64, _ string, delta store.Delta) error {
	d.deltas = append(d.deltas, delta)
	return nil
}

// TestDeltaTimerEndsWithTheCall: text waiting for the interval arms one timer; the call's end
// stops it and drops the text, and a firing that raced the end writes nothing (the turn's
// message carries the text; a delta after it would outlive the turn).
func TestDeltaTimerEndsWithTheCall(t *testing.T) {
	st := &deltaLog{}
	// The call "started" an hour ahead, so the interval is never up during the test.
	w := &deltaWriter{ctx: context.Background(), store: st, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		taskID: 1, worker: "w", last: time.Now().Add(time.Hour)}
	w.add("Hel", "")
	first := w.timer
	w.add("lo", "")
	if first == nil || w.timer != first {
		t.Fatalf("timer %p then %p: want one armed by the first piece", first, w.timer)
	}
	if w.end() {
		t.Fatal("end reports a write that never happened")
	}
	if w.timer != nil {
		t.Fatal("the timer outlived the call")
	}
	w.fire() // a firing that raced the end
	w.add("more", "")
	if len(st.deltas) != 0 || w.timer != nil {
		t.Fatalf("after the end: wrote %+v, timer %p", st.deltas, w.timer)
	}
}
