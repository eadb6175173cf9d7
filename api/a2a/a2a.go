// Package a2a is the Agent2Agent protocol's side of the per-agent API (A2A 0.3 over JSON-RPC
// 2.0): the wire types, the JSON-RPC request parser (size- and shape-checked, fuzzed), the
// error codes, and the mapping of a chat (a task.View) onto an A2A Task. It holds no rule of
// its own: the handlers in package api call the chat service, whose refusals are the per-agent
// API's, and render them with this package.
package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// ProtocolVersion is the A2A specification version served.
const ProtocolVersion = "0.3.0"

// Methods served.
const (
	MethodSend          = "message/send"
	MethodStream        = "message/stream"
	MethodGet           = "tasks/get"
	MethodCancel        = "tasks/cancel"
	MethodResubscribe   = "tasks/resubscribe"
	MethodPushConfigSet = "tasks/pushNotificationConfig/set"
	MethodPushConfigGet = "tasks/pushNotificationConfig/get"
)

// JSON-RPC and A2A error codes.
const (
	CodeParseError             = -32700
	CodeInvalidRequest         = -32600
	CodeMethodNotFound         = -32601
	CodeInvalidParams          = -32602
	CodeInternal               = -32603
	CodeTaskNotFound           = -32001
	CodeTaskNotCancelable      = -32002
	CodePushNotSupported       = -32003
	CodeUnsupportedOperation   = -32004
	CodeContentTypeUnsupported = -32005
)

// MaxIDLength bounds a request id or a message id (an id longer than this is refused).
const MaxIDLength = 255

// Request is one JSON-RPC request as read by ParseRequest.
type Request struct {
	ID     json.RawMessage // a JSON string or number, as sent
	Method string
	Params json.RawMessage // an object, or nil when absent
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// Errorf returns a JSON-RPC error with code.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Response is a JSON-RPC response: exactly one of Result and Error.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// NullID is the id of a response to a request whose id could not be read.
var NullID = json.RawMessage("null")

// Reply is the response with result to the request of id.
func Reply(id json.RawMessage, result any) Response {
	return Response{JSONRPC: "2.0", ID: orNull(id), Result: result}
}

// Fail is the error response to the request of id.
func Fail(id json.RawMessage, err *Error) Response {
	return Response{JSONRPC: "2.0", ID: orNull(id), Error: err}
}

func orNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return NullID
	}
	return id
}

// ParseRequest reads one JSON-RPC 2.0 request. The id it returns is usable in the error
// response whenever the body was an object with a readable id. Errors (*Error): CodeParseError
// (not JSON), CodeInvalidRequest (a batch, not an object, jsonrpc not "2.0", a missing or
// malformed id or method, params that are not an object).
func ParseRequest(body []byte) (*Request, *Error) {
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) {
		return nil, Errorf(CodeParseError, "the body is not valid JSON")
	}
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return nil, Errorf(CodeInvalidRequest, "batch requests are not supported: send one request per HTTP request")
	}
	var raw struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, Errorf(CodeInvalidRequest, "the request must be a JSON-RPC 2.0 request object")
	}
	req := &Request{}
	if id, ok := validID(raw.ID); ok {
		req.ID = id
	} else {
		return nil, Errorf(CodeInvalidRequest, "the request needs an id: a string or an integer (at most %d characters)", MaxIDLength)
	}
	if raw.JSONRPC == nil || *raw.JSONRPC != "2.0" {
		return req, Errorf(CodeInvalidRequest, `"jsonrpc" must be "2.0"`)
	}
	if raw.Method == nil || *raw.Method == "" || len(*raw.Method) > 100 {
		return req, Errorf(CodeInvalidRequest, `"method" must be a non-empty string`)
	}
	req.Method = *raw.Method
	if p := bytes.TrimSpace(raw.Params); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		if p[0] != '{' {
			return req, Errorf(CodeInvalidRequest, `"params" must be an object`)
		}
		req.Params = p
	}
	return req, nil
}

// validID returns the id compacted when it is a JSON string or integer of bounded length.
func validID(id json.RawMessage) (json.RawMessage, bool) {
	id = bytes.TrimSpace(id)
	if len(id) == 0 || len(id) > MaxIDLength+2 {
		return nil, false
	}
	switch id[0] {
	case '"':
		var s string
		if json.Unmarshal(id, &s) != nil {
			return nil, false
		}
		out, _ := json.Marshal(s)
		return out, true
	default:
		if _, err := strconv.ParseInt(string(id), 10, 64); err != nil {
			return nil, false
		}
		return id, true
	}
}

