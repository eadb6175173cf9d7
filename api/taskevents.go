package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/chat"
	"github.com/agentsvc/svc/store"
)

// StreamTaskEvents streams the events of one of the caller's tasks (Server-Sent Events).
func (a *API) StreamTaskEvents(ctx context.Context, req gen.StreamTaskEventsRequestObject) (gen.StreamTaskEventsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	v, err := a.tasks.Get(ctx, id.User, req.TaskId)
	if err != nil {
		return nil, err
	}
	release, err := a.events.Acquire(fmt.Sprintf("user:%d", id.User.ID))
	if err != nil {
		return nil, err
	}
	return &eventStream{api: a, ctx: ctx, taskID: v.Task.ID, after: eventCursor(req.Params.LastEventID, req.Params.SinceSequence), release: release,
		authorized: func(ctx context.Context) error { return a.accounts.StillSignedIn(ctx, id) }}, nil
}

// StreamAgentChatEvents streams the events of one of the key's chats (Server-Sent Events).
func (a *API) StreamAgentChatEvents(ctx context.Context, req gen.StreamAgentChatEventsRequestObject) (gen.StreamAgentChatEventsResponseObject, error) {
	k, err := agentKey(ctx)
	if err != nil {
		return nil, err
	}
	v, err := a.chats.Get(ctx, k, req.Id)
	if err != nil {
		return nil, err
	}
	release, err := a.events.Acquire(fmt.Sprintf("key:%d", k.ID))
	if err != nil {
		return nil, err
	}
	return &eventStream{api: a, ctx: ctx, taskID: v.Task.ID, after: eventCursor(req.Params.LastEventID, req.Params.SinceSequence), release: release,
		authorized: func(ctx context.Context) error { return a.apiKeys.StillValid(ctx, k) }}, nil
}

// eventCursor is where a stream starts: Last-Event-ID (an EventSource reconnecting), else
// since_sequence, else the beginning. The gate has checked both are decimal and not negative.
func eventCursor(lastEventID *string, since *int64) int64 {
	if lastEventID != nil {
		if n, err := strconv.ParseInt(*lastEventID, 10, 64); err == nil {
			return n
		}
	}
	if since != nil {
		return *since
	}
	return 0
}

// eventStream is the 200 answer of both stream operations: it writes the stream itself, so
// each event reaches the client as it is sent.
type eventStream struct {
	api     *API
	ctx     context.Context // the request's: cancelled when the client goes away
	taskID  int64
	after   int64
	release func() // the owner's stream slot (taskstream.Broker.Acquire)
	// authorized asks whether the session or key that opened the stream still stands.
	authorized func(ctx context.Context) error
	w          http.ResponseWriter
	rc         *http.ResponseController
}

func (e *eventStream) VisitStreamTaskEventsResponse(w http.ResponseWriter) error { return e.serve(w) }

func (e *eventStream) VisitStreamAgentChatEventsResponse(w http.ResponseWriter) error {
	return e.serve(w)
}

func (e *eventStream) serve(w http.ResponseWriter) error {
	defer e.release()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // reverse proxies must not buffer the stream
	w.WriteHeader(http.StatusOK)
	e.w, e.rc = w, http.NewResponseController(w)
	e.Flush()
	if err := e.api.events.Serve(e.ctx, e.taskID, e.after, e); err != nil && e.ctx.Err() == nil {
		// The status line is sent: the stream just ends, and a reconnect resumes it.
		e.api.log.Warn("task event stream ended early", "task_id", e.taskID, "error", err)
	}
	return nil
}

// Event writes one event: id (its sequence), event (its type) and data (a TaskEvent).
func (e *eventStream) Event(ev *store.TaskEvent, kinds map[string]string) error {
	data, err := json.Marshal(toTaskEvent(ev, kinds))
	if err != nil {
		return fmt.Errorf("encode task event: %w", err)
	}
	_, err = fmt.Fprintf(e.w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Sequence, ev.Type, data)
	return err
}

// KeepAlive writes a comment line.
func (e *eventStream) KeepAlive() error {
	_, err := fmt.Fprint(e.w, ": keep-alive\n\n")
	return err
}

// Authorized reports whether the stream's credential still stands (taskstream.Sink).
func (e *eventStream) Authorized(ctx context.Context) error { return e.authorized(ctx) }

// Flush sends what was written.
func (e *eventStream) Flush() { _ = e.rc.Flush() } // http.ErrNotSupported: nothing buffers

func toTaskEvent(ev *store.TaskEvent, kinds map[string]string) gen.TaskEvent {
	out := gen.TaskEvent{Sequence: ev.Sequence, Type: gen.TaskEventType(ev.Type), At: ev.CreatedAt}
	switch {
	case ev.Status != nil:
		st := ev.Status
		s := gen.TaskEventStatus{Status: gen.TaskStatus(st.Status), Answer: st.Answer, StepsUsed: int64(st.StepsUsed),
			Usage:       gen.TaskUsage{InputTokens: st.InputTokens, OutputTokens: st.OutputTokens},
			NextRetryAt: st.NextRetryAt, Retrying: st.Retrying}
		if st.Error != nil {
			s.Error = &gen.TaskError{Code: gen.TaskErrorCode(st.Error.Code), Message: st.Error.Message}
		}
		out.Status = &s
	case ev.Message != nil:
		var atts []chat.Attachment
		for _, id := range ev.Message.MediaIDs {
			if k, ok := kinds[id]; ok {
				atts = append(atts, chat.Attachment{MediaID: id, Kind: k})
			}
		}
		m := transcriptMessage(ev.Message, atts)
		out.Message = &m
	case ev.ToolCall != nil:
		c := transcriptToolCall(ev.ToolCall)
		out.ToolCall = &c
	case ev.Questions != nil:
		b := ev.Questions
		qb := gen.TaskEventQuestionBatch{ToolCallId: b.ToolCallID, CreatedAt: b.CreatedAt, AnsweredAt: b.AnsweredAt,
			Questions: taskQuestions(b.Questions)}
		if b.AnsweredBy != nil {
			by := "user:" + strconv.FormatInt(*b.AnsweredBy, 10)
			qb.AnsweredBy = &by
		}
		if b.Answers != nil {
			as := make([]gen.TaskQuestionAnswer, 0, len(b.Answers))
			for _, an := range b.Answers {
				sel := an.Selections
				if sel == nil {
					sel = []string{}
				}
				as = append(as, gen.TaskQuestionAnswer{Header: an.Header, Selections: sel, FreeText: an.FreeText})
			}
			qb.Answers = &as
		}
		out.QuestionBatch = &qb
	case ev.Delta != nil:
		out.Delta = &gen.TaskEventDelta{Text: ev.Delta.Text, Reasoning: ev.Delta.Reasoning}
	case ev.Summary != nil:
		sm := taskEventSummary(ev.Summary)
		out.Summary = &sm
	}
	return out
}

// taskEventSummary is a compaction's summary as events and transcripts show it.
func taskEventSummary(sm *store.Summary) gen.TaskEventSummary {
	out := gen.TaskEventSummary{FromSequence: max(sm.FromSequence, 1), ThroughSequence: sm.ThroughSequence, Text: sm.Text,
		Model: sm.Model, Usage: gen.TaskUsage{InputTokens: sm.InputTokens, OutputTokens: sm.OutputTokens}}
	if sm.LLMConfigID > 0 {
		id := sm.LLMConfigID
		out.LlmConfigId = &id
	}
	return out
}
