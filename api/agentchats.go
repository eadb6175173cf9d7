package api

import (
	"context"
	"encoding/json"
	"math"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/chat"
	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// toChat is the chat record of the per-agent API for a task view: blocked is set only while
// the task is PENDING_APPROVAL or AWAITING_INPUT; a failed chat's answer is the last thing the
// agent said.
func toChat(v *task.View) gen.Chat {
	t := &v.Task
	out := gen.Chat{
		Id: t.ID, AgentId: t.AgentID, Status: gen.TaskStatus(t.Status), Answer: t.Answer,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
	}
	if t.Status == taskstate.Failed && v.LastSaid != nil {
		out.Answer = v.LastSaid
	}
	if t.Error != nil {
		out.Error = &gen.TaskError{Code: gen.TaskErrorCode(t.Error.Code), Message: t.Error.Message}
	}
	switch t.Status {
	case taskstate.PendingApproval:
		calls := make([]gen.ChatBlockedToolCall, 0, len(v.Calls))
		for _, c := range v.Calls {
			args := c.ProposedArguments
			if args == nil {
				args = map[string]any{}
			}
			calls = append(calls, gen.ChatBlockedToolCall{
				Id: c.ID, Name: c.Name, Operation: c.Operation, Description: c.Description, Arguments: args,
			})
		}
		out.Blocked = &gen.ChatBlocked{Reason: gen.ChatBlockedReasonPENDINGAPPROVAL, ToolCalls: &calls}
	case taskstate.AwaitingInput:
		qs := questionBatches(v.Questions)
		out.Blocked = &gen.ChatBlocked{Reason: gen.ChatBlockedReasonAWAITINGINPUT, Questions: &qs}
	}
	return out
}

func questionBatches(bs []store.QuestionBatch) []gen.TaskQuestionBatch {
	out := make([]gen.TaskQuestionBatch, 0, len(bs))
	for _, b := range bs {
		out = append(out, gen.TaskQuestionBatch{ToolCallId: b.ToolCallID, CreatedAt: b.CreatedAt, Questions: taskQuestions(b.Questions)})
	}
	return out
}

// taskQuestions converts the questions of a batch (options never null).
func taskQuestions(in []store.Question) []gen.TaskQuestion {
	qs := make([]gen.TaskQuestion, 0, len(in))
	for _, q := range in {
		opts := q.Options
		if opts == nil {
			opts = []string{}
		}
		qs = append(qs, gen.TaskQuestion{Question: q.Question, Header: q.Header, Options: opts, Multiple: q.Multiple, AllowFreeText: q.AllowFreeText})
	}
	return qs
}

// ChatBody is the bare JSON of the chat record of a task view: the body of a callback
// delivery, built exactly as the per-agent API endpoints show the chat.
func ChatBody(v *task.View) ([]byte, error) { return json.Marshal(toChat(v)) }

func chatResponse(v *task.View) gen.ChatResponse {
	var r gen.ChatResponse
	r.Data.Chat = toChat(v)
	return r
}

// chatInput is the message of a chat request; inline files the gate spooled are resolved from
// their placeholders.
func chatInput(ctx context.Context, text, prompt *string, files *[]gen.ChatInlineFile, ids *[]string) chat.Input {
	in := chat.Input{Text: text, Prompt: prompt, MediaIDs: mediaIDs(ids)}
	if files != nil {
		spooled := requestInfo(ctx).Inline
		for _, f := range *files {
			file := chat.File{Filename: f.Filename, DataURL: f.DataUrl}
			if sf, ok := spooled.Lookup(f.DataUrl); ok {
				file.Spooled = sf
			}
			in.Files = append(in.Files, file)
		}
	}
	return in
}

// sinceSequence turns the since_sequence parameter into the store's argument.
func sinceSequence(p *int64) int {
	if p == nil || *p < 0 {
		return 0
	}
	return int(min(*p, math.MaxInt32))
}

// ListAgentChats pages through the key's agent's chats, newest first.
func (a *API) ListAgentChats(ctx context.Context, req gen.ListAgentChatsRequestObject) (gen.ListAgentChatsResponseObject, error) {
	k, err := agentKey(ctx)
	if err != nil {
		return nil, err
	}
	page, per := pageArgs(req.Params.Page, req.Params.PerPage)
	o := chat.ListOptions{Page: page, PerPage: per}
	if req.Params.Since != nil {
		t, err := chat.ParseSince(*req.Params.Since)
		if err != nil {
			return nil, err
		}
		o.Since = &t
	}
	list, err := a.chats.List(ctx, k, o)
	if err != nil {
		return nil, err
	}
	var r gen.ListAgentChats200JSONResponse
	r.Data.Chats = make([]gen.Chat, 0, len(list))
	for i := range list {
		r.Data.Chats = append(r.Data.Chats, toChat(&list[i]))
	}
	return r, nil
}

// StartAgentChat queues a new chat of the key's agent.
func (a *API) StartAgentChat(ctx context.Context, req gen.StartAgentChatRequestObject) (gen.StartAgentChatResponseObject, error) {
	k, err := agentKey(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	v, err := a.chats.Start(ctx, k, chat.StartInput{
		Input:       chatInput(ctx, b.Text, b.Prompt, b.Files, b.MediaIds),
		CallbackURL: b.CallbackUrl, MaxSteps: b.MaxSteps, AdditionalSteps: b.AdditionalSteps,
		Limit: requestInfo(ctx).Limit,
	})
	if err != nil {
		return nil, err
	}
	return gen.StartAgentChat202JSONResponse(chatResponse(v)), nil
}

// GetAgentChatStatus shows one chat of the key's agent.
func (a *API) GetAgentChatStatus(ctx context.Context, req gen.GetAgentChatStatusRequestObject) (gen.GetAgentChatStatusResponseObject, error) {
	k, err := agentKey(ctx)
	if err != nil {
		return nil, err
	}
	v, err := a.chats.Get(ctx, k, req.Id)
	if err != nil {
		return nil, err
	}
	return gen.GetAgentChatStatus200JSONResponse(chatResponse(v)), nil
}

// chatAttachments are a message's attachments with absolute URLs, or nil.
func chatAttachments(base string, as []chat.Attachment) *[]gen.ChatAttachment {
	if len(as) == 0 {
		return nil
	}
	out := make([]gen.ChatAttachment, 0, len(as))
	for _, at := range as {
		out = append(out, gen.ChatAttachment{MediaId: at.MediaID, Kind: gen.ChatMediaKind(at.Kind), Url: base + "/api/v1/agent-api/media/" + at.MediaID})
	}
	return &out
}

// ListAgentChatMessages lists the user and assistant messages of a chat.
func (a *API) ListAgentChatMessages(ctx context.Context, req gen.ListAgentChatMessagesRequestObject) (gen.ListAgentChatMessagesResponseObject, error) {
	k, err := agentKey(ctx)
	if err != nil {
		return nil, err
	}
	ms, err := a.chats.Messages(ctx, k, req.Id, sinceSequence(req.Params.SinceSequence))
	if err != nil {
		return nil, err
	}
	base := a.publicBase(ctx)
	var r gen.ListAgentChatMessages200JSONResponse
	r.Data.Messages = make([]gen.ChatMessage, 0, len(ms))
	for _, m := range ms {
		r.Data.Messages = append(r.Data.Messages, gen.ChatMessage{
			Sequence: int64(m.Sequence), Role: gen.ChatMessageRole(m.Role), Text: m.Text, At: m.CreatedAt,
			Attachments: chatAttachments(base, m.Attachments),
		})
	}
	return r, nil
}

// SendAgentChatMessage continues a chat with a follow-up message.
func (a *API) SendAgentChatMessage(ctx context.Context, req gen.SendAgentChatMessageRequestObject) (gen.SendAgentChatMessageResponseObject, error) {
	k, err := agentKey(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	v, err := a.chats.Send(ctx, k, req.Id, chat.SendInput{
		Input: chatInput(ctx, b.Text, b.Prompt, b.Files, b.MediaIds), AdditionalSteps: b.AdditionalSteps,
	})
	if err != nil {
		return nil, err
	}
	return gen.SendAgentChatMessage202JSONResponse(chatResponse(v)), nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// GetAgentChatTranscript returns the full transcript of a chat.
func (a *API) GetAgentChatTranscript(ctx context.Context, req gen.GetAgentChatTranscriptRequestObject) (gen.GetAgentChatTranscriptResponseObject, error) {
	k, err := agentKey(ctx)
	if err != nil {
		return nil, err
	}
	tr, err := a.chats.Transcript(ctx, k, req.Id, sinceSequence(req.Params.SinceSequence))
	if err != nil {
		return nil, err
	}
	var r gen.GetAgentChatTranscript200JSONResponse
	r.Data.Chat = toChat(tr.Chat)
	r.Data.Data = orEmpty(tr.Chat.Data)
	r.Data.Usage = gen.TaskUsage{InputTokens: tr.Chat.InputTokens, OutputTokens: tr.Chat.OutputTokens}
	r.Data.Messages = make([]gen.TranscriptMessage, 0, len(tr.Messages))
	for _, m := range tr.Messages {
		r.Data.Messages = append(r.Data.Messages, transcriptMessage(&m.TaskMessage, m.Attachments))
	}
	r.Data.ToolCalls = make([]gen.TranscriptToolCall, 0, len(tr.ToolCalls))
	for i := range tr.ToolCalls {
		r.Data.ToolCalls = append(r.Data.ToolCalls, transcriptToolCall(&tr.ToolCalls[i]))
	}
	r.Data.Summaries = make([]gen.TranscriptSummary, 0, len(tr.Summaries))
	for _, ev := range tr.Summaries {
		r.Data.Summaries = append(r.Data.Summaries, gen.TranscriptSummary{EventSequence: ev.Sequence, At: ev.CreatedAt, Summary: taskEventSummary(ev.Summary)})
	}
	return r, nil
}

// transcriptMessage is one turn as transcripts and event streams show it.
func transcriptMessage(m *store.TaskMessage, atts []chat.Attachment) gen.TranscriptMessage {
	tm := gen.TranscriptMessage{
		Sequence: int64(m.Sequence), Role: gen.TranscriptMessageRole(m.Role), Text: m.Text, At: m.CreatedAt,
		Reasoning: chat.Reasoning(m.Reasoning), ProviderCallIds: make([]string, 0, len(m.ToolCalls)),
	}
	for _, c := range m.ToolCalls {
		tm.ProviderCallIds = append(tm.ProviderCallIds, c.ProviderCallID)
	}
	if m.ProviderCallID != "" {
		id := m.ProviderCallID
		tm.ProviderCallId = &id
	}
	if m.Role == store.RoleAssistant {
		tm.Usage = &gen.MessageUsage{InputTokens: m.InputTokens, OutputTokens: m.OutputTokens}
	}
	if len(atts) > 0 {
		as := make([]gen.TranscriptAttachment, 0, len(atts))
		for _, at := range atts {
			as = append(as, gen.TranscriptAttachment{MediaId: at.MediaID, Kind: gen.ChatMediaKind(at.Kind)})
		}
		tm.Attachments = &as
	}
	return tm
}

// transcriptToolCall is one tool call as transcripts and event streams show it.
func transcriptToolCall(c *store.ToolCall) gen.TranscriptToolCall {
	tc := gen.TranscriptToolCall{
		Id: c.ID, ProviderCallId: c.ProviderCallID, Name: c.Name, Operation: c.Operation,
		Status: gen.TaskToolCallStatus(c.Status), Arguments: orEmpty(c.ProposedArguments),
		Sequence: int64(c.MessageSequence), Reason: c.Reason, Result: chat.ResultText(c.Result),
		DecidedBy: chat.DecidedBy(c), DecidedAt: c.DecidedAt, CreatedAt: c.CreatedAt,
		ExecutedAt: c.ExecutedAt, Restarts: int64(c.Restarts), SentChars: chat.SentChars(c.Result),
		PolicyRule: chat.PolicyRule(c), AllowForTask: c.AllowForTask,
	}
	if c.ApprovedArguments != nil {
		args := c.ApprovedArguments
		tc.ApprovedArguments = &args
	}
	return tc
}

// ApproveAgentChat decides the pending tool calls of a chat by provider_call_id.
func (a *API) ApproveAgentChat(ctx context.Context, req gen.ApproveAgentChatRequestObject) (gen.ApproveAgentChatResponseObject, error) {
	k, err := agentKey(ctx)
	if err != nil {
		return nil, err
	}
	v, err := a.chats.Approve(ctx, k, req.Id, toolDecisions(req.Body.Decisions))
	if err != nil {
		return nil, err
	}
	return gen.ApproveAgentChat202JSONResponse(chatResponse(v)), nil
}

// RejectAgentChat rejects the pending batch of a chat.
func (a *API) RejectAgentChat(ctx context.Context, req gen.RejectAgentChatRequestObject) (gen.RejectAgentChatResponseObject, error) {
	k, err := agentKey(ctx)
	if err != nil {
		return nil, err
	}
	v, err := a.chats.Reject(ctx, k, req.Id, req.Body.Reason)
	if err != nil {
		return nil, err
	}
	return gen.RejectAgentChat202JSONResponse(chatResponse(v)), nil
}

// AnswerAgentChat answers a question batch of a chat with free text.
func (a *API) AnswerAgentChat(ctx context.Context, req gen.AnswerAgentChatRequestObject) (gen.AnswerAgentChatResponseObject, error) {
	k, err := agentKey(ctx)
	if err != nil {
		return nil, err
	}
	v, err := a.chats.Answer(ctx, k, req.Id, req.Body.ToolCallId, req.Body.Content)
	if err != nil {
		return nil, err
	}
	return gen.AnswerAgentChat202JSONResponse(chatResponse(v)), nil
}
