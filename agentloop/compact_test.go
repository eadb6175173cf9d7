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
	"github.com/agentsvc/svc/store/storetest"
)

// chatPast drives a chat of turns user messages of about 1,200 characters each (the first the
// prompt, then follow-ups) through f and returns the task as left.
func chatPast(t testing.TB, f *looptest.Fixture, turns int) *store.Task {
	t.Helper()
	ctx := context.Background()
	say := func(i int) string { return fmt.Sprintf("Message %d: ", i+1) + strings.Repeat("lorem ipsum ", 100) }
	tk := f.NewTask(say(0), 5)
	f.Drain()
	for i := 1; i < turns; i++ {
		if got := f.Task(tk.ID); got.Status != taskstate.Completed {
			t.Fatalf("turn %d: task is %s (%+v)", i, got.Status, got.Error)
		}
		if _, err := f.Store.TransitionTask(ctx, tk.ID, store.TaskTransition{Action: taskstate.Continue, To: taskstate.Queued,
			GrantSteps: 5, UserMessage: &store.NewTaskMessage{Role: store.RoleUser, Text: say(i)}}); err != nil {
			t.Fatalf("follow-up %d: %v", i, err)
		}
		f.Drain()
	}
	return f.Task(tk.ID)
}

// answers is the scripted model's 40 answers.
func answers(n int) []llm.ScriptTurn {
	out := make([]llm.ScriptTurn, n)
	for i := range out {
		out[i] = llm.ScriptTurn{Text: fmt.Sprintf("Answer %d.", i+1), Usage: &llm.Usage{InputTokens: 100, OutputTokens: 5}}
	}
	return out
}

// TestLongChatIsCompacted is issue 25's walk with the scripted driver: 40 follow-ups of ~1,200
// characters through a 2,000-token window. Every turn completes with its own answer, the
// transcript keeps all 80 messages, summaries are written as `summary` events and counted in
// the usage, and no request sent for an answer passes the window; the latest user message is
// always sent whole.
func TestLongChatIsCompacted(t *testing.T) {
	t.Parallel()
	window, reserve := 2000, 200
	f := looptest.New(t, answers(40), store.AgentFields{AllowFollowup: ptr(true)}, true,
		looptest.WithLLMConfig(func(c *store.LLMConfig) { c.ContextWindow, c.MaxTokensOutput = &window, &reserve }))
	tk := chatPast(t, f, 40)
	if tk.Status != taskstate.Completed || tk.Answer == nil || *tk.Answer != "Answer 40." {
		t.Fatalf("last turn: %s %v (%+v)", tk.Status, tk.Answer, tk.Error)
	}
	msgs, err := f.Store.Messages(context.Background(), tk.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	users := 0
	for _, m := range msgs {
		if m.Role == store.RoleUser {
			users++
		}
	}
	if users != 40 || len(msgs) != 80 {
		t.Fatalf("transcript: %d messages, %d from the user", len(msgs), users)
	}
	evs, err := f.Store.TaskEvents(context.Background(), tk.ID, 0, store.MaxEventsPage)
	if err != nil {
		t.Fatal(err)
	}
	var summaries []*store.Summary
	for _, ev := range evs {
		if ev.Type == store.EventSummary {
			summaries = append(summaries, ev.Summary)
		}
	}
	if len(summaries) < 5 || tk.SummarySeq == 0 {
		t.Fatalf("%d summaries (summary_seq %d)", len(summaries), tk.SummarySeq)
	}
	var spent int64 = 40 * 100
	for i, sm := range summaries {
		spent += sm.InputTokens
		if sm.Text == "" || sm.Model == "" || (i > 0 && sm.ThroughSequence <= summaries[i-1].ThroughSequence) {
			t.Fatalf("summary %d = %+v", i, sm)
		}
	}
	if tk.InputTokens != spent {
		t.Fatalf("input tokens %d, want %d (answers and summaries)", tk.InputTokens, spent)
	}
	answered := 0
	for _, req := range f.Rec.Requests() {
		if req.Summary {
			continue
		}
		answered++
		if est := agentloop.EstimateTokens(&req); est > window-reserve {
			t.Fatalf("request %d of about %d tokens passes the window", answered, est)
		}
		if last := req.Messages[len(req.Messages)-1]; last.Role != llm.RoleUser || !strings.Contains(last.Text, fmt.Sprintf("Message %d:", answered)) {
			t.Fatalf("request %d does not end with its user message whole: %q", answered, text80(last.Text))
		}
	}
	if answered != 40 {
		t.Fatalf("%d answering requests", answered)
	}
}

// refusing is a model that refuses, as a provider does, any request over limit tokens.
type refusing struct {
	inner   llm.Driver
	limit   int
	refused int
}

func (r *refusing) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if est := agentloop.EstimateTokens(&req); est > r.limit {
		r.refused++
		return nil, &llm.Error{Code: taskstate.CodeContextTooLong, Message: fmt.Sprintf("openai answered HTTP 400: This model's maximum context length is %d tokens", r.limit)}
	}
	return r.inner.Complete(ctx, req)
}

