package api_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentsvc/svc/api"
	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

func TestChatBody(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	said, answer := "I could not finish.", "Done."
	base := store.Task{ID: 42, AgentID: 7, CreatedAt: at, UpdatedAt: at, Data: map[string]any{}}
	with := func(status string, f func(v *task.View)) *task.View {
		v := &task.View{Task: base}
		v.Status = status
		if f != nil {
			f(v)
		}
		return v
	}
	for _, tc := range []struct {
		name string
		v    *task.View
		want string
	}{
		{"queued", with(taskstate.Queued, nil),
			`{"agent_id":7,"answer":null,"blocked":null,"created_at":"2026-01-02T03:04:05Z","error":null,"id":42,"status":"QUEUED","updated_at":"2026-01-02T03:04:05Z"}`},
		{"completed", with(taskstate.Completed, func(v *task.View) { v.Answer = &answer }),
			`{"agent_id":7,"answer":"Done.","blocked":null,"created_at":"2026-01-02T03:04:05Z","error":null,"id":42,"status":"COMPLETED","updated_at":"2026-01-02T03:04:05Z"}`},
		{"failed says the last assistant text", with(taskstate.Failed, func(v *task.View) {
			v.Error = &store.TaskError{Code: taskstate.CodeAuthError, Message: "bad key"}
			v.LastSaid = &said
		}), `{"agent_id":7,"answer":"I could not finish.","blocked":null,"created_at":"2026-01-02T03:04:05Z","error":{"code":"AUTH_ERROR","message":"bad key"},"id":42,"status":"FAILED","updated_at":"2026-01-02T03:04:05Z"}`},
		{"pending approval", with(taskstate.PendingApproval, func(v *task.View) {
			v.HasPending = true
			v.Calls = []task.PendingCall{{ToolCall: store.ToolCall{ID: 311, ProviderCallID: "c1", Name: "read_url", Operation: "fetch",
				ProposedArguments: map[string]any{"url": "https://example.org"}}, Description: "Fetch a page"}}
		}), `{"agent_id":7,"answer":null,"blocked":{"reason":"PENDING_APPROVAL","tool_calls":[{"arguments":{"url":"https://example.org"},"description":"Fetch a page","id":311,"name":"read_url","operation":"fetch"}]},"created_at":"2026-01-02T03:04:05Z","error":null,"id":42,"status":"PENDING_APPROVAL","updated_at":"2026-01-02T03:04:05Z"}`},
		{"awaiting input", with(taskstate.AwaitingInput, func(v *task.View) {
			v.HasPending = true
			v.Questions = []store.QuestionBatch{{ToolCallID: "q1", CreatedAt: at, Questions: []store.Question{{Question: "Which?", Header: "H", Options: []string{"a", "b"}}}}}
		}), `{"agent_id":7,"answer":null,"blocked":{"questions":[{"created_at":"2026-01-02T03:04:05Z","questions":[{"allowFreeText":false,"header":"H","multiple":false,"options":["a","b"],"question":"Which?"}],"tool_call_id":"q1"}],"reason":"AWAITING_INPUT"},"created_at":"2026-01-02T03:04:05Z","error":null,"id":42,"status":"AWAITING_INPUT","updated_at":"2026-01-02T03:04:05Z"}`},
	} {
		b, err := api.ChatBody(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		// Compare as values: key order is not part of the contract.
		var got, want any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
			t.Fatal(err)
		}
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if string(gb) != string(wb) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, gb, wb)
		}
	}
}
