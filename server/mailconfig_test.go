package server_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/mail"
	"github.com/agentsvc/svc/internal/domain/mail/mailtest"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/server"
)

// TestMailConfig: an administrator reads the effective mail configuration, replaces it (the
// password sealed at rest, never shown), and every mail the service sends afterwards (the test
// message, account mails) goes through the new server; a restart over the same database keeps it.
func TestMailConfig(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_MAIL_ALLOWED_HOSTS=127.0.0.1") // the PUT saves a loopback host
	adm, _ := env.UserClient("root@example.com")
	member, _ := env.UserClient("member@example.com")
	env.WaitMail(2) // the two verification mails

	member.Get("/mail-config").Expect(t, 403, "FORBIDDEN")
	member.Put("/mail-config", map[string]any{"driver": "log", "host": "", "port": 25, "encryption": "none",
		"from_address": "x@example.com"}).Expect(t, 403, "FORBIDDEN")
	member.Post("/mail-config/test", map[string]any{"to": "member@example.com"}).Expect(t, 403, "FORBIDDEN")
	env.Client().Get("/mail-config").Expect(t, 401)

	// The defaults: apitest configures SMTP through the environment.
	got := getMailConfig(t, adm)
	want := gen.MailConfig{Driver: "smtp", Host: env.Mail.Host(), Port: env.Mail.Port(), Encryption: "none",
		FromAddress: "svc@example.test"}
	if got != want {
		t.Fatalf("defaults = %+v, want %+v", got, want)
	}

	// A new server requiring AUTH, configured through PUT.
	const password = "s3cret-Pa55-for-smtp"
	srv := mailtest.StartWith(t, mailtest.Options{Username: "svc-user", Password: password})
	body := map[string]any{"driver": "smtp", "host": srv.Host(), "port": srv.Port(), "username": "svc-user",
		"password": password, "encryption": "none", "from_address": "noreply@example.test", "from_name": "Agent Service"}
	var put gen.MailConfigResponse
	adm.Put("/mail-config", body).Expect(t, 200).Decode(t, &put)
	got = getMailConfig(t, adm)
	if !sameMailConfig(got, put.Data.MailConfig) {
		t.Fatalf("GET %+v differs from the PUT answer %+v", got, put.Data.MailConfig)
	}
	if got.Host != srv.Host() || got.Port != srv.Port() || got.Username != "svc-user" || !got.PasswordSet ||
		got.FromAddress != "noreply@example.test" || got.FromName != "Agent Service" || got.UpdatedAt == nil ||
		!got.UpdatedAt.Equal(env.Clock.Now()) {
		t.Fatalf("after PUT = %+v", got)
	}

	// Sealed at rest: the stored settings rows never hold the plaintext.
	stored, err := env.App.Store.Settings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sealed, _ := stored["mail_password"].(string); !strings.HasPrefix(sealed, "v1:") {
		t.Fatalf("stored mail_password = %q, want a sealed value", sealed)
	}
	if s := fmt.Sprint(stored); strings.Contains(s, password) {
		t.Fatalf("the plaintext password is stored: %s", s)
	}
	if stored["mail_host"] != srv.Host() || stored["mail_driver"] != "smtp" {
		t.Fatalf("stored settings = %v", stored)
	}

	// The test message arrives at the new server, authenticated with the unsealed password.
	var res gen.TestMailOutcomeResponse
	adm.Post("/mail-config/test", map[string]any{"to": "ada@example.com"}).Expect(t, 200).Decode(t, &res)
	if !res.Data.Sent || res.Data.Error != nil || res.Data.To != "ada@example.com" {
		t.Fatalf("test mail = %+v", res.Data)
	}
	msg := srv.WaitFor(t, 1, 5*time.Second)[0]
	if len(msg.To) != 1 || msg.To[0] != "ada@example.com" || msg.Subject != "Test message from your agent service" ||
		msg.AuthUser != "svc-user" || msg.From != "noreply@example.test" {
		t.Fatalf("test message = to %v subject %q auth %q from %q", msg.To, msg.Subject, msg.AuthUser, msg.From)
	}

	// Account mails go through the new settings too.
	before := len(env.Mail.Messages())
	env.Client().Post("/auth/forgot-password", map[string]any{"email": "member@example.com"}).Expect(t, 200)
	env.DrainMail() // account mails go through the outbox
	msgs := srv.WaitFor(t, 2, 5*time.Second)
	if m := msgs[1]; len(m.To) != 1 || m.To[0] != "member@example.com" || !strings.Contains(m.TextBody, "reset") {
		t.Fatalf("account mail = to %v subject %q", m.To, m.Subject)
	}
	if n := len(env.Mail.Messages()); n != before {
		t.Fatalf("the old server got %d more messages", n-before)
	}

	// Omitting the password keeps it; the test still authenticates.
	delete(body, "password")
	body["from_name"] = "Renamed"
	adm.Put("/mail-config", body).Expect(t, 200).Decode(t, &put)
	if !put.Data.MailConfig.PasswordSet || put.Data.MailConfig.FromName != "Renamed" {
		t.Fatalf("after PUT without password = %+v", put.Data.MailConfig)
	}
	adm.Post("/mail-config/test", map[string]any{"to": "ada@example.com"}).Expect(t, 200).Decode(t, &res)
	if !res.Data.Sent {
		t.Fatalf("test mail with the kept password = %+v", res.Data)
	}

	// A restart over the same database opens the sealed password.
	app := reopen(t, env)
	if c := app.Config.Current(); c.MailPassword != password || c.MailHost != srv.Host() || c.MailFromName != "Renamed" {
		t.Fatalf("after restart: host %q from_name %q password kept %v", c.MailHost, c.MailFromName, c.MailPassword == password)
	}

	// An empty password clears it.
	body["password"] = ""
	adm.Put("/mail-config", body).Expect(t, 200).Decode(t, &put)
	if put.Data.MailConfig.PasswordSet {
		t.Fatalf("after clearing = %+v", put.Data.MailConfig)
	}
}

