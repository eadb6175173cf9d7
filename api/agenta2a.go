package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/agentsvc/svc/api/a2a"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/chat"
	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// The per-agent API as an A2A server (issue 29): the agent card of the key's agent and the
// JSON-RPC endpoint. An A2A task is a chat; every method calls the chat service with the key
// the gate authenticated, so the per-agent API's rules and refusals hold (api/a2a maps them).

// a2aStreamWait bounds a message/stream or tasks/resubscribe stream: a chat still running then
// ends the stream without a final event (tasks/resubscribe follows it again).
const a2aStreamWait = time.Hour

// GetAgentCard answers the A2A agent card of the key's agent: its name and description, one
// skill for chatting with it and one per enabled tool (as the agent itself sees them), the
// bearer scheme of the per-agent API.
func (a *API) GetAgentCard(ctx context.Context, _ gen.GetAgentCardRequestObject) (gen.GetAgentCardResponseObject, error) {
	k, err := agentKey(ctx)
	if err != nil {
		return nil, err
	}
	ag, err := a.tcfg.ManagedAgent(ctx, k.AgentID, 0)
	if err != nil {
		return nil, err
	}
	d, err := a.tcfg.AgentDiscovery(ctx, k.AgentID, 0)
	if err != nil {
		return nil, err
	}
	desc := ag.Description
	if desc == "" {
		desc = "Chat with " + ag.Name + "."
	}
	card := gen.GetAgentCard200JSONResponse{
		ProtocolVersion: a2a.ProtocolVersion, Name: ag.Name, Description: desc,
		Url: a.publicBase(ctx) + "/api/v1/agent-api/a2a", PreferredTransport: gen.JSONRPC,
		Version:            ag.UpdatedAt.UTC().Format(time.RFC3339),
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
	}
	card.Capabilities.Streaming = true
	card.Capabilities.PushNotifications = true
	skills := []a2aSkill{{Id: "chat", Name: ag.Name, Description: desc, Tags: []string{"chat"}}}
	for _, t := range d.Tools {
		if !t.Enabled {
			continue
		}
		var ops []string
		for _, op := range t.Operations {
			if op.Enabled {
				ops = append(ops, op.Name)
			}
		}
		if len(ops) == 0 {
			continue
		}
		skills = append(skills, a2aSkill{Id: t.ToolClass, Name: t.DisplayName, Description: t.Description, Tags: append([]string{"tool"}, ops...)})
	}
	card.Skills = skills
	schemes := map[string]map[string]any{"agentKey": {"type": "http", "scheme": "bearer", "bearerFormat": "svk_<id>_<secret>",
		"description": "The agent's per-agent API key."}}
	card.SecuritySchemes = &schemes
	security := []map[string][]string{{"agentKey": {}}}
	card.Security = &security
	return card, nil
}

// a2aSkill is a skill of the agent card (the contract's inline type).
type a2aSkill = struct {
	Description string    `json:"description"`
	Examples    *[]string `json:"examples,omitempty"`
	Id          string    `json:"id"`
	Name        string    `json:"name"`
	Tags        []string  `json:"tags"`
}

