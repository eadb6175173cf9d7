package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/chat"
	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// The per-agent API as an MCP server (issue 29): POST /agent-api/mcp speaks the streamable
// HTTP transport of the official Go SDK, stateless (a server per request, nothing kept between
// requests, so any API process answers any request). The gate has authenticated the key,
// counted the request against its rate limit and capped the body before the SDK reads it; each
// tool calls the chat service with that key, exactly as the per-agent API's handlers do.

// mcpMaxBody is the SDK's own cap of a message; the gate's (1 MiB, x-max-body-bytes) comes first.
const mcpMaxBody = 1 << 20

// mcpRecentChats is how many chats the resource chats://recent lists.
const mcpRecentChats = 25

// newMCPHandler returns the streamable HTTP handler; each request gets a server bound to the
// key the gate put on its context.
func newMCPHandler(a *API) *mcp.StreamableHTTPHandler {
	cache := mcp.NewSchemaCache()
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		k := AgentKeyFrom(r.Context())
		if k == nil {
			return nil // never: the gate lets no request without a key through
		}
		return a.mcpServer(k, cache)
	}, &mcp.StreamableHTTPOptions{
		Stateless: true, MaxRequestBodyBytes: mcpMaxBody, Logger: a.log,
		// The DNS-rebinding screen refuses a loopback listener reached under another Host
		// name: every deployment behind a reverse proxy on the same machine. It guards
		// servers that trust their caller's network; this one needs the bearer key, which a
		// rebound page does not have.
		DisableLocalhostProtection: true,
	})
}

// ServeAgentMcp hands the request to the MCP transport.
func (a *API) ServeAgentMcp(ctx context.Context, _ gen.ServeAgentMcpRequestObject) (gen.ServeAgentMcpResponseObject, error) {
	if _, err := agentKey(ctx); err != nil {
		return nil, err
	}
	r := request(ctx)
	if r == nil {
		return nil, svcerr.New(svcerr.ErrBadRequest, "no request")
	}
	return mcpResponse{h: a.mcp, r: r.WithContext(ctx)}, nil
}

type mcpResponse struct {
	h http.Handler
	r *http.Request
}

func (m mcpResponse) VisitServeAgentMcpResponse(w http.ResponseWriter) error {
	m.h.ServeHTTP(w, m.r)
	return nil
}

// Tool inputs.
type (
	mcpWait struct {
		WaitSeconds *int `json:"wait_seconds,omitempty" jsonschema:"how long to wait for the chat to settle (completed, failed, or blocked for an approval or a question), 0 to 300 seconds; absent: 60"`
	}
	mcpStartIn struct {
		Text           string   `json:"text" jsonschema:"the prompt"`
		MediaIDs       []string `json:"media_ids,omitempty" jsonschema:"ids of media uploaded with POST /agent-api/media"`
		CallbackURL    *string  `json:"callback_url,omitempty" jsonschema:"https URL the chat is POSTed to, signed, whenever it settles"`
		MaxSteps       *int     `json:"max_steps,omitempty" jsonschema:"step budget, 1 to 100; absent: the agent's"`
		IdempotencyKey string   `json:"idempotency_key,omitempty" jsonschema:"a retry with the same key returns the chat of the first call instead of starting another"`
		mcpWait
	}
	mcpSendIn struct {
		ChatID          int64    `json:"chat_id" jsonschema:"the chat"`
		Text            string   `json:"text" jsonschema:"the follow-up message"`
		MediaIDs        []string `json:"media_ids,omitempty" jsonschema:"ids of media uploaded with POST /agent-api/media"`
		AdditionalSteps *int     `json:"additional_steps,omitempty" jsonschema:"steps added to the budget, 1 to 100; absent: the agent's"`
		IdempotencyKey  string   `json:"idempotency_key,omitempty" jsonschema:"a retry with the same key does not send the message twice"`
		mcpWait
	}
	mcpChatIn struct {
		ChatID int64 `json:"chat_id" jsonschema:"the chat"`
	}
	mcpTranscriptIn struct {
		ChatID        int64 `json:"chat_id" jsonschema:"the chat"`
		SinceSequence int64 `json:"since_sequence,omitempty" jsonschema:"only turns and tool calls after this sequence"`
	}
	mcpDecision struct {
		ProviderCallID string         `json:"provider_call_id" jsonschema:"the pending call (provider_call_id in the chat's blocked.tool_calls of get_chat)"`
		Decision       string         `json:"decision" jsonschema:"approve or reject"`
		Arguments      map[string]any `json:"arguments,omitempty" jsonschema:"approve: the arguments the tool runs with; absent: the proposed ones"`
		Reason         *string        `json:"reason,omitempty" jsonschema:"reject: what the agent is told"`
	}
	mcpApproveIn struct {
		ChatID         int64         `json:"chat_id" jsonschema:"the chat"`
		Decisions      []mcpDecision `json:"decisions,omitempty" jsonschema:"one per pending call; absent: approve every pending call as proposed"`
		IdempotencyKey string        `json:"idempotency_key,omitempty" jsonschema:"a retry with the same key does not decide twice"`
		mcpWait
	}
	mcpRejectIn struct {
		ChatID         int64  `json:"chat_id" jsonschema:"the chat"`
		Reason         string `json:"reason" jsonschema:"what the agent is told"`
		IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a retry with the same key does not reject twice"`
		mcpWait
	}
	mcpAnswerIn struct {
		ChatID         int64  `json:"chat_id" jsonschema:"the chat"`
		ToolCallID     string `json:"tool_call_id,omitempty" jsonschema:"the question batch (blocked.questions[].tool_call_id); absent: the first unanswered one"`
		Content        string `json:"content" jsonschema:"the answer"`
		IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a retry with the same key does not answer twice"`
		mcpWait
	}
)

