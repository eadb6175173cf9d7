package agentloop_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/taskstate"
	"github.com/agentsvc/svc/store"
)

// TestTransitionsAreLogged: every status a step leaves is logged at info, with the error code
// of a failure.
func TestTransitionsAreLogged(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	f := newFixture(t, []llm.ScriptTurn{{Error: &llm.ScriptError{Code: "AUTH_ERROR", Message: "bad key"}}}, store.AgentFields{}, true)
	f.loop.Log = slog.New(slog.NewJSONHandler(&buf, nil))
	task := f.newTask("x", 10)
	f.drain()
	var found bool
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "task transition" && m["level"] == "INFO" && m["task_id"] == float64(task.ID) &&
			m["from"] == taskstate.Running && m["to"] == taskstate.Failed && m["error_code"] == "AUTH_ERROR" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no transition RUNNING → FAILED (AUTH_ERROR) logged: %s", buf.String())
	}
}
