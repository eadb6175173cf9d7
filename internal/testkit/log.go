package testkit

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
)

// Logs captures JSON log lines for a test to read back; safe for concurrent writers.
type Logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// NewLogger returns a logger writing JSON lines at info and above to a new Logs.
func NewLogger() (*slog.Logger, *Logs) {
	l := &Logs{}
	return slog.New(slog.NewJSONHandler(l, nil)), l
}

// Write appends p (one JSON line per call from slog's handler).
func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Lines returns the decoded lines whose msg is msg, in order; a line that is not JSON fails t.
func (l *Logs) Lines(t testing.TB, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	raw := bytes.Clone(l.b.Bytes())
	l.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// String is everything logged, for a failure message.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
