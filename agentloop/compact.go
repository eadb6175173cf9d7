package agentloop

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/internal/vocab/text"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// Compaction keeps a long conversation inside the model's context window (issue 25). Before
// each model call the request's size is estimated against the configuration's context_window
// less the answer's reserve (the agent's compaction_answer_reserve, else the configuration's
// max_tokens_output, else DefaultAnswerReserve); past the agent's compaction_threshold_percent
// of it (CompactThreshold unless set), the turns before the latest user message are summarised
// by the agent's summary model configuration (else the one it runs with) and the summary
// replaces them in what is sent (appended to the system prompt). An agent with compaction off
// sends the conversation whole and fails with CONTEXT_TOO_LONG when the provider refuses it. The system prompt, the latest user message and
// every turn after it — the pending tool calls with their results — are always sent whole, and
// a tool call is never separated from its result (a cut falls only before a user message). A
// provider's context-length refusal compacts too, and the call is tried once more. The
// transcript keeps every message: the summary is a `summary` event of the task's log.
const (
	// CompactThreshold is the share (percent) of the usable window a request may fill before
	// older turns are compacted.
	CompactThreshold = 80
	// DefaultAnswerReserve is the window kept for the answer when the configuration sets no
	// max_tokens_output.
	DefaultAnswerReserve = 1024
	// CharsPerToken is the estimate of a request's tokens: about 4 characters per token, close
	// for English, generous for code, short for CJK text — the threshold's margin absorbs it,
	// and a provider's refusal is the backstop.
	CharsPerToken = 4
	// messageOverhead is the estimate's tokens per message (role, separators).
	messageOverhead = 4
	// maxRenderedResult bounds one tool result in the text handed to the summariser.
	maxRenderedResult = 2000
	// summaryAttempts bounds the summariser's calls of one compaction (each after a refusal as
	// too long, with half the text).
	summaryAttempts = 3
)

// tooLongAfterCompaction is the message of a task failed with CONTEXT_TOO_LONG.
const tooLongAfterCompaction = "the conversation does not fit the model's context window even after compaction"

// errTooLong is fit's refusal: the request cannot be made to fit.
var errTooLong = errors.New(tooLongAfterCompaction)

// errNothingToCompact is compact's refusal when nothing precedes the latest user message.
var errNothingToCompact = fmt.Errorf("nothing to compact: %w", errTooLong)

// errCompactionOff is fit's refusal of a request the provider found too long when the agent's
// compaction is off.
var errCompactionOff = errors.New("the conversation does not fit the model's context window and the agent's compaction is off")

// summaryPrompt is the system prompt of a compaction call.
const summaryPrompt = "You compact the conversation of an AI agent with its user so that the agent can go on " +
	"within its context window. Summarise the conversation below as notes for the agent: the user's goals and " +
	"requests, decisions made, facts learnt, tool results that still matter, and open questions. Be concise and " +
	"keep names, numbers and identifiers exact. Do not answer the user; write only the notes."

// estimateTokens is the documented estimate of req's size in tokens.
func estimateTokens(req *llm.Request) int {
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Text) + messageOverhead*CharsPerToken
		for _, r := range m.Reasoning {
			n += len(r.Text)
		}
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n / CharsPerToken
}

// windowOf is the tokens a request may hold under cfg (its context_window less the answer's
// reserve: the agent's, else the configuration's max_tokens_output, else DefaultAnswerReserve),
// and the threshold past which it is compacted (the agent's percent of it, else
// CompactThreshold); zero when the window is unknown. a may be nil (the defaults).
func windowOf(cfg *store.LLMConfig, a *store.Agent) (usable, threshold int) {
	if cfg == nil || cfg.ContextWindow == nil || *cfg.ContextWindow <= 0 {
		return 0, 0
	}
	window, reserve, percent := *cfg.ContextWindow, DefaultAnswerReserve, CompactThreshold
	if cfg.MaxTokensOutput != nil && *cfg.MaxTokensOutput > 0 {
		reserve = *cfg.MaxTokensOutput
	}
	if a != nil && a.Compaction.AnswerReserve > 0 {
		reserve = a.Compaction.AnswerReserve
	}
	if a != nil && a.Compaction.ThresholdPercent > 0 {
		percent = a.Compaction.ThresholdPercent
	}
	if usable = window - reserve; usable < window/2 {
		usable = window / 2 // an answer reserve as large as the window leaves half for the prompt
	}
	return usable, usable * percent / 100
}

// withSummary is the system prompt sent with a summary of the earlier conversation.
func withSummary(system, summary string) string {
	return strings.TrimSpace(system + "\n\nSummary of the earlier conversation (older turns are not repeated):\n" + summary)
}

// conversation is what one step sends to the model, and how it is compacted.
type conversation struct {
	loop   *Loop
	task   *store.Task
	agent  *store.Agent
	states map[string]tools.ToolState
	calls  []store.ToolCall
	cfg    *store.LLMConfig
	driver llm.Driver
	worker string
	// summariser writes the summaries with configuration summaryCfg: the agent's summary model,
	// else cfg and driver.
	summaryCfg *store.LLMConfig
	summariser llm.Driver

	summary   *store.Summary
	seqs      []int64 // the stored message each request message comes from
	compacted bool    // this step compacted already
}

// build reads the conversation (with the task's latest summary, if any) into a request.
// Errors: the store's.
func (c *conversation) build(ctx context.Context) (llm.Request, error) {
	if c.summary == nil && c.task.SummarySeq > 0 {
		sm, err := c.loop.Store.SummaryAt(ctx, c.task.ID, c.task.SummarySeq)
		if err != nil {
			return llm.Request{}, err
		}
		c.summary = sm
	}
	req, seqs, err := c.loop.request(ctx, c.task, c.agent, c.states, c.calls, c.summary)
	c.seqs = seqs
	return req, err
}