// TestRefusedRequestIsCompacted: with no context_window configured, the provider's refusal of
// a long request compacts the conversation and the call is tried once more, so every turn
// completes, each refusal followed by one compaction; a single message too long for the window
// fails the task with CONTEXT_TOO_LONG.
func TestRefusedRequestIsCompacted(t *testing.T) {
	t.Parallel()
	f := looptest.New(t, answers(12), store.AgentFields{AllowFollowup: ptr(true)}, true)
	model := &refusing{inner: f.Rec.Driver, limit: 1500}
	f.Rec.Driver = model
	tk := chatPast(t, f, 12)
	if tk.Status != taskstate.Completed || *tk.Answer != "Answer 12." {
		t.Fatalf("last turn: %s (%+v)", tk.Status, tk.Error)
	}
	summaries := 0
	for _, req := range f.Rec.Requests() {
		if req.Summary {
			summaries++
		}
	}
	if model.refused == 0 || summaries != model.refused {
		t.Fatalf("%d refusals, %d compactions", model.refused, summaries)
	}

	huge := f.NewTask(strings.Repeat("x", 8000), 5)
	f.Drain()
	if got := f.Task(huge.ID); got.Status != taskstate.Failed || got.Error == nil || got.Error.Code != taskstate.CodeContextTooLong {
		t.Fatalf("an oversize prompt: %s %+v", got.Status, got.Error)
	}
}

