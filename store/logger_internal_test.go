package store

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// The GORM logger reports unexpected failures without the statement's parameters, and keeps
// quiet about answers such as "not found".
func TestGormLoggerHidesParameters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var buf syncBuffer
	s, err := Open(ctx, Options{
		SQLitePath: filepath.Join(t.TempDir(), "log.sqlite"),
		Logger:     slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UserByID(ctx, 42); err == nil {
		t.Fatal("UserByID on empty store succeeded")
	}
	if strings.Contains(buf.String(), "sql error") {
		t.Fatalf("not-found logged as an error:\n%s", buf.String())
	}
	err = s.db.WithContext(ctx).Exec("SELECT * FROM no_such_table WHERE secret = ?", "hunter2-secret").Error
	if err == nil {
		t.Fatal("query on a missing table succeeded")
	}
	out := buf.String()
	if !strings.Contains(out, "sql error") || !strings.Contains(out, "no_such_table") {
		t.Fatalf("failure not logged:\n%s", out)
	}
	if strings.Contains(out, "hunter2-secret") {
		t.Fatalf("log contains a SQL parameter:\n%s", out)
	}
}
