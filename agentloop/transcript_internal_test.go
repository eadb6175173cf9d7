package agentloop

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentsvc/svc/store"
)

// messageLog is a task's stored conversation; it counts the reads a transcript makes.
type messageLog struct {
	Store // only Messages is called
	msgs  []store.TaskMessage
	reads []int // the sinceSequence of each read
}

func (m *messageLog) Messages(_ context.Context, _ int64, since int) ([]store.TaskMessage, error) {
	m.reads = append(m.reads, since)
	return append([]store.TaskMessage(nil), m.msgs[min(since, len(m.msgs)):]...), nil
}

func (m *messageLog) append(n int) {
	for range n {
		m.msgs = append(m.msgs, store.TaskMessage{Sequence: len(m.msgs) + 1, NewTaskMessage: store.NewTaskMessage{Text: fmt.Sprint(len(m.msgs) + 1)}})
	}
}

// TestTranscriptReadsOnlyWhatIsNew: a run's transcript answers from what it holds while the
// task row's message count matches, reads only the messages after it when others were
// appended, and reads the whole conversation again when it holds more than the row says
// (never in an append-only log) or when the claim's read had a gap.
func TestTranscriptReadsOnlyWhatIsNew(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, tr *transcript, log *messageLog, seq int64, reads []int) {
		t.Helper()
		got, err := tr.through(ctx, log, &store.Task{ID: 1, MessageSeq: seq})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != int(seq) {
			t.Fatalf("through %d: %d messages", seq, len(got))
		}
		for i, m := range got {
			if m.Sequence != i+1 || m.Text != fmt.Sprint(i+1) {
				t.Fatalf("through %d: message %d is %+v", seq, i, m)
			}
		}
		if fmt.Sprint(log.reads) != fmt.Sprint(reads) {
			t.Fatalf("through %d: reads since %v, want %v", seq, log.reads, reads)
		}
	}
	t.Run("claimed, then written by the run", func(t *testing.T) {
		log := &messageLog{}
		log.append(2)
		tr := newTranscript(append([]store.TaskMessage(nil), log.msgs...))
		check(t, tr, log, 2, nil)
		log.append(1) // the run's own turn, which it tells the transcript
		tr.add(log.msgs[2])
		check(t, tr, log, 3, nil)
		log.append(2) // appended by another writer
		check(t, tr, log, 5, []int{3})
	})
	t.Run("not claimed with its conversation", func(t *testing.T) {
		log := &messageLog{}
		log.append(3)
		check(t, newTranscript(nil), log, 3, []int{0})
	})
	t.Run("a gap in the claim's read", func(t *testing.T) {
		log := &messageLog{}
		log.append(3)
		check(t, newTranscript([]store.TaskMessage{log.msgs[0], log.msgs[2]}), log, 3, []int{0})
	})
	t.Run("more than the row says", func(t *testing.T) {
		log := &messageLog{}
		log.append(2)
		tr := newTranscript(append([]store.TaskMessage(nil), log.msgs...))
		tr.add(store.TaskMessage{Sequence: 3, NewTaskMessage: store.NewTaskMessage{Text: "3"}})
		check(t, tr, log, 2, []int{0})
	})
	t.Run("a written turn that does not follow on", func(t *testing.T) {
		log := &messageLog{}
		log.append(3)
		tr := newTranscript(append([]store.TaskMessage(nil), log.msgs[:1]...))
		tr.add(log.msgs[2]) // message 2 unknown to the run: left to the read
		check(t, tr, log, 3, []int{1})
	})
}