// waitFor is a call's wait: absent 60 s, clamped to 0..300 s.
func (w mcpWait) waitFor() time.Duration {
	if w.WaitSeconds == nil {
		return DefaultSettleWait
	}
	return min(max(time.Duration(*w.WaitSeconds)*time.Second, 0), MaxSettleWait)
}

// mcpServer is the MCP server of key k: the chat tools and the chat resources.
func (a *API) mcpServer(k *store.AgentAPIKey, cache *mcp.SchemaCache) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "svc-agent", Title: "svc agent " + k.KeyID, Version: "1"}, &mcp.ServerOptions{
		SchemaCache: cache,
		Instructions: "Each tool acts on this agent's chats with the rules of its per-agent API. Tools that queue a chat wait " +
			"for it to settle (at most wait_seconds) and return the chat record: status, answer, and `blocked` when it waits " +
			"for an approval (approve_tool_calls, reject_tool_calls) or an answer (answer_question).",
	})
	mcp.AddTool(s, &mcp.Tool{Name: "start_chat", Description: "Start a chat with this agent and wait for its answer (or until it needs an approval or an answer)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in mcpStartIn) (*mcp.CallToolResult, any, error) {
			return a.mcpAct(ctx, req, k, in.mcpWait, in.IdempotencyKey, in, func() (*task.View, error) {
				ms := in.MediaIDs
				return a.chats.Start(ctx, k, chat.StartInput{Input: chat.Input{Text: &in.Text, MediaIDs: ms},
					CallbackURL: in.CallbackURL, MaxSteps: in.MaxSteps})
			})
		})
	mcp.AddTool(s, &mcp.Tool{Name: "send_message", Description: "Send a follow-up message in a chat and wait for the answer."},
		func(ctx context.Context, req *mcp.CallToolRequest, in mcpSendIn) (*mcp.CallToolResult, any, error) {
			return a.mcpAct(ctx, req, k, in.mcpWait, in.IdempotencyKey, in, func() (*task.View, error) {
				return a.chats.Send(ctx, k, strconv.FormatInt(in.ChatID, 10), chat.SendInput{
					Input: chat.Input{Text: &in.Text, MediaIDs: in.MediaIDs}, AdditionalSteps: in.AdditionalSteps})
			})
		})
	mcp.AddTool(s, &mcp.Tool{Name: "get_chat", Description: "A chat's status (answer, error, what blocks it) and its user and assistant messages.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpChatIn) (*mcp.CallToolResult, any, error) {
			id := strconv.FormatInt(in.ChatID, 10)
			v, err := a.chats.Get(ctx, k, id)
			if err != nil {
				return a.mcpError(ctx, err), nil, nil
			}
			ms, err := a.chats.Messages(ctx, k, id, 0)
			if err != nil {
				return a.mcpError(ctx, err), nil, nil
			}
			base := a.publicBase(ctx)
			msgs := make([]gen.ChatMessage, 0, len(ms))
			for _, m := range ms {
				msgs = append(msgs, gen.ChatMessage{Sequence: int64(m.Sequence), Role: gen.ChatMessageRole(m.Role), Text: m.Text,
					At: m.CreatedAt, Attachments: chatAttachments(base, m.Attachments)})
			}
			return mcpResult(map[string]any{"chat": toChat(v), "messages": msgs}), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "get_transcript", Description: "A chat's full transcript: every turn with reasoning, the tool calls with their provider_call_id, status and result, and token usage.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpTranscriptIn) (*mcp.CallToolResult, any, error) {
			since := in.SinceSequence
			tr, err := a.GetAgentChatTranscript(WithAgentKey(ctx, k), gen.GetAgentChatTranscriptRequestObject{Id: strconv.FormatInt(in.ChatID, 10),
				Params: gen.GetAgentChatTranscriptParams{SinceSequence: &since}})
			if err != nil {
				return a.mcpError(ctx, err), nil, nil
			}
			return mcpResult(tr.(gen.GetAgentChatTranscript200JSONResponse).Data), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "approve_tool_calls", Description: "Decide the tool calls a chat waits for (blocked.reason PENDING_APPROVAL) and wait for the answer."},
		func(ctx context.Context, req *mcp.CallToolRequest, in mcpApproveIn) (*mcp.CallToolResult, any, error) {
			return a.mcpAct(ctx, req, k, in.mcpWait, in.IdempotencyKey, in, func() (*task.View, error) {
				id := strconv.FormatInt(in.ChatID, 10)
				ds := make([]store.ToolDecision, 0, len(in.Decisions))
				for _, d := range in.Decisions {
					if d.Decision != "approve" && d.Decision != "reject" {
						return nil, svcerr.New(svcerr.ErrInvalid, "decision must be approve or reject")
					}
					ds = append(ds, store.ToolDecision{ProviderCallID: d.ProviderCallID, Approve: d.Decision == "approve", Arguments: d.Arguments, Reason: d.Reason})
				}
				if len(in.Decisions) == 0 {
					v, err := a.chats.Get(ctx, k, id)
					if err != nil {
						return nil, err
					}
					if v.Task.Status != taskstate.PendingApproval {
						return nil, svcerr.New(svcerr.ErrInvalidState, "the chat is %s, not waiting for an approval", v.Task.Status)
					}
					for _, c := range v.Calls {
						ds = append(ds, store.ToolDecision{ProviderCallID: c.ProviderCallID, Approve: true})
					}
				}
				return a.chats.Approve(ctx, k, id, ds)
			})
		})
	mcp.AddTool(s, &mcp.Tool{Name: "reject_tool_calls", Description: "Reject every tool call a chat waits for, telling the agent why, and wait for the answer."},
		func(ctx context.Context, req *mcp.CallToolRequest, in mcpRejectIn) (*mcp.CallToolResult, any, error) {
			return a.mcpAct(ctx, req, k, in.mcpWait, in.IdempotencyKey, in, func() (*task.View, error) {
				return a.chats.Reject(ctx, k, strconv.FormatInt(in.ChatID, 10), in.Reason)
			})
		})
	mcp.AddTool(s, &mcp.Tool{Name: "answer_question", Description: "Answer the question a chat asked (blocked.reason AWAITING_INPUT) and wait for the answer."},
		func(ctx context.Context, req *mcp.CallToolRequest, in mcpAnswerIn) (*mcp.CallToolResult, any, error) {
			return a.mcpAct(ctx, req, k, in.mcpWait, in.IdempotencyKey, in, func() (*task.View, error) {
				id := strconv.FormatInt(in.ChatID, 10)
				tc := in.ToolCallID
				if tc == "" {
					v, err := a.chats.Get(ctx, k, id)
					if err != nil {
						return nil, err
					}
					if len(v.Questions) > 0 {
						tc = v.Questions[0].ToolCallID
					}
				}
				return a.chats.Answer(ctx, k, id, tc, in.Content)
			})
		})
	s.AddResource(&mcp.Resource{URI: "chats://recent", Name: "recent-chats", MIMEType: "application/json",
		Description: fmt.Sprintf("This agent's %d most recent chats started through its per-agent API, newest first.", mcpRecentChats)},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			list, err := a.chats.List(ctx, k, chat.ListOptions{Page: 1, PerPage: mcpRecentChats})
			if err != nil {
				return nil, mcpResourceError(err)
			}
			chats := make([]gen.Chat, 0, len(list))
			for i := range list {
				chats = append(chats, toChat(&list[i]))
			}
			return mcpJSONResource(req.Params.URI, map[string]any{"chats": chats})
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "chat://{id}", Name: "chat", MIMEType: "application/json",
		Description: "One chat of this agent: its record (status, answer, what blocks it)."},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id, ok := strings.CutPrefix(req.Params.URI, "chat://")
			if !ok {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			v, err := a.chats.Get(ctx, k, id)
			if err != nil {
				return nil, mcpResourceError(err)
			}
			return mcpJSONResource(req.Params.URI, toChat(v))
		})
	return s
}

