package mail_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/agentsvc/svc/internal/domain/mail"
)

func TestLogSenderLogsAndNeverFails(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	s := mail.NewLog(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	m := mail.PasswordResetMessage("ada@example.com", "Ada", "https://svc.example/reset?t=xyz")

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // even a cancelled context does not make the fallback fail
	if err := s.Send(ctx, m); err != nil {
		t.Fatalf("Send: %v", err)
	}

	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("decode log record %q: %v", buf.String(), err)
	}
	if rec["level"] != "WARN" {
		t.Errorf("level = %v, want WARN", rec["level"])
	}
	for key, want := range map[string]string{"to": m.To, "subject": m.Subject, "text": m.Text} {
		if rec[key] != want {
			t.Errorf("%s = %q, want %q", key, rec[key], want)
		}
	}
}

func TestLogSenderRedactedLeavesTheBodyOut(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	s := mail.NewLog(slog.New(slog.NewJSONHandler(&buf, nil)))
	m := mail.PasswordResetMessage("ada@example.com", "Ada", "https://svc.example/reset?t=xyz")
	if err := s.SendRedacted(context.Background(), m); err != nil {
		t.Fatalf("SendRedacted: %v", err)
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("decode log record %q: %v", buf.String(), err)
	}
	if rec["to"] != m.To || rec["subject"] != m.Subject || rec["text"] != nil || bytes.Contains(buf.Bytes(), []byte("t=xyz")) {
		t.Errorf("redacted record = %s", buf.Bytes())
	}
}