// DecodeParams decodes p into v, refusing unknown shapes with CodeInvalidParams.
func DecodeParams(p json.RawMessage, v any) *Error {
	if len(p) == 0 {
		return Errorf(CodeInvalidParams, "params are required")
	}
	if err := json.Unmarshal(p, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Errorf(CodeInvalidParams, "params.%s: expected %s", te.Field, te.Type)
		}
		return Errorf(CodeInvalidParams, "params: %v", err)
	}
	return nil
}

// Part is one part of a message: text, file or data (kind).
type Part struct {
	Kind     string         `json:"kind"`
	Text     string         `json:"text,omitempty"`
	File     map[string]any `json:"file,omitempty"`
	Data     map[string]any `json:"data,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Message is an A2A message.
type Message struct {
	Kind      string         `json:"kind"`
	MessageID string         `json:"messageId"`
	Role      string         `json:"role"`
	Parts     []Part         `json:"parts"`
	TaskID    string         `json:"taskId,omitempty"`
	ContextID string         `json:"contextId,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// PushConfig is a push notification configuration.
type PushConfig struct {
	ID             string         `json:"id,omitempty"`
	URL            string         `json:"url"`
	Token          string         `json:"token,omitempty"`
	Authentication map[string]any `json:"authentication,omitempty"`
}

// SendParams are the params of message/send and message/stream.
type SendParams struct {
	Message       *Message `json:"message"`
	Configuration *struct {
		AcceptedOutputModes    []string    `json:"acceptedOutputModes,omitempty"`
		HistoryLength          *int        `json:"historyLength,omitempty"`
		PushNotificationConfig *PushConfig `json:"pushNotificationConfig,omitempty"`
		Blocking               *bool       `json:"blocking,omitempty"`
	} `json:"configuration,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// TaskIDParams are the params of tasks/get, tasks/cancel, tasks/resubscribe and
// tasks/pushNotificationConfig/get.
type TaskIDParams struct {
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength,omitempty"`
}

// TaskPushConfig is the params of tasks/pushNotificationConfig/set and its result.
type TaskPushConfig struct {
	TaskID                 string      `json:"taskId"`
	PushNotificationConfig *PushConfig `json:"pushNotificationConfig"`
}

// Text returns the text of a message's text parts, joined by blank lines, and whether it holds
// a part of another kind than text and data (a file: not supported).
func (m *Message) Text() (text string, file bool) {
	var b bytes.Buffer
	for _, p := range m.Parts {
		switch p.Kind {
		case "text":
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(p.Text)
		case "data":
		default:
			file = true
		}
	}
	return b.String(), file
}

// DataPart returns the data of the message's first data part, or nil.
func (m *Message) DataPart() map[string]any {
	for _, p := range m.Parts {
		if p.Kind == "data" && p.Data != nil {
			return p.Data
		}
	}
	return nil
}

// TaskState is an A2A task state.
type TaskState string

// Task states of A2A that chats take.
const (
	StateSubmitted     TaskState = "submitted"
	StateWorking       TaskState = "working"
	StateInputRequired TaskState = "input-required"
	StateCompleted     TaskState = "completed"
	StateFailed        TaskState = "failed"
	StateCanceled      TaskState = "canceled"
)

// StateOf maps a chat's status onto A2A: QUEUED submitted; RUNNING, AWAITING_SUB_AGENTS (and
// FAILED with an automatic retry to come) working; PENDING_APPROVAL, AWAITING_INPUT
// input-required; COMPLETED completed; FAILED failed; CANCELLED and ABORTED canceled.
func StateOf(status string, retrying bool) TaskState {
	switch status {
	case taskstate.Queued:
		return StateSubmitted
	case taskstate.PendingApproval, taskstate.AwaitingInput:
		return StateInputRequired
	case taskstate.Completed:
		return StateCompleted
	case taskstate.Failed:
		if retrying {
			return StateWorking
		}
		return StateFailed
	case taskstate.Cancelled, taskstate.Aborted:
		return StateCanceled
	default:
		return StateWorking
	}
}

// Final reports whether a chat in state waits for nobody but its caller: a stream ends there.
func (s TaskState) Final() bool {
	return s == StateInputRequired || s == StateCompleted || s == StateFailed || s == StateCanceled
}

// Status is an A2A task status.
type Status struct {
	State     TaskState `json:"state"`
	Message   *Message  `json:"message,omitempty"`
	Timestamp string    `json:"timestamp,omitempty"`
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID string `json:"artifactId"`
	Name       string `json:"name,omitempty"`
	Parts      []Part `json:"parts"`
}

// Task is an A2A task: a chat.
type Task struct {
	Kind      string         `json:"kind"`
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    Status         `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// StatusUpdate is a status-update event of a stream.
type StatusUpdate struct {
	Kind      string `json:"kind"`
	TaskID    string `json:"taskId"`
	ContextID string `json:"contextId"`
	Status    Status `json:"status"`
	Final     bool   `json:"final"`
}

// Turn is one user or assistant message of a chat, for the history.
type Turn struct {
	Sequence int
	Role     string // "user" or "assistant"
	Text     string
}

// TaskID is the A2A id of chat id.
func TaskID(id int64) string { return strconv.FormatInt(id, 10) }

// TaskOf is the A2A task of chat v: its state, a status message naming what blocks it (the
// questions, or the pending tool calls with their provider_call_id) or, for a failed chat, the
// error; the answer as the artifact "answer"; history the chat's turns (the last historyLength
// of them when it is not nil).
func TaskOf(v *task.View, history []Turn, historyLength *int) Task {
	id := TaskID(v.Task.ID)
	t := Task{Kind: "task", ID: id, ContextID: id, Status: StatusOf(v),
		Metadata: map[string]any{"svc_status": v.Task.Status}}
	if v.Task.Answer != nil && v.Task.Status == taskstate.Completed {
		t.Artifacts = []Artifact{{ArtifactID: "answer", Name: "answer", Parts: []Part{{Kind: "text", Text: *v.Task.Answer}}}}
	}
	if historyLength != nil && *historyLength >= 0 && len(history) > *historyLength {
		history = history[len(history)-*historyLength:]
	}
	for _, h := range history {
		role := "agent"
		if h.Role == "user" {
			role = "user"
		}
		t.History = append(t.History, Message{Kind: "message", MessageID: id + "-" + strconv.Itoa(h.Sequence), Role: role,
			Parts: []Part{{Kind: "text", Text: h.Text}}, TaskID: id, ContextID: id})
	}
	return t
}

// StatusOf is the A2A status of chat v.
func StatusOf(v *task.View) Status {
	t := &v.Task
	id := TaskID(t.ID)
	st := Status{State: StateOf(t.Status, t.NextRetryAt != nil), Timestamp: t.UpdatedAt.UTC().Format(time.RFC3339Nano)}
	agent := func(text string, data map[string]any) *Message {
		m := &Message{Kind: "message", MessageID: id + "-status-" + strconv.FormatInt(t.UpdatedAt.UnixMilli(), 10), Role: "agent",
			TaskID: id, ContextID: id}
		if text != "" {
			m.Parts = append(m.Parts, Part{Kind: "text", Text: text})
		}
		if data != nil {
			m.Parts = append(m.Parts, Part{Kind: "data", Data: data})
		}
		return m
	}
	switch t.Status {
	case taskstate.PendingApproval:
		calls := make([]any, 0, len(v.Calls))
		text := "Waiting for approval of:"
		for _, c := range v.Calls {
			args := c.ProposedArguments
			if args == nil {
				args = map[string]any{}
			}
			calls = append(calls, map[string]any{"provider_call_id": c.ProviderCallID, "name": c.Name,
				"operation": c.Operation, "description": c.Description, "arguments": args})
			text += fmt.Sprintf("\n- %s.%s (%s)", c.Name, c.Operation, c.ProviderCallID)
		}
		text += "\nReply with a data part {\"decision\": \"approve\"} or {\"decision\": \"reject\", \"reason\": \"…\"}."
		st.Message = agent(text, map[string]any{"reason": "PENDING_APPROVAL", "tool_calls": calls})
	case taskstate.AwaitingInput:
		batches := make([]any, 0, len(v.Questions))
		text := ""
		for _, b := range v.Questions {
			qs := make([]any, 0, len(b.Questions))
			for _, q := range b.Questions {
				opts := q.Options
				if opts == nil {
					opts = []string{}
				}
				qs = append(qs, map[string]any{"question": q.Question, "header": q.Header, "options": opts,
					"multiple": q.Multiple, "allowFreeText": q.AllowFreeText})
				if text != "" {
					text += "\n"
				}
				text += q.Question
			}
			batches = append(batches, map[string]any{"tool_call_id": b.ToolCallID, "questions": qs})
		}
		st.Message = agent(text, map[string]any{"reason": "AWAITING_INPUT", "questions": batches})
	case taskstate.Failed:
		if t.Error != nil {
			st.Message = agent(t.Error.Message, map[string]any{"code": t.Error.Code})
		}
	case taskstate.Completed:
		if t.Answer != nil {
			st.Message = agent(*t.Answer, nil)
		}
	}
	return st
}