// fit returns req, compacted first when its estimate passes the threshold of the model's
// window, or when force is set (the provider refused it as too long). Errors: errTooLong when
// it cannot fit (nothing before the latest user message to compact, or still over the window
// after compacting, or refused again), the summariser's model errors, the store's.
func (c *conversation) fit(ctx context.Context, req llm.Request, force bool) (llm.Request, error) {
	usable, threshold := windowOf(c.cfg, c.agent)
	if !c.agent.Compaction.Enabled {
		if force {
			return req, errCompactionOff
		}
		return req, nil
	}
	if !force && (threshold == 0 || estimateTokens(&req) <= threshold) {
		return req, nil
	}
	if c.compacted && force {
		return req, errTooLong // one compaction per step: the request was refused after it
	}
	if err := c.compact(ctx, req); err != nil {
		if errors.Is(err, errNothingToCompact) && !force && estimateTokens(&req) <= usable {
			return req, nil // past the threshold but within the window: it goes as it is
		}
		return req, err
	}
	out, err := c.build(ctx)
	if err != nil {
		return req, err
	}
	if usable > 0 && estimateTokens(&out) > usable {
		return out, errTooLong
	}
	return out, nil
}

// compact summarises every message of req before the latest user message (with the previous
// summary) and records the summary on the task. Errors: errNothingToCompact (an errTooLong)
// when nothing precedes the latest user message; the summariser's model error; the store's.
func (c *conversation) compact(ctx context.Context, req llm.Request) error {
	last := -1 // the latest user message
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			last = i
			break
		}
	}
	if last <= 0 {
		return errNothingToCompact
	}
	head := ""
	if c.summary != nil {
		head = "Summary so far:\n" + c.summary.Text + "\n\n"
	}
	var b strings.Builder
	for _, m := range req.Messages[:last] {
		switch m.Role {
		case llm.RoleUser:
			b.WriteString("User: " + m.Text + "\n")
		case llm.RoleAssistant:
			if m.Text != "" {
				b.WriteString("Agent: " + m.Text + "\n")
			}
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "Agent called %s with %s\n", tc.Name, text.Clip(string(tc.Arguments), maxRenderedResult))
			}
		case llm.RoleTool:
			b.WriteString("Tool result: " + text.Clip(m.Text, maxRenderedResult) + "\n")
		}
	}
	turns := b.String()
	scfg, sdriver := c.cfg, c.driver
	if c.summaryCfg != nil && c.summariser != nil {
		scfg, sdriver = c.summaryCfg, c.summariser
	}
	// The summariser has a window too: it reads the previous summary and the most recent turns
	// that fit in three quarters of it; refused as too long all the same (the estimate is
	// short for the provider's tokenizer), it is asked again with half as much, at most
	// summaryAttempts times in all.
	keep := len(head) + len(turns)
	if usable, _ := windowOf(scfg, nil); usable > 0 {
		keep = min(keep, usable*CharsPerToken*3/4)
	}
	var resp *llm.Response
	for attempt := 1; ; attempt++ {
		rendered := head + turns
		if len(rendered) > keep {
			cut := len(turns) - max(keep-len(head), keep/4)
			rendered = head + "(the oldest turns are omitted)\n" + turns[min(max(cut, 0), len(turns)):]
		}
		sreq := llm.Request{System: summaryPrompt, Summary: true,
			Messages: []llm.Message{{Role: llm.RoleUser, Text: strings.ToValidUTF8(rendered, "")}}}
		var err error
		resp, err = sdriver.Complete(ctx, sreq)
		var le *llm.Error
		if errors.As(err, &le) && le.Code == taskstate.CodeContextTooLong && attempt < summaryAttempts && ctx.Err() == nil {
			keep = min(keep, len(rendered)) / 2
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	sm := store.Summary{FromSequence: c.seqs[0], ThroughSequence: c.seqs[last-1], Text: strings.TrimSpace(resp.Text),
		Model: scfg.Model, LLMConfigID: scfg.ID, InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
		Prices: scfg.Prices}
	if sm.Text == "" {
		return &llm.Error{Code: taskstate.CodeBadRequest, Message: "the model wrote an empty summary of the conversation"}
	}
	if err := c.loop.Store.AppendSummary(ctx, c.task.ID, c.worker, sm); err != nil {
		return err
	}
	c.summary, c.compacted = &sm, true
	c.loop.log().InfoContext(ctx, "conversation compacted", "task_id", c.task.ID, "through_sequence", sm.ThroughSequence,
		"input_tokens", sm.InputTokens, "output_tokens", sm.OutputTokens)
	return nil
}

// failTooLong ends a step whose request could not be fitted: CONTEXT_TOO_LONG for errTooLong,
// the model's error code for a failed summary, the error itself otherwise (the store's).
func (l *Loop) failTooLong(ctx context.Context, t *store.Task, worker string, err error) (*store.Task, error) {
	var le *llm.Error
	switch {
	case errors.Is(err, errCompactionOff):
		return l.fail(ctx, t, worker, taskstate.CodeContextTooLong, err.Error(), nil)
	case errors.Is(err, errTooLong):
		return l.fail(ctx, t, worker, taskstate.CodeContextTooLong, tooLongAfterCompaction, nil)
	case errors.As(err, &le) && ctx.Err() == nil:
		return l.failWait(ctx, t, worker, le.Code, "compacting the conversation: "+le.Message, le.RetryAfter)
	}
	return nil, err
}

// EstimateTokens is the estimate of req's size in tokens the loop compacts by (about
// CharsPerToken characters per token, plus a few per message).
func EstimateTokens(req *llm.Request) int { return estimateTokens(req) }