// ServeAgentA2a reads one JSON-RPC request and answers it: a JSON response, or for
// message/stream and tasks/resubscribe an event stream of them. Errors (as the envelope, before
// any JSON-RPC is read): ErrUnsupportedMediaType (not JSON), the body's read errors (413, 400).
func (a *API) ServeAgentA2a(ctx context.Context, _ gen.ServeAgentA2aRequestObject) (gen.ServeAgentA2aResponseObject, error) {
	k, err := agentKey(ctx)
	if err != nil {
		return nil, err
	}
	r := request(ctx)
	if r == nil {
		return nil, svcerr.New(svcerr.ErrBadRequest, "no request")
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return nil, svcerr.New(svcerr.ErrUnsupportedMediaType, "Content-Type %q is not accepted here; send application/json", r.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	req, perr := a2a.ParseRequest(body)
	if perr != nil {
		var id json.RawMessage
		if req != nil {
			id = req.ID
		}
		return a2aJSON(a2a.Fail(id, perr)), nil
	}
	h := a2aCall{api: a, k: k, req: req}
	switch req.Method {
	case a2a.MethodSend:
		return h.send(ctx, false)
	case a2a.MethodStream:
		return h.send(ctx, true)
	case a2a.MethodGet:
		return h.get(ctx)
	case a2a.MethodCancel:
		return h.cancel(ctx)
	case a2a.MethodResubscribe:
		return h.resubscribe(ctx)
	case a2a.MethodPushConfigSet:
		return h.pushSet(ctx)
	case a2a.MethodPushConfigGet:
		return h.pushGet(ctx)
	}
	return h.fail(a2a.Errorf(a2a.CodeMethodNotFound, "method %q is not served (A2A %s over JSON-RPC)", req.Method, a2a.ProtocolVersion))
}

// a2aCall is one JSON-RPC call of key k.
type a2aCall struct {
	api *API
	k   *store.AgentAPIKey
	req *a2a.Request
}

func (h a2aCall) reply(result any) (gen.ServeAgentA2aResponseObject, error) {
	return a2aJSON(a2a.Reply(h.req.ID, result)), nil
}

func (h a2aCall) fail(e *a2a.Error) (gen.ServeAgentA2aResponseObject, error) {
	return a2aJSON(a2a.Fail(h.req.ID, e)), nil
}

// failErr renders a refusal of the chat rules: no such chat -32001, a refused value or a chat
// in the wrong state -32602, anything else -32603; error.data.code keeps the envelope's code.
func (h a2aCall) failErr(ctx context.Context, err error) (gen.ServeAgentA2aResponseObject, error) {
	code, msg, ok := publicError(err)
	if !ok {
		h.api.log.ErrorContext(ctx, "A2A call failed", "method", h.req.Method, "err", err)
	}
	rpc := a2a.CodeInternal
	switch code {
	case gen.ErrorCodeNOTFOUND:
		rpc = a2a.CodeTaskNotFound
	case gen.ErrorCodeVALIDATIONERROR, gen.ErrorCodeINVALIDSTATE, gen.ErrorCodeBADREQUEST:
		rpc = a2a.CodeInvalidParams
	}
	return h.fail(&a2a.Error{Code: rpc, Message: msg, Data: map[string]any{"code": string(code)}})
}

// namedTask decodes the call's TaskIDParams and reads the key's chat they name. A non-nil
// refused is the JSON-RPC error to answer instead: invalid params, or the chat rules' refusal
// (failErr).
func (h a2aCall) namedTask(ctx context.Context) (p a2a.TaskIDParams, v *task.View, refused gen.ServeAgentA2aResponseObject) {
	if e := a2a.DecodeParams(h.req.Params, &p); e != nil {
		refused, _ = h.fail(e)
		return p, nil, refused
	}
	v, err := h.api.chats.Get(ctx, h.k, p.ID)
	if err != nil {
		refused, _ = h.failErr(ctx, err)
		return p, nil, refused
	}
	return p, v, nil
}

// task is the A2A task of chat v with its history.
func (h a2aCall) task(ctx context.Context, v *task.View, historyLength *int) (*a2a.Task, error) {
	ms, err := h.api.chats.Messages(ctx, h.k, a2a.TaskID(v.Task.ID), 0)
	if err != nil {
		return nil, err
	}
	turns := make([]a2a.Turn, 0, len(ms))
	for _, m := range ms {
		turns = append(turns, a2a.Turn{Sequence: m.Sequence, Role: m.Role, Text: m.Text})
	}
	t := a2a.TaskOf(v, turns, historyLength)
	return &t, nil
}

// send starts a chat (a message without taskId) or moves one (with taskId): a follow-up, the
// answer of its question, or the decision of its pending tool calls; then answers the task once
// settled (message/send, at most DefaultSettleWait; not at all with blocking false) or streams
// it (message/stream). The messageId is the action's idempotency key.
func (h a2aCall) send(ctx context.Context, stream bool) (gen.ServeAgentA2aResponseObject, error) {
	var p a2a.SendParams
	if e := a2a.DecodeParams(h.req.Params, &p); e != nil {
		return h.fail(e)
	}
	m := p.Message
	if m == nil || m.Role != "user" || len(m.Parts) == 0 {
		return h.fail(a2a.Errorf(a2a.CodeInvalidParams, "params.message must be a user message with at least one part"))
	}
	if err := checkIdempotencyKey("params.message.messageId", m.MessageID); err != nil {
		return h.failErr(ctx, err)
	}
	text, file := m.Text()
	if file {
		return h.fail(a2a.Errorf(a2a.CodeContentTypeUnsupported, "only text and data parts are accepted; upload files with POST /agent-api/media and name them in the text"))
	}
	var callback *string
	if c := p.Configuration; c != nil && c.PushNotificationConfig != nil {
		pc := c.PushNotificationConfig
		if pc.Token != "" || pc.Authentication != nil {
			return h.fail(a2a.Errorf(a2a.CodePushNotSupported, "push notifications are the chat's signed callbacks (X-Svc-Signature, keyed by the API key): a token or authentication cannot be set"))
		}
		if m.TaskID != "" {
			return h.fail(a2a.Errorf(a2a.CodePushNotSupported, "a task's push notification URL is set when it starts"))
		}
		callback = &pc.URL
	}
	wait := DefaultSettleWait
	if c := p.Configuration; c != nil && c.Blocking != nil && !*c.Blocking {
		wait = 0
	}
	var hist *int
	if c := p.Configuration; c != nil {
		hist = c.HistoryLength
	}
	what, _ := json.Marshal(map[string]any{"task": m.TaskID, "parts": m.Parts, "callback": callback})
	v, err := h.api.once(ctx, h.k, "a2a", m.MessageID, string(what), func() (*task.View, error) {
		if m.TaskID == "" {
			return h.api.chats.Start(ctx, h.k, chat.StartInput{Input: chat.Input{Text: &text}, CallbackURL: callback})
		}
		return h.move(ctx, m, text)
	})
	if err != nil {
		return h.failErr(ctx, err)
	}
	if stream {
		return &a2aStream{call: h, ctx: ctx, first: v}, nil
	}
	if v, err = h.api.followChat(ctx, h.k, v.Task.ID, wait, nil); err != nil {
		return h.failErr(ctx, err)
	}
	t, err := h.task(ctx, v, hist)
	if err != nil {
		return h.failErr(ctx, err)
	}
	return h.reply(t)
}

// move continues chat m.TaskID with message m: while it waits for an approval, the message's
// data part decides every pending call ({"decision": "approve" | "reject", "reason",
// "arguments": {provider_call_id: arguments}}); while it waits for an answer, the text answers
// its first unanswered question batch; otherwise the text is a follow-up.
func (h a2aCall) move(ctx context.Context, m *a2a.Message, text string) (*task.View, error) {
	v, err := h.api.chats.Get(ctx, h.k, m.TaskID)
	if err != nil {
		return nil, err
	}
	switch v.Task.Status {
	case taskstate.PendingApproval:
		d := m.DataPart()
		decision, _ := d["decision"].(string)
		reason, _ := d["reason"].(string)
		switch decision {
		case "approve":
			args, _ := d["arguments"].(map[string]any)
			ds := make([]store.ToolDecision, 0, len(v.Calls))
			for _, c := range v.Calls {
				td := store.ToolDecision{ProviderCallID: c.ProviderCallID, Approve: true}
				if a, ok := args[c.ProviderCallID].(map[string]any); ok {
					td.Arguments = a
				}
				ds = append(ds, td)
			}
			return h.api.chats.Approve(ctx, h.k, m.TaskID, ds)
		case "reject":
			if reason == "" {
				reason = text
			}
			return h.api.chats.Reject(ctx, h.k, m.TaskID, reason)
		}
		return nil, svcerr.New(svcerr.ErrInvalid, `the task waits for an approval: send a data part {"decision": "approve"} or {"decision": "reject", "reason": "…"}`)
	case taskstate.AwaitingInput:
		tc := ""
		if len(v.Questions) > 0 {
			tc = v.Questions[0].ToolCallID
		}
		return h.api.chats.Answer(ctx, h.k, m.TaskID, tc, text)
	}
	return h.api.chats.Send(ctx, h.k, m.TaskID, chat.SendInput{Input: chat.Input{Text: &text}})
}

func (h a2aCall) get(ctx context.Context) (gen.ServeAgentA2aResponseObject, error) {
	p, v, refused := h.namedTask(ctx)
	if refused != nil {
		return refused, nil
	}
	t, err := h.task(ctx, v, p.HistoryLength)
	if err != nil {
		return h.failErr(ctx, err)
	}
	return h.reply(t)
}

// cancel is refused for every task of the key: the per-agent API cancels nothing.
func (h a2aCall) cancel(ctx context.Context) (gen.ServeAgentA2aResponseObject, error) {
	if _, _, refused := h.namedTask(ctx); refused != nil {
		return refused, nil
	}
	return h.fail(a2a.Errorf(a2a.CodeTaskNotCancelable, "the per-agent API cannot cancel a chat; its owner can, in the console"))
}

func (h a2aCall) resubscribe(ctx context.Context) (gen.ServeAgentA2aResponseObject, error) {
	_, v, refused := h.namedTask(ctx)
	if refused != nil {
		return refused, nil
	}
	return &a2aStream{call: h, ctx: ctx, first: v}, nil
}

// pushConfig is the push notification configuration of chat v: its callback, or nil.
func pushConfig(v *task.View) *a2a.TaskPushConfig {
	if v.Task.CallbackURL == nil {
		return nil
	}
	return &a2a.TaskPushConfig{TaskID: a2a.TaskID(v.Task.ID), PushNotificationConfig: &a2a.PushConfig{ID: "callback", URL: *v.Task.CallbackURL}}
}

// pushSet accepts the configuration the chat has (its callback_url); any other is refused: a
// chat's callback is set when it starts (message/send's configuration.pushNotificationConfig).
func (h a2aCall) pushSet(ctx context.Context) (gen.ServeAgentA2aResponseObject, error) {
	var p a2a.TaskPushConfig
	if e := a2a.DecodeParams(h.req.Params, &p); e != nil {
		return h.fail(e)
	}
	if p.PushNotificationConfig == nil {
		return h.fail(a2a.Errorf(a2a.CodeInvalidParams, "params.pushNotificationConfig is required"))
	}
	v, err := h.api.chats.Get(ctx, h.k, p.TaskID)
	if err != nil {
		return h.failErr(ctx, err)
	}
	if cur := pushConfig(v); cur != nil && cur.PushNotificationConfig.URL == p.PushNotificationConfig.URL &&
		p.PushNotificationConfig.Token == "" && p.PushNotificationConfig.Authentication == nil {
		return h.reply(cur)
	}
	return h.fail(a2a.Errorf(a2a.CodePushNotSupported, "a task's push notification URL is its signed callback, set when it starts "+
		"(message/send with configuration.pushNotificationConfig.url, no token); it cannot be changed"))
}

func (h a2aCall) pushGet(ctx context.Context) (gen.ServeAgentA2aResponseObject, error) {
	_, v, refused := h.namedTask(ctx)
	if refused != nil {
		return refused, nil
	}
	if cur := pushConfig(v); cur != nil {
		return h.reply(cur)
	}
	return h.fail(a2a.Errorf(a2a.CodeInvalidParams, "the task has no push notification configuration"))
}

// a2aJSON is a JSON-RPC response (HTTP 200, errors included, as JSON-RPC over HTTP has it).
type a2aJSON a2a.Response

func (r a2aJSON) VisitServeAgentA2aResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return json.NewEncoder(w).Encode(a2a.Response(r))
}

// a2aStream is the event stream of message/stream and tasks/resubscribe: the task first, a
// status-update per status the chat enters, and the final status-update (final true) once it
// settles, each a JSON-RPC response on a `data:` line.
type a2aStream struct {
	call  a2aCall
	ctx   context.Context
	first *task.View
}

func (s *a2aStream) VisitServeAgentA2aResponse(w http.ResponseWriter) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(r a2a.Response) error {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		_ = rc.Flush()
		return nil
	}
	send := func(result any) error { return write(a2a.Reply(s.call.req.ID, result)) }
	ctx, k := s.ctx, s.call.k
	t, err := s.call.task(ctx, s.first, nil)
	if err != nil {
		s.call.api.log.ErrorContext(ctx, "A2A stream", "err", err)
		return write(a2a.Fail(s.call.req.ID, a2a.Errorf(a2a.CodeInternal, "internal error")))
	}
	if err := send(t); err != nil {
		return nil // the client went away
	}
	id := a2a.TaskID(s.first.Task.ID)
	var werr error
	v, err := s.call.api.followChat(ctx, k, s.first.Task.ID, a2aStreamWait, func(ev *store.TaskEvent) {
		if werr != nil || ev.Status == nil || settledEvent(ev) {
			return
		}
		werr = send(a2a.StatusUpdate{Kind: "status-update", TaskID: id, ContextID: id,
			Status: a2a.Status{State: a2a.StateOf(ev.Status.Status, ev.Status.Retrying), Timestamp: ev.CreatedAt.UTC().Format(time.RFC3339Nano)}})
	})
	if err != nil || werr != nil || ctx.Err() != nil {
		if err != nil && !errors.Is(err, context.Canceled) {
			s.call.api.log.WarnContext(ctx, "A2A stream ended early", "task_id", id, "err", err)
		}
		return nil
	}
	st := a2a.StatusOf(v)
	if st.State == a2a.StateCompleted && v.Task.Answer != nil {
		_ = send(map[string]any{"kind": "artifact-update", "taskId": id, "contextId": id, "lastChunk": true,
			"artifact": a2a.Artifact{ArtifactID: "answer", Name: "answer", Parts: []a2a.Part{{Kind: "text", Text: *v.Task.Answer}}}})
	}
	_ = send(a2a.StatusUpdate{Kind: "status-update", TaskID: id, ContextID: id, Status: st, Final: st.State.Final()})
	return nil
}
