package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/mail"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

func TestPanicAnswersTheEnvelope(t *testing.T) {
	t.Parallel()
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e := gin.New()
	e.Use(s.recover)
	e.GET("/boom", func(*gin.Context) { panic("kaboom") })
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/boom", nil))
	var env envelope
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || rec.Code != 500 || env.Error.Code != "INTERNAL" {
		t.Fatalf("panic answered %d %s", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "kaboom") {
		t.Fatal("the panic's text leaked to the caller")
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		status int
		code   gen.ErrorCode
		msg    string
	}{
		{svcerr.New(svcerr.ErrNotFound, "agent 3 not found"), 404, "NOT_FOUND", "agent 3 not found"},
		{svcerr.ErrCSRF, 403, "CSRF_TOKEN_INVALID", svcerr.ErrCSRF.Error()},
		{svcerr.New(svcerr.ErrInvalidState, "task is COMPLETED"), 409, "INVALID_STATE", "task is COMPLETED"},
		{svcerr.RateLimited(time.Second, "slow down"), 429, "TOO_MANY_REQUESTS", "slow down"},
		{&http.MaxBytesError{Limit: 10}, 413, "PAYLOAD_TOO_LARGE", "request body exceeds 10 bytes"},
		{io.ErrUnexpectedEOF, 500, "INTERNAL", "internal error"},
	} {
		status, code, msg := classify(tc.err)
		if status != tc.status || code != tc.code || msg != tc.msg {
			t.Errorf("classify(%v) = %d %s %q; want %d %s %q", tc.err, status, code, msg, tc.status, tc.code, tc.msg)
		}
	}
}

// TestRunShutsDownGracefully starts the HTTP server and cancels its context mid-request: the
// request in flight completes and Run returns without error.
func TestRunShutsDownGracefully(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	started := make(chan struct{})
	e := gin.New()
	e.GET("/slow", func(c *gin.Context) {
		close(started)
		time.Sleep(300 * time.Millisecond)
		c.String(200, "done")
	})
	s := &Server{engine: e, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		cfg: config.NewLoader([]string{"SVC_CONFIG_FILE=" + t.TempDir() + "/none.yaml"})}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx, addr, 5*time.Second) }()
	var res *http.Response
	got := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 50; i++ {
			if res, err = http.Get("http://" + addr + "/slow"); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		got <- err
	}()
	<-started
	cancel()
	if err := <-got; err != nil {
		t.Fatalf("in-flight request failed: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "done" {
		t.Fatalf("in-flight request answered %q", body)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestMailLogWithheldInProduction: without a mail driver, a message (a reset link) is logged in
// full only in development.
func TestMailLogWithheldInProduction(t *testing.T) {
	t.Parallel()
	msg := mail.PasswordResetMessage("ada@example.com", "Ada", "https://svc.example/reset-password?selector=s&token=secret-token")
	for _, tt := range []struct {
		env      []string
		withBody bool
	}{
		{nil, true},
		{[]string{"SVC_APP_ENV=production", "SVC_APP_URL=https://svc.example", "SVC_SECRET_KEY=AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="}, false},
	} {
		var buf strings.Builder
		loader := config.NewLoader(append([]string{"SVC_CONFIG_FILE=" + t.TempDir() + "/none.yaml"}, tt.env...))
		if _, err := loader.Load(); err != nil {
			t.Fatal(err)
		}
		m := &configuredMailer{cfg: loader, log: mail.NewLog(slog.New(slog.NewTextHandler(&buf, nil)))}
		if err := m.Send(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(buf.String(), "secret-token"); got != tt.withBody {
			t.Errorf("%v: link logged = %v, want %v: %s", tt.env, got, tt.withBody, buf.String())
		}
	}
}