// TestMailConfigValidation: rules of PUT, each a 422 that names the problem; nothing changes.
func TestMailConfigValidation(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	adm, _ := env.UserClient("root@example.com")
	before := getMailConfig(t, adm)
	valid := func() map[string]any {
		return map[string]any{"driver": "smtp", "host": "smtp.example.com", "port": 587, "encryption": "tls",
			"from_address": "svc@example.com"}
	}
	for _, tc := range []struct {
		name, key string
		val       any
		msg       string
	}{
		{"ssl on 587", "encryption", "ssl", "587 pairs with tls"},
		{"smtp without host", "host", "", "host"},
		{"host with scheme", "host", "smtp://mail.example.com", ""},
		{"host with port", "host", "mail.example.com:25", ""},
		{"port out of range", "port", 70000, ""},
		{"unknown encryption", "encryption", "starttls", ""},
		{"bad from", "from_address", "not an address", ""},
	} {
		b := valid()
		b[tc.key] = tc.val
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		adm.Put("/mail-config", b).Expect(t, 422, "VALIDATION_ERROR").Decode(t, &e)
		if !strings.Contains(e.Error.Message, tc.msg) {
			t.Errorf("%s: message %q lacks %q", tc.name, e.Error.Message, tc.msg)
		}
	}
	if got := getMailConfig(t, adm); !sameMailConfig(got, before) {
		t.Fatalf("a refused PUT changed the configuration: %+v", got)
	}
	// The log driver needs no host; tls on 587 and ssl on 465 are the pairings.
	b := valid()
	b["driver"], b["host"] = "log", ""
	adm.Put("/mail-config", b).Expect(t, 200)
	if got := getMailConfig(t, adm); got.Driver != "log" {
		t.Fatalf("driver = %q", got.Driver)
	}
	var res gen.TestMailOutcomeResponse
	adm.Post("/mail-config/test", map[string]any{"to": "ada@example.com"}).Expect(t, 200).Decode(t, &res)
	if res.Data.Sent || res.Data.Error == nil {
		t.Fatalf("test mail with the log driver = %+v", res.Data)
	}
	b = valid()
	b["encryption"], b["port"] = "ssl", 465
	adm.Put("/mail-config", b).Expect(t, 200)
}

// TestMailConfigTestFailure: a mail server that cannot be reached gives sent=false with the one
// connection-failure message, never the password or the address (TestMailTestOneFailureMessage).
func TestMailConfigTestFailure(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_MAIL_ALLOWED_HOSTS=127.0.0.1")
	adm, _ := env.UserClient("root@example.com")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	const password = "closed-port-Secret-99"
	adm.Put("/mail-config", map[string]any{"driver": "smtp", "host": "127.0.0.1", "port": port, "username": "svc",
		"password": password, "encryption": "none", "from_address": "svc@example.com"}).Expect(t, 200)
	var res gen.TestMailOutcomeResponse
	adm.Post("/mail-config/test", map[string]any{"to": "ada@example.com"}).Expect(t, 200).Decode(t, &res)
	if res.Data.Sent || res.Data.Error == nil || *res.Data.Error == "" {
		t.Fatalf("test mail to a closed port = %+v", res.Data)
	}
	if *res.Data.Error != mail.ConnectFailed || strings.Contains(*res.Data.Error, fmt.Sprint(port)) {
		t.Fatalf("error text %q", *res.Data.Error)
	}
}

// sameMailConfig compares two configurations, updated_at by instant.
func sameMailConfig(a, b gen.MailConfig) bool {
	ta, tb := a.UpdatedAt, b.UpdatedAt
	a.UpdatedAt, b.UpdatedAt = nil, nil
	return a == b && (ta == nil) == (tb == nil) && (ta == nil || ta.Equal(*tb))
}

func getMailConfig(t *testing.T, c *apitest.Client) gen.MailConfig {
	t.Helper()
	var out gen.MailConfigResponse
	c.Get("/mail-config").Expect(t, 200).Decode(t, &out)
	return out.Data.MailConfig
}

// reopen opens a second app over env's database with env's master key, as a restart would.
func reopen(t *testing.T, env *apitest.Env) *server.App {
	t.Helper()
	dir := t.TempDir()
	loader := config.NewLoader([]string{
		"SVC_CONFIG_FILE=" + filepath.Join(dir, "config.yaml"),
		"SVC_SECRET_KEY=" + base64.StdEncoding.EncodeToString(env.App.MasterKey),
		"SVC_LOG_PATH=stdout",
		"SVC_PLUGINS_DIR=" + filepath.Join(dir, "plugins"),
	})
	app, err := server.Open(context.Background(), loader, server.Options{Store: env.App.Store,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MediaDir: filepath.Join(dir, "media")})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { _ = app.Close() })
	return app
}
