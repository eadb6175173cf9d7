package agentloop

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/agentsvc/svc/store"
)

// DeltaFlushInterval is how long the model output of a streaming turn gathers before it is
// written to the task's event log as one delta event: event streams see the answer grow a few
// times a second, and a fast model (whose whole answer arrives within the interval) costs no
// delta write at all, since the stored message carries the whole text.
const DeltaFlushInterval = 100 * time.Millisecond

// deltaWriter coalesces the output deltas of one model call into delta events. It runs on the
// driver's goroutine (llm.Request.OnDelta); what it has not written when the call ends is not
// written, because the turn's message event follows with all of it (and a failed turn keeps
// nothing partial: the store drops its deltas).
type deltaWriter struct {
	ctx    context.Context
	store  Store
	log    *slog.Logger
	taskID int64
	worker string
	last   time.Time // of the turn's start or the last write
	text   strings.Builder
	reason strings.Builder
	failed bool // a write failed (lease lost, database away): the rest of the turn streams unrecorded
	wrote  bool // a delta write was attempted: the stored turn must drop the turn's deltas
}

func newDeltaWriter(ctx context.Context, l *Loop, taskID int64, worker string) *deltaWriter {
	return &deltaWriter{ctx: ctx, store: l.Store, log: l.log(), taskID: taskID, worker: worker, last: time.Now()}
}

// add gathers a piece of output and writes what has gathered once DeltaFlushInterval passed.
func (w *deltaWriter) add(text, reasoning string) {
	if w.failed {
		return
	}
	w.text.WriteString(text)
	w.reason.WriteString(reasoning)
	if time.Since(w.last) < DeltaFlushInterval || w.text.Len()+w.reason.Len() == 0 {
		return
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
