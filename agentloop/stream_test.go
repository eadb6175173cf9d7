package agentloop_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// pausingModel streams its first chunk, then holds the second back until release closes (or
// the call's context ends), as a model pausing mid-answer.
type pausingModel struct {
	first, second string
	release       chan struct{}
}

func (m *pausingModel) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	req.OnDelta(llm.Delta{Text: m.first})
	select {
	case <-m.release:
	case <-ctx.Done():
		return nil, &llm.Error{Code: taskstate.CodeUnknown, Message: "cancelled"}
	}
	req.OnDelta(llm.Delta{Text: m.second})
	return &llm.Response{Text: m.first + m.second, StopReason: llm.StopEndTurn}, nil
}

// TestFirstDeltaWithoutNextChunk: streamed text is written as a delta event about
// DeltaFlushInterval after it arrived even when the model sends nothing more meanwhile (issue
// 28, item 7: it waited for the next chunk, so a model pausing 300 ms between chunks showed
// its first words only then). The model holds its second chunk back until the test has seen
// the first as a delta event; the turn then completes with the whole answer, its deltas
// dropped with it as before.
func TestFirstDeltaWithoutNextChunk(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, store.AgentFields{}, true)
	model := &pausingModel{first: "Forty", second: "-two.", release: make(chan struct{})}
	f.Rec.Driver = model
	task := f.NewTask("what is 6*7?", 5)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Drain()
	}()
	ctx := context.Background()
	var delta *store.Delta
	for guard := time.Now().Add(10 * time.Second); delta == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(guard) {
			close(model.release)
			<-done
			t.Fatal("no delta event while the model held its second chunk back")
		}
		evs, err := f.Store.TaskEvents(ctx, task.ID, 0, store.MaxEventsPage)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Type == store.EventDelta {
				delta = ev.Delta
			}
		}
	}
	close(model.release)
	<-done
	if delta.Text != model.first {
		t.Fatalf("first delta %q, want %q", delta.Text, model.first)
	}
	got := f.Task(task.ID)
	if got.Status != taskstate.Completed || got.Answer == nil || *got.Answer != "Forty-two." {
		t.Fatalf("task = %s %v", got.Status, got.Answer)
	}
}
