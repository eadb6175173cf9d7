package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/domain/mail/mailtest"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/server"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// openMailApp starts the service on st with its SMTP server at port (client worker mode: the
// mail dispatcher runs in every mode), as svc serve would on a restart.
func openMailApp(t *testing.T, st *store.Store, clock *testkit.Clock, port int) *server.App {
	t.Helper()
	dir := t.TempDir()
	app, err := server.Open(context.Background(), config.NewLoader([]string{
		"SVC_CONFIG_FILE=" + filepath.Join(dir, "config.yaml"),
		"SVC_SECRET_KEY=BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
		"SVC_LOG_PATH=stdout",
		"SVC_WORKER_RUNTIME_MODE=client",
		"SVC_MAIL_DRIVER=smtp",
		"SVC_MAIL_HOST=127.0.0.1",
		"SVC_MAIL_PORT=" + strconv.Itoa(port),
		"SVC_MAIL_ENCRYPTION=none",
		"SVC_MAIL_FROM=svc@example.test",
	}), server.Options{
		Store: st, Clock: clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Hash: account.HashParams{MemoryKiB: 1024, Time: 1, Threads: 1}, MediaDir: filepath.Join(dir, "media"),
	})
	if err != nil {
		t.Fatalf("open app: %v", err)
	}
	t.Cleanup(func() { _ = app.Close() })
	return app
}

func waitMail(t *testing.T, st *store.Store, cond func([]store.Mail) bool) []store.Mail {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ms, err := st.Mails(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		if cond(ms) {
			return ms
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox never reached the expected state: %+v", ms)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMailQueuesWhileSMTPIsDownAcrossRestart: with the SMTP server down, account mails queue
// (the requests succeed at once) and the started dispatcher records failed attempts; the
// process stops, the server comes back, a new App on the same store delivers every queued
// mail once, and nothing is sent twice afterwards.
func TestMailQueuesWhileSMTPIsDownAcrossRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	st := storetest.NewWithClock(t, clock.Now)
	smtp := mailtest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()

	first := openMailApp(t, st, clock, dead)
	first.Start(ctx)
	for _, email := range []string{"ada@example.com", "bob@example.com"} {
		if _, err := first.Accounts.CreateUser(ctx, email, "correct horse", "", false, true); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := first.Accounts.ForgotPassword(ctx, email, "https://svc.example"); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("the request waited %s for the mail server", took)
		}
	}
	waitMail(t, st, func(ms []store.Mail) bool {
		return len(ms) == 2 && ms[0].Attempts == 1 && ms[1].Attempts == 1 && ms[0].LeaseUntil == nil && ms[1].LeaseUntil == nil
	})
	if err := first.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	_ = first.Close()

	// The server is back (the configuration names it) and svc restarts on the same store.
	second := openMailApp(t, st, clock, smtp.Port())
	clock.Advance(store.MailBackoff.Delays[0])
	second.Start(ctx)
	got := smtp.WaitFor(t, 2, 10*time.Second)
	waitMail(t, st, func(ms []store.Mail) bool {
		return ms[0].State == store.MailDelivered && ms[1].State == store.MailDelivered
	})
	if err := second.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(24 * time.Hour)
	if n, err := second.DrainMail(ctx); err != nil || n != 0 {
		t.Fatalf("DrainMail after delivery = %d, %v", n, err)
	}
	if n := len(smtp.Messages()); n != 2 {
		t.Fatalf("%d messages received, want 2 (none twice)", n)
	}
	to := map[string]bool{}
	for _, m := range got {
		to[m.To[0]] = true
	}
	if !to["ada@example.com"] || !to["bob@example.com"] {
		t.Fatalf("recipients %v", to)
	}
}