// mcpAct runs act (at most once per idempotency key), then waits for the chat to settle,
// reporting each status change and assistant message (and the model output while it streams)
// as a progress notification when the call carries a progress token; the result is the chat
// record. A refusal is a tool error with the envelope's code.
func (a *API) mcpAct(ctx context.Context, req *mcp.CallToolRequest, k *store.AgentAPIKey, w mcpWait, idem string, in any, act func() (*task.View, error)) (*mcp.CallToolResult, any, error) {
	if idem != "" {
		if err := checkIdempotencyKey("idempotency_key", idem); err != nil {
			return a.mcpError(ctx, err), nil, nil
		}
	}
	// The same request: the same tool and arguments, whatever the wait.
	var args map[string]any
	if b, err := json.Marshal(in); err == nil {
		_ = json.Unmarshal(b, &args)
	}
	delete(args, "wait_seconds")
	what, _ := json.Marshal(map[string]any{"tool": req.Params.Name, "in": args})
	v, err := a.once(ctx, k, "mcp", idem, string(what), act)
	if err != nil {
		return a.mcpError(ctx, err), nil, nil
	}
	var notify func(*store.TaskEvent)
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		n := 0.0
		notify = func(ev *store.TaskEvent) {
			msg := progressMessage(ev)
			if msg == "" {
				return
			}
			n++
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: n, Message: msg})
		}
	}
	v, err = a.followChat(ctx, k, v.Task.ID, w.waitFor(), notify)
	if err != nil {
		return a.mcpError(ctx, err), nil, nil
	}
	return mcpResult(toChat(v)), nil, nil
}

