package agentloop

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentsvc/svc/store"
)

// DeltaFlushInterval is how long the model output of a streaming turn gathers before it is
// written to the task's event log as one delta event: event streams see the answer grow a few
// times a second, and a fast model (whose whole answer arrives within the interval) costs no
// delta write at all, since the stored message carries the whole text.
const DeltaFlushInterval = 100 * time.Millisecond

// deltaWriter coalesces the output deltas of one model call into delta events. Output arrives
// on the driver's goroutine (llm.Request.OnDelta); what has gathered is written once
// DeltaFlushInterval passed since the call started or since the last write: by the next piece
// when it comes in time, else by a timer armed when the first piece of a batch arrived (issue
// 28: a model pausing between chunks showed its first words only with the next chunk), so text
// shows within about the interval of arriving. What it has not written when the call ends
// (end) is not written, because the turn's message event follows with all of it (and a failed
// turn keeps nothing partial: the store drops its deltas). Writes, the timer's and the
// driver's, take turns under mu, in order.
type deltaWriter struct {
	ctx    context.Context
	store  Store
	log    *slog.Logger
	taskID int64
	worker string

	mu     sync.Mutex
	last   time.Time   // of the call's start or the last write
	timer  *time.Timer // armed while text waits for the interval; nil otherwise
	ended  bool        // end ran: nothing more is written
	text   strings.Builder
	reason strings.Builder
	failed bool // a write failed (lease lost, database away): the rest of the turn streams unrecorded
	wrote  bool // a delta write was attempted: the stored turn must drop the turn's deltas
}

func newDeltaWriter(ctx context.Context, l *Loop, taskID int64, worker string) *deltaWriter {
	return &deltaWriter{ctx: ctx, store: l.Store, log: l.log(), taskID: taskID, worker: worker, last: time.Now()}
}

// add gathers a piece of output and writes what has gathered once DeltaFlushInterval passed;
// before that, the timer writes it when the interval is up.
func (w *deltaWriter) add(text, reasoning string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed || w.ended {
		return
	}
	w.text.WriteString(text)
	w.reason.WriteString(reasoning)
	if w.text.Len()+w.reason.Len() == 0 {
		return
	}
	if wait := DeltaFlushInterval - time.Since(w.last); wait > 0 {
		if w.timer == nil {
			w.timer = time.AfterFunc(wait, w.fire)
		}
		return
	}
	w.flush()
}

// fire is the timer's: it writes what has gathered unless the call ended meanwhile.
func (w *deltaWriter) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = nil
	if w.failed || w.ended || w.text.Len()+w.reason.Len() == 0 {
		return
	}
	w.flush()
}

// flush writes what has gathered as one delta event; mu is held.
func (w *deltaWriter) flush() {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	d := store.Delta{Text: w.text.String(), Reasoning: w.reason.String()}
	w.text.Reset()
	w.reason.Reset()
	w.last = time.Now()
	w.wrote = true
	if err := w.store.AppendDelta(w.ctx, w.taskID, w.worker, d); err != nil {
		// Not the turn's failure: its message is written (or refused) under the lease as usual.
		w.failed = true
		w.log.Warn("streamed output not recorded", "task_id", w.taskID, "error", err)
	}
}

// end is called when the model call returned (or failed): the timer is stopped (a firing that
// raced it writes nothing), the unwritten rest dropped, and it reports whether any delta write
// was attempted. Nothing is written after it.
func (w *deltaWriter) end() (wrote bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ended = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	w.text.Reset()
	w.reason.Reset()
	return w.wrote
}
