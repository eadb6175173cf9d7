package mail_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/domain/mail"
	"github.com/agentsvc/svc/internal/domain/mail/mailtest"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

const waitTimeout = 10 * time.Second

func newSender(t *testing.T, cfg mail.SMTPConfig) *mail.SMTPSender {
	t.Helper()
	if cfg.From == "" {
		cfg.From = "noreply@svc.example"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = waitTimeout
	}
	s, err := mail.NewSMTP(cfg)
	if err != nil {
		t.Fatalf("NewSMTP: %v", err)
	}
	return s
}

func TestSMTPSendDelivers(t *testing.T) {
	t.Parallel()
	const link = "https://svc.example/verify?token=abc.def&x=1"
	tests := []struct {
		name       string
		opts       mailtest.Options
		encryption string
		wantTLS    bool
	}{
		{name: "none on plain server", encryption: "none"},
		{name: "auto on plain server", encryption: ""},
		{name: "none ignores offered STARTTLS", opts: mailtest.Options{TLS: true}, encryption: "none"},
		{name: "auto upgrades when offered", opts: mailtest.Options{TLS: true}, encryption: "", wantTLS: true},
		{name: "tls (STARTTLS)", opts: mailtest.Options{TLS: true}, encryption: "tls", wantTLS: true},
		{name: "ssl (implicit TLS)", opts: mailtest.Options{ImplicitTLS: true}, encryption: "ssl", wantTLS: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := mailtest.StartWith(t, tt.opts)
			s := newSender(t, mail.SMTPConfig{
				Host: srv.Host(), Port: srv.Port(), Encryption: tt.encryption,
				From: "noreply@svc.example", FromName: "Agent Service",
				InsecureSkipVerify: true,
			})
			m := mail.VerificationMessage("ada@example.com", "Ada", link)
			if err := s.Send(context.Background(), m); err != nil {
				t.Fatalf("Send: %v", err)
			}
			got := srv.WaitFor(t, 1, waitTimeout)[0]
			if got.ParseErr != nil {
				t.Fatalf("parse received message: %v\n%s", got.ParseErr, got.Data)
			}
			if got.From != "noreply@svc.example" {
				t.Errorf("envelope from = %q", got.From)
			}
			if len(got.To) != 1 || got.To[0] != "ada@example.com" {
				t.Errorf("envelope to = %q", got.To)
			}
			if got.Subject != m.Subject {
				t.Errorf("subject = %q, want %q", got.Subject, m.Subject)
			}
			if !strings.Contains(got.TextBody, link) {
				t.Errorf("text body lacks the link:\n%s", got.TextBody)
			}
			if !strings.Contains(got.HTMLBody, "https://svc.example/verify?token=abc.def&amp;x=1") {
				t.Errorf("html body lacks the link:\n%s", got.HTMLBody)
			}
			if from := got.Header.Get("From"); !strings.Contains(from, "Agent Service") || !strings.Contains(from, "<noreply@svc.example>") {
				t.Errorf("From header = %q", from)
			}
			if to := got.Header.Get("To"); !strings.Contains(to, "ada@example.com") {
				t.Errorf("To header = %q", to)
			}
			if got.TLS != tt.wantTLS {
				t.Errorf("TLS = %v, want %v", got.TLS, tt.wantTLS)
			}
		})
	}
}