func text80(s string) string {
	if len(s) > 80 {
		return s[:80]
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// notes is a summary model: it answers every request with notes and counts them.
type notes struct{ calls int }

func (n *notes) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	n.calls++
	if !req.Summary {
		return nil, fmt.Errorf("the summary model was asked for an answer")
	}
	return &llm.Response{Text: fmt.Sprintf("Notes %d.", n.calls), Usage: llm.Usage{InputTokens: 7, OutputTokens: 3}}, nil
}

// TestCompactionSettings: the agent's summary model writes the summaries (recorded with its
// configuration, model and the messages each newly replaces), its threshold and answer
// reserve set the point of compaction, and with compaction off nothing is summarised and a
// provider's refusal fails the task with CONTEXT_TOO_LONG saying so.
func TestCompactionSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	window := 2000
	f := looptest.New(t, answers(20), store.AgentFields{AllowFollowup: ptr(true), CompactionThresholdPercent: ptr(50), CompactionAnswerReserve: ptr(400)}, true,
		looptest.WithLLMConfig(func(c *store.LLMConfig) { c.ContextWindow = &window }))
	main, err := f.Store.ResolveLLMConfig(ctx, &f.Agent.PrincipalID)
	if err != nil {
		t.Fatal(err)
	}
	summaryCfg := storetest.LLMConfig(t, f.Store, main.GroupID, func(c *store.LLMConfig) { c.IsDefault, c.Model = false, "small-model" })
	if _, err := f.Store.UpdateAgent(ctx, f.Agent.ID, f.User.ID, store.AgentFields{SummaryLLMConfigID: &summaryCfg.ID}, nil); err != nil {
		t.Fatal(err)
	}
	sm := &notes{}
	f.Loop.Driver = func(c *store.LLMConfig) (llm.Driver, error) {
		if c.ID == summaryCfg.ID {
			return sm, nil
		}
		return f.Rec, nil
	}
	tk := chatPast(t, f, 20)
	if tk.Status != taskstate.Completed {
		t.Fatalf("last turn: %s %+v", tk.Status, tk.Error)
	}
	for _, req := range f.Rec.Requests() {
		if req.Summary {
			t.Fatal("the main model was asked for a summary")
		}
		// 50 % of the window less the 400-token reserve, and one message of ~300 tokens more.
		if est := agentloop.EstimateTokens(&req); est > (window-400)/2+400 {
			t.Fatalf("a request of about %d tokens passed the agent's threshold", est)
		}
	}
	evs, err := f.Store.Summaries(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || len(evs) != sm.calls {
		t.Fatalf("%d summary events, %d summary calls", len(evs), sm.calls)
	}
	from := int64(1)
	for _, ev := range evs {
		s := ev.Summary
		if s.LLMConfigID != summaryCfg.ID || s.Model != "small-model" || s.FromSequence != from || s.ThroughSequence < s.FromSequence {
			t.Fatalf("summary %+v (want from %d)", s, from)
		}
		from = s.ThroughSequence + 1
	}

	// Compaction off: the whole conversation is sent; the provider's refusal fails the task.
	off := looptest.New(t, answers(12), store.AgentFields{AllowFollowup: ptr(true), CompactionEnabled: ptr(false)}, true,
		looptest.WithLLMConfig(func(c *store.LLMConfig) { c.ContextWindow = &window }))
	model := &refusing{inner: off.Rec.Driver, limit: 1500}
	off.Rec.Driver = model
	say := strings.Repeat("lorem ipsum ", 100)
	tk = off.NewTask(say, 5)
	off.Drain()
	for i := 0; i < 6 && off.Task(tk.ID).Status == taskstate.Completed; i++ {
		if _, err := off.Store.TransitionTask(ctx, tk.ID, store.TaskTransition{Action: taskstate.Continue, To: taskstate.Queued,
			GrantSteps: 5, UserMessage: &store.NewTaskMessage{Role: store.RoleUser, Text: say}}); err != nil {
			t.Fatal(err)
		}
		off.Drain()
	}
	got := off.Task(tk.ID)
	if got.Status != taskstate.Failed || got.Error == nil || got.Error.Code != taskstate.CodeContextTooLong ||
		!strings.Contains(got.Error.Message, "compaction is off") || got.SummarySeq != 0 || model.refused != 1 {
		t.Fatalf("with compaction off: %s %+v (summary_seq %d, %d refusals)", got.Status, got.Error, got.SummarySeq, model.refused)
	}
	for _, req := range off.Rec.Requests() {
		if req.Summary {
			t.Fatal("a summary was asked for with compaction off")
		}
	}
}

// shortSummaries refuses, as too long, any summariser request of more than limit characters.
type shortSummaries struct {
	inner   llm.Driver
	limit   int
	refused int
	sent    []string // the summariser requests' text accepted
}

func (s *shortSummaries) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if req.Summary {
		if n := len(req.Messages[0].Text); n > s.limit {
			s.refused++
			return nil, &llm.Error{Code: taskstate.CodeContextTooLong, Message: "prompt is too long"}
		}
		s.sent = append(s.sent, req.Messages[0].Text)
	}
	return s.inner.Complete(ctx, req)
}

// TestSummariserRefusalIsRetriedShorter: a summariser request the provider refuses as too long
// is asked again with half as much of the turns, and the previous summary is always kept at its
// head: the chat goes on.
func TestSummariserRefusalIsRetriedShorter(t *testing.T) {
	t.Parallel()
	window, reserve := 2000, 200
	f := looptest.New(t, answers(20), store.AgentFields{AllowFollowup: ptr(true)}, true,
		looptest.WithLLMConfig(func(c *store.LLMConfig) { c.ContextWindow, c.MaxTokensOutput = &window, &reserve }))
	model := &shortSummaries{inner: f.Rec.Driver, limit: 1500}
	f.Rec.Driver = model
	tk := chatPast(t, f, 20)
	if tk.Status != taskstate.Completed || *tk.Answer != "Answer 20." {
		t.Fatalf("last turn: %s (%+v)", tk.Status, tk.Error)
	}
	if model.refused == 0 || len(model.sent) < 2 {
		t.Fatalf("%d refusals, %d summaries", model.refused, len(model.sent))
	}
	for i, text := range model.sent[1:] {
		if !strings.HasPrefix(text, "Summary so far:\n") || !strings.Contains(text, "(the oldest turns are omitted)") {
			t.Fatalf("summary request %d: %q", i+2, text80(text))
		}
	}
}
