package a2a

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// FuzzParseRequest: whatever the body, the parser answers a request or a JSON-RPC error of the
// parse/invalid-request kind, never panics; a request has a method and an id that is a JSON
// string or integer, and params that are an object when present; an id it hands back with an
// error is valid JSON.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tasks/get","params":{"id":"1"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"x"}]`, `{"jsonrpc":"2.0","id":null,"method":"x"}`, `{"id":1e400}`, `"x"`, `{`, ``,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":null}`, `{"jsonrpc":"2.0","id":1,"method":"x","params":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseRequest(body)
		if err != nil {
			if err.Code != CodeParseError && err.Code != CodeInvalidRequest {
				t.Fatalf("code %d", err.Code)
			}
			if req != nil && !json.Valid(req.ID) {
				t.Fatalf("invalid id %q", req.ID)
			}
			return
		}
		if req.Method == "" || !json.Valid(req.ID) || (req.ID[0] != '"' && (req.ID[0] < '0' || req.ID[0] > '9') && req.ID[0] != '-') {
			t.Fatalf("request %+v", req)
		}
		if req.Params != nil && (!json.Valid(req.Params) || req.Params[0] != '{') {
			t.Fatalf("params %q", req.Params)
		}
		// A response to it is one JSON document.
		b, mErr := json.Marshal(Reply(req.ID, map[string]any{}))
		if mErr != nil || !json.Valid(b) || !bytes.Contains(b, req.ID) {
			t.Fatalf("reply %s %v", b, mErr)
		}
	})
}

func TestParseRequest(t *testing.T) {
	for body, code := range map[string]int{
		`nope`: CodeParseError, `[]`: CodeInvalidRequest, `{"jsonrpc":"2.0","method":"m"}`: CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":1.5,"method":"m"}`: CodeInvalidRequest, `{"jsonrpc":"2.0","id":1,"method":""}`: CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}`: CodeInvalidRequest, `{"jsonrpc":"2.0","id":1,"method":"m"}`: 0,
	} {
		_, err := ParseRequest([]byte(body))
		if (err == nil) != (code == 0) || err != nil && err.Code != code {
			t.Errorf("%s: %v, want %d", body, err, code)
		}
	}
}

func TestStateOf(t *testing.T) {
	for _, tt := range []struct {
		status   string
		retrying bool
		want     TaskState
	}{
		{taskstate.Queued, false, StateSubmitted}, {taskstate.Running, false, StateWorking},
		{taskstate.AwaitingSubAgents, false, StateWorking}, {taskstate.PendingApproval, false, StateInputRequired},
		{taskstate.AwaitingInput, false, StateInputRequired}, {taskstate.Completed, false, StateCompleted},
		{taskstate.Failed, false, StateFailed}, {taskstate.Failed, true, StateWorking},
		{taskstate.Cancelled, false, StateCanceled}, {taskstate.Aborted, false, StateCanceled},
	} {
		if got := StateOf(tt.status, tt.retrying); got != tt.want {
			t.Errorf("%s retrying=%v: %s, want %s", tt.status, tt.retrying, got, tt.want)
		}
	}
}