func TestSMTPSendAuth(t *testing.T) {
	t.Parallel()
	const user, pass = "mailer", "s3cret-Pa55word"
	tests := []struct {
		name       string
		opts       mailtest.Options
		encryption string
		username   string
		password   string
		wantErr    bool
	}{
		{name: "PLAIN over STARTTLS", opts: mailtest.Options{TLS: true}, encryption: "tls", username: user, password: pass},
		{name: "LOGIN over STARTTLS", opts: mailtest.Options{TLS: true, AuthMechanisms: []string{"LOGIN"}}, encryption: "tls", username: user, password: pass},
		{name: "PLAIN over implicit TLS", opts: mailtest.Options{ImplicitTLS: true}, encryption: "ssl", username: user, password: pass},
		{name: "PLAIN on loopback without TLS", encryption: "none", username: user, password: pass},
		{name: "wrong password", opts: mailtest.Options{TLS: true}, encryption: "tls", username: user, password: "wrong-" + pass, wantErr: true},
		{name: "wrong user", opts: mailtest.Options{TLS: true}, encryption: "tls", username: "nobody", password: pass, wantErr: true},
		{name: "no credentials configured", opts: mailtest.Options{TLS: true}, encryption: "tls", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.Username, opts.Password = user, pass
			srv := mailtest.StartWith(t, opts)
			s := newSender(t, mail.SMTPConfig{
				Host: srv.Host(), Port: srv.Port(), Encryption: tt.encryption,
				Username: tt.username, Password: tt.password, InsecureSkipVerify: true,
			})
			err := s.Send(context.Background(), mail.TestMessage("admin@example.com"))
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Send: %v", err)
				}
				got := srv.WaitFor(t, 1, waitTimeout)[0]
				if got.AuthUser != user {
					t.Errorf("AuthUser = %q, want %q", got.AuthUser, user)
				}
				return
			}
			if err == nil {
				t.Fatal("Send succeeded, want an error")
			}
			if !errors.Is(err, svcerr.ErrUnavailable) {
				t.Errorf("error %v is not ErrUnavailable", err)
			}
			if tt.password != "" && strings.Contains(err.Error(), tt.password) {
				t.Errorf("error reveals the password: %v", err)
			}
			if strings.Contains(err.Error(), pass) {
				t.Errorf("error reveals the server's password: %v", err)
			}
			if n := len(srv.Messages()); n != 0 {
				t.Errorf("server received %d messages, want 0", n)
			}
		})
	}
}

func TestSMTPSendTLSFailures(t *testing.T) {
	t.Parallel()
	t.Run("tls required but not offered", func(t *testing.T) {
		t.Parallel()
		srv := mailtest.Start(t)
		s := newSender(t, mail.SMTPConfig{Host: srv.Host(), Port: srv.Port(), Encryption: "tls"})
		err := s.Send(context.Background(), mail.TestMessage("a@example.com"))
		if !errors.Is(err, svcerr.ErrUnavailable) || !strings.Contains(err.Error(), "STARTTLS") {
			t.Fatalf("Send error = %v, want ErrUnavailable mentioning STARTTLS", err)
		}
		if n := len(srv.Messages()); n != 0 {
			t.Errorf("server received %d messages, want 0", n)
		}
	})
	t.Run("self-signed certificate is verified by default", func(t *testing.T) {
		t.Parallel()
		srv := mailtest.StartWith(t, mailtest.Options{TLS: true})
		s := newSender(t, mail.SMTPConfig{Host: srv.Host(), Port: srv.Port(), Encryption: "tls"})
		err := s.Send(context.Background(), mail.TestMessage("a@example.com"))
		if !errors.Is(err, svcerr.ErrUnavailable) {
			t.Fatalf("Send error = %v, want ErrUnavailable (certificate)", err)
		}
	})
	t.Run("ssl against a plain server", func(t *testing.T) {
		t.Parallel()
		srv := mailtest.Start(t)
		s := newSender(t, mail.SMTPConfig{Host: srv.Host(), Port: srv.Port(), Encryption: "ssl", Timeout: 5 * time.Second})
		if err := s.Send(context.Background(), mail.TestMessage("a@example.com")); err == nil {
			t.Fatal("Send succeeded, want a TLS error")
		}
	})
}

func TestSMTPSendConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := newSender(t, mail.SMTPConfig{Host: "127.0.0.1", Port: port, Encryption: "none", Password: "hunter2-secret"})
	err = s.Send(context.Background(), mail.TestMessage("a@example.com"))
	if !errors.Is(err, svcerr.ErrUnavailable) {
		t.Fatalf("Send error = %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Errorf("error %q does not name the server address", err)
	}
}

