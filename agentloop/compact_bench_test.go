package agentloop_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentsvc/svc/agentloop"
	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/agentloop/looptest"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// costModel answers every request with ~400 characters and every compaction with a summary of
// ~1,500 characters, reporting as usage the loop's own estimate of the request (input) and the
// answer's length over 4 (output), so the task's usage is what the chat cost.
type costModel struct{ summaries, answers int }

func (m *costModel) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	text := strings.Repeat("The answer goes on. ", 20)
	if req.Summary {
		m.summaries++
		text = strings.Repeat("Notes on the earlier turns. ", 54)
	} else {
		m.answers++
	}
	return &llm.Response{Text: text, StopReason: llm.StopEndTurn,
		Usage: llm.Usage{InputTokens: int64(agentloop.EstimateTokens(&req)), OutputTokens: int64(len(text) / agentloop.CharsPerToken)}}, nil
}

// BenchmarkCompactionCost measures what compaction costs a long chat: 100 turns (follow-ups of
// ~1,200 characters, answers of ~400) through a model window of 4,000 and of 16,000 tokens, at
// the default threshold (80 %) and answer reserve (1,024). It reports per 100 turns the extra
// model calls (summaries), their input and output tokens, and the input tokens of the answering
// calls, beside what those would have been without compaction (the whole history each time,
// which stops fitting the window after a few turns). Run it with
// `go test -run '^$' -bench BenchmarkCompactionCost -benchtime 1x ./agentloop/`.
func BenchmarkCompactionCost(b *testing.B) {
	for _, window := range []int{4000, 16000} {
		b.Run(fmt.Sprintf("window=%d", window), func(b *testing.B) {
			for range b.N {
				f := looptest.New(b, nil, store.AgentFields{AllowFollowup: ptr(true)}, true,
					looptest.WithLLMConfig(func(c *store.LLMConfig) { c.ContextWindow = &window }))
				model := &costModel{}
				f.Rec.Driver = model
				tk := chatPast(b, f, 100)
				if tk.Status != taskstate.Completed {
					b.Fatalf("%s %+v", tk.Status, tk.Error)
				}
				var summaryIn, summaryOut, answerIn, wholeIn int64
				evs, err := f.Store.Summaries(context.Background(), tk.ID)
				if err != nil {
					b.Fatal(err)
				}
				for _, ev := range evs {
					summaryIn += ev.Summary.InputTokens
					summaryOut += ev.Summary.OutputTokens
				}
				answerIn = tk.InputTokens - summaryIn
				history := 0 // characters of the whole history before each answer
				msgs, err := f.Store.Messages(context.Background(), tk.ID, 0)
				if err != nil {
					b.Fatal(err)
				}
				for _, m := range msgs {
					history += len(m.Text)
					if m.Role == store.RoleUser {
						wholeIn += int64(history / agentloop.CharsPerToken)
					}
				}
				b.ReportMetric(float64(model.summaries), "summary-calls/100turns")
				b.ReportMetric(float64(summaryIn), "summary-in-tok/100turns")
				b.ReportMetric(float64(summaryOut), "summary-out-tok/100turns")
				b.ReportMetric(float64(answerIn), "answer-in-tok/100turns")
				b.ReportMetric(float64(wholeIn), "uncompacted-in-tok/100turns")
			}
		})
	}
}
