package agentloop

import (
	"context"

	"github.com/agentsvc/svc/store"
)

// A run's transcript. Every step sends the model the whole conversation, and read it whole
// from task_messages: a statement a step (one of a one-step task's five on PostgreSQL), and a
// long conversation read again at each of its steps. A task's messages are append-only and
// numbered from 1 without gaps, and the task row says the last number given out
// (store.Task.MessageSeq, returned by the claim and by each step's write), so a run keeps
// what it has read and what it wrote, and reads only what is new — nothing, unless another
// writer appended meanwhile. The claim reads the conversations of its whole batch in one
// statement (Loop.Claim).

// Claimed is a task as a claim hands it to Run: the task row and its conversation through
// Task.MessageSeq as the claim read it (nil: the first step reads it).
type Claimed struct {
	Task     *store.Task
	Messages []store.TaskMessage
}

// Claim claims up to n queued tasks for workerID under the loop's lease, then reads their
// conversations in one statement. A failed read only leaves the steps to read them: the
// tasks are claimed and must run. Errors: the claim's (store.ClaimQueued).
func (l *Loop) Claim(ctx context.Context, workerID string, n int) ([]Claimed, error) {
	ts, err := l.Store.ClaimQueued(ctx, workerID, l.Lease, n)
	if err != nil || len(ts) == 0 {
		return nil, err
	}
	ids := make([]int64, len(ts))
	for i := range ts {
		ids[i] = ts[i].ID
	}
	msgs, err := l.Store.MessagesOfTasks(ctx, ids)
	if err != nil && ctx.Err() == nil { // a stop meanwhile is not worth a warning
		l.log().Warn("reading the claimed tasks' conversations; each step reads its own", "err", err)
	}
	out := make([]Claimed, len(ts))
	for i := range ts {
		out[i] = Claimed{Task: &ts[i], Messages: msgs[ts[i].ID]}
	}
	return out, nil
}

// transcript is the conversation of the task a run runs, as far as the run knows it: messages
// 1 to len(msgs), in order.
type transcript struct {
	msgs []store.TaskMessage
}

// newTranscript starts a run's transcript from the claim's read, when it is whole (messages
// 1 to n in order); else empty, and the first step reads it.
func newTranscript(msgs []store.TaskMessage) *transcript {
	for i, m := range msgs {
		if m.Sequence != i+1 {
			return &transcript{}
		}
	}
	return &transcript{msgs: msgs}
}

// through returns task t's conversation through t.MessageSeq, reading what the transcript
// lacks. Errors: the store's.
func (tr *transcript) through(ctx context.Context, s Store, t *store.Task) ([]store.TaskMessage, error) {
	have := int64(len(tr.msgs))
	if have == t.MessageSeq {
		return tr.msgs, nil
	}
	if have > t.MessageSeq { // not in an append-only conversation: read it whole again
		tr.msgs, have = nil, 0
	}
	more, err := s.Messages(ctx, t.ID, int(have))
	if err != nil {
		return nil, err
	}
	tr.add(more...)
	return tr.msgs, nil
}

// add appends messages the run read or wrote, as long as they follow on; a gap leaves the
// rest to the next read.
func (tr *transcript) add(ms ...store.TaskMessage) {
	for _, m := range ms {
		if m.Sequence != len(tr.msgs)+1 {
			return
		}
		tr.msgs = append(tr.msgs, m)
	}
}

// inRun marks the context of a step that Loop.Run runs, with the run's transcript: its finish
// renews the lease when the task stays RUNNING, instead of a separate ExtendLease.
type inRun struct{}

// runTranscript is the transcript of the run ctx is a step of; nil outside Run.
func runTranscript(ctx context.Context) *transcript {
	tr, _ := ctx.Value(inRun{}).(*transcript)
	return tr
}

// messages returns task t's conversation for a step: from the run's transcript inside Run,
// else read whole. Errors: the store's.
func (l *Loop) messages(ctx context.Context, t *store.Task) ([]store.TaskMessage, error) {
	if tr := runTranscript(ctx); tr != nil {
		return tr.through(ctx, l.Store, t)
	}
	return l.Store.Messages(ctx, t.ID, 0)
}

// wrote tells the run's transcript, if any, of a message the step stored.
func wrote(ctx context.Context, m store.TaskMessage) {
	if tr := runTranscript(ctx); tr != nil {
		tr.add(m)
	}
}