// A server that accepts the connection but never greets: only ctx can end the wait early.
func TestSMTPSendHonoursContext(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	s := newSender(t, mail.SMTPConfig{Host: "127.0.0.1", Port: port, Encryption: "none", Timeout: time.Hour})

	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- s.Send(ctx, mail.TestMessage("a@example.com")) }()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Send error = %v, want context.DeadlineExceeded", err)
			}
		case <-time.After(waitTimeout):
			t.Fatal("Send did not return after the context deadline")
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := s.Send(ctx, mail.TestMessage("a@example.com")); !errors.Is(err, context.Canceled) {
			t.Fatalf("Send error = %v, want context.Canceled", err)
		}
	})
}

func TestSMTPSendInvalidRecipient(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t)
	s := newSender(t, mail.SMTPConfig{Host: srv.Host(), Port: srv.Port(), Encryption: "none"})
	for _, to := range []string{"", "not an address", "a@example.com\r\nBcc: evil@example.com"} {
		err := s.Send(context.Background(), mail.TestMessage(to))
		if !errors.Is(err, svcerr.ErrInvalid) {
			t.Errorf("Send to %q: error = %v, want ErrInvalid", to, err)
		}
	}
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("server received %d messages, want 0", n)
	}
}

func TestSMTPSendSubjectCannotInjectHeaders(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t)
	s := newSender(t, mail.SMTPConfig{Host: srv.Host(), Port: srv.Port(), Encryption: "none"})
	m := mail.Message{To: "a@example.com", Subject: "Hello\r\nBcc: evil@example.com", Text: "body"}
	if err := s.Send(context.Background(), m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := srv.WaitFor(t, 1, waitTimeout)[0]
	if got.Header.Get("Bcc") != "" {
		t.Errorf("injected Bcc header: %q", got.Header.Get("Bcc"))
	}
	if got.Subject != "Hello  Bcc: evil@example.com" {
		t.Errorf("subject = %q", got.Subject)
	}
	if len(got.To) != 1 {
		t.Errorf("envelope recipients = %q", got.To)
	}
	if got.HTMLBody != "" {
		t.Errorf("HTML part present for a text-only message")
	}
	if got.TextBody != "body\n" {
		t.Errorf("text body = %q", got.TextBody)
	}
}

func TestSMTPSendConcurrent(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t)
	s := newSender(t, mail.SMTPConfig{Host: srv.Host(), Port: srv.Port(), Encryption: "none"})
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			errs <- s.Send(context.Background(), mail.TestMessage(string(rune('a'+i))+"@example.com"))
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("Send: %v", err)
		}
	}
	srv.WaitFor(t, n, waitTimeout)
}