// progressMessage is what a progress notification says of ev: the status a chat entered, an
// assistant turn's text, model output while it streams; "" for the rest.
func progressMessage(ev *store.TaskEvent) string {
	switch {
	case ev.Status != nil:
		return "status: " + ev.Status.Status
	case ev.Message != nil && ev.Message.Role == store.RoleAssistant && ev.Message.Text != "":
		return ev.Message.Text
	case ev.Delta != nil && ev.Delta.Text != "":
		return ev.Delta.Text
	}
	return ""
}

// mcpResult is a tool result carrying v as structured content and as its JSON text.
func mcpResult(v any) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "INTERNAL: " + err.Error()}}}
	}
	var structured map[string]any
	_ = json.Unmarshal(b, &structured)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: structured}
}

// mcpError is the tool error of err: the envelope's code and message (an uncategorised error is
// logged and shown as INTERNAL).
func (a *API) mcpError(ctx context.Context, err error) *mcp.CallToolResult {
	code, msg, ok := publicError(err)
	if !ok {
		a.log.ErrorContext(ctx, "MCP tool call failed", "err", err)
	}
	return &mcp.CallToolResult{IsError: true,
		Content:           []mcp.Content{&mcp.TextContent{Text: string(code) + ": " + msg}},
		StructuredContent: map[string]any{"error": map[string]any{"code": code, "message": msg}}}
}

// mcpResourceError is a resource read's error: not found for ErrNotFound, else the message.
func mcpResourceError(err error) error {
	if code, msg, _ := publicError(err); code == gen.ErrorCodeNOTFOUND {
		return mcp.ResourceNotFoundError(msg)
	} else if code != gen.ErrorCodeINTERNAL {
		return fmt.Errorf("%s: %s", code, msg)
	}
	return fmt.Errorf("internal error")
}

func mcpJSONResource(uri string, v any) (*mcp.ReadResourceResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}