func TestNewSMTPValidation(t *testing.T) {
	t.Parallel()
	base := mail.SMTPConfig{Host: "smtp.example.com", Port: 587, Encryption: "tls", From: "noreply@example.com", Password: "top-secret-pw"}
	tests := []struct {
		name    string
		mod     func(*mail.SMTPConfig)
		wantErr string // substring; empty means valid
		addr    string // expected Addr() when valid
	}{
		{name: "valid tls on 587", mod: func(*mail.SMTPConfig) {}, addr: "smtp.example.com:587"},
		{name: "valid ssl on 465", mod: func(c *mail.SMTPConfig) { c.Port, c.Encryption = 465, "ssl" }, addr: "smtp.example.com:465"},
		{name: "encryption is case-insensitive", mod: func(c *mail.SMTPConfig) { c.Encryption = " TLS " }, addr: "smtp.example.com:587"},
		{name: "default port for tls", mod: func(c *mail.SMTPConfig) { c.Port = 0 }, addr: "smtp.example.com:587"},
		{name: "default port for ssl", mod: func(c *mail.SMTPConfig) { c.Port, c.Encryption = 0, "ssl" }, addr: "smtp.example.com:465"},
		{name: "default port for none", mod: func(c *mail.SMTPConfig) { c.Port, c.Encryption = 0, "none" }, addr: "smtp.example.com:25"},
		{name: "IPv6 literal", mod: func(c *mail.SMTPConfig) { c.Host = "::1" }, addr: "[::1]:587"},
		{name: "bracketed IPv6 literal", mod: func(c *mail.SMTPConfig) { c.Host = "[2001:db8::1]" }, addr: "[2001:db8::1]:587"},
		{name: "from with display name", mod: func(c *mail.SMTPConfig) { c.From = "Svc <noreply@example.com>" }, addr: "smtp.example.com:587"},
		{name: "ssl on 587", mod: func(c *mail.SMTPConfig) { c.Encryption = "ssl" }, wantErr: `"ssl" (implicit TLS) does not work on port 587`},
		{name: "tls on 465", mod: func(c *mail.SMTPConfig) { c.Port = 465 }, wantErr: `"tls" (STARTTLS) does not work on port 465`},
		{name: "scheme in host", mod: func(c *mail.SMTPConfig) { c.Host = "smtp://smtp.example.com" }, wantErr: "without a scheme"},
		{name: "https scheme in host", mod: func(c *mail.SMTPConfig) { c.Host = "https://smtp.example.com" }, wantErr: "without a scheme"},
		{name: "port in host", mod: func(c *mail.SMTPConfig) { c.Host = "smtp.example.com:587" }, wantErr: "must not include a port"},
		{name: "path in host", mod: func(c *mail.SMTPConfig) { c.Host = "smtp.example.com/x" }, wantErr: "hostname only"},
		{name: "empty host", mod: func(c *mail.SMTPConfig) { c.Host = " " }, wantErr: "host is required"},
		{name: "unknown encryption", mod: func(c *mail.SMTPConfig) { c.Encryption = "starttls" }, wantErr: "not one of tls, ssl, none"},
		{name: "port out of range", mod: func(c *mail.SMTPConfig) { c.Port = 70000 }, wantErr: "out of range"},
		{name: "negative port", mod: func(c *mail.SMTPConfig) { c.Port = -1 }, wantErr: "out of range"},
		{name: "missing from", mod: func(c *mail.SMTPConfig) { c.From = "" }, wantErr: "from address is required"},
		{name: "malformed from", mod: func(c *mail.SMTPConfig) { c.From = "noreply" }, wantErr: "not a valid email address"},
		{name: "negative timeout", mod: func(c *mail.SMTPConfig) { c.Timeout = -time.Second }, wantErr: "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := base
			tt.mod(&cfg)
			s, err := mail.NewSMTP(cfg)
			if verr := cfg.Validate(); (verr == nil) != (err == nil) {
				t.Errorf("Validate() = %v, NewSMTP error = %v", verr, err)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("NewSMTP: %v", err)
				}
				if s.Addr() != tt.addr {
					t.Errorf("Addr() = %q, want %q", s.Addr(), tt.addr)
				}
				return
			}
			if err == nil {
				t.Fatalf("NewSMTP succeeded, want error containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if !errors.Is(err, svcerr.ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
			if strings.Contains(err.Error(), cfg.Password) {
				t.Errorf("error reveals the password: %v", err)
			}
		})
	}
}

func TestSMTPConfigLogValueHidesPassword(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	logger.Info("mail config", "cfg", mail.SMTPConfig{Host: "smtp.example.com", Username: "u", Password: "very-secret-pw"})
	out := buf.String()
	if strings.Contains(out, "very-secret-pw") {
		t.Errorf("log output reveals the password: %s", out)
	}
	if !strings.Contains(out, "password_set=true") || !strings.Contains(out, "smtp.example.com") {
		t.Errorf("log output lacks fields: %s", out)
	}
}
