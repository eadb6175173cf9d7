package mailtest_test

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/agentsvc/svc/internal/domain/mail/mailtest"
)

// A message with a nested multipart body, a base64 text part, a quoted-printable HTML part and
// an encoded subject, written by hand so the parser is checked independently of go-mail.
const rawMessage = "From: Sender <from@example.com>\r\n" +
	"To: to@example.com\r\n" +
	"Subject: =?UTF-8?q?Gr=C3=BC=C3=9Fe?=\r\n" +
	"MIME-Version: 1.0\r\n" +
	"Content-Type: multipart/mixed; boundary=outer\r\n" +
	"\r\n" +
	"--outer\r\n" +
	"Content-Type: multipart/alternative; boundary=inner\r\n" +
	"\r\n" +
	"--inner\r\n" +
	"Content-Type: text/plain; charset=UTF-8\r\n" +
	"Content-Transfer-Encoding: base64\r\n" +
	"\r\n" +
	"SGVsbG8gd29ybGQsIGhlcmUgaXMgdGhlIGxpbms6\r\n" +
	"IGh0dHBzOi8vZXhhbXBsZS5jb20vP2E9MQ==\r\n" +
	"--inner\r\n" +
	"Content-Type: text/html; charset=UTF-8\r\n" +
	"Content-Transfer-Encoding: quoted-printable\r\n" +
	"\r\n" +
	"<p class=3D\"x\">Hello w=\r\n" +
	"orld</p>\r\n" +
	"--inner--\r\n" +
	"--outer--\r\n"

func TestParsesRealMIME(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t)
	if err := sendPlain(srv.Addr(), "from@example.com", []string{"to@example.com", "cc@example.com"}, strings.NewReader(rawMessage)); err != nil {
		t.Fatalf("SendMail: %v", err)
	}
	got := srv.WaitFor(t, 1, 5*time.Second)[0]
	if got.ParseErr != nil {
		t.Fatalf("ParseErr: %v", got.ParseErr)
	}
	if got.From != "from@example.com" || len(got.To) != 2 || got.To[1] != "cc@example.com" {
		t.Errorf("envelope = %q -> %q", got.From, got.To)
	}
	if got.Subject != "Grüße" {
		t.Errorf("Subject = %q", got.Subject)
	}
	if got.TextBody != "Hello world, here is the link: https://example.com/?a=1" {
		t.Errorf("TextBody = %q", got.TextBody)
	}
	if got.HTMLBody != `<p class="x">Hello world</p>` {
		t.Errorf("HTMLBody = %q", got.HTMLBody)
	}
	if got.Header.Get("To") != "to@example.com" {
		t.Errorf("To header = %q", got.Header.Get("To"))
	}
	if string(got.Data) != rawMessage {
		t.Errorf("Data differs from what was sent")
	}
	if got.TLS || got.AuthUser != "" {
		t.Errorf("TLS = %v, AuthUser = %q", got.TLS, got.AuthUser)
	}
}

func TestKeepsUnparseableMessages(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t)
	raw := "Subject: x\r\nContent-Type: multipart/mixed\r\n\r\nno boundary\r\n"
	if err := sendPlain(srv.Addr(), "a@example.com", []string{"b@example.com"}, strings.NewReader(raw)); err != nil {
		t.Fatalf("SendMail: %v", err)
	}
	got := srv.WaitFor(t, 1, 5*time.Second)[0]
	if got.ParseErr == nil {
		t.Error("ParseErr = nil for a multipart body without boundary")
	}
	if string(got.Data) != raw {
		t.Errorf("Data = %q", got.Data)
	}
}

func TestAuthAndSTARTTLS(t *testing.T) {
	t.Parallel()
	srv := mailtest.StartWith(t, mailtest.Options{TLS: true, Username: "user", Password: "pass"})
	if srv.CertPool() == nil {
		t.Fatal("CertPool() = nil with TLS")
	}
	tlsConf := &tls.Config{ServerName: "127.0.0.1", RootCAs: srv.CertPool()}
	send := func(auth sasl.Client) error {
		c, err := smtp.DialStartTLS(srv.Addr(), tlsConf)
		if err != nil {
			return err
		}
		defer c.Close()
		if auth != nil {
			if err := c.Auth(auth); err != nil {
				return err
			}
		}
		return c.SendMail("a@example.com", []string{"b@example.com"}, strings.NewReader("Subject: hi\r\n\r\nbody\r\n"))
	}

	if err := send(nil); err == nil {
		t.Error("MAIL without AUTH accepted")
	}
	if err := send(sasl.NewPlainClient("", "user", "wrong")); err == nil {
		t.Error("wrong password accepted")
	}
	if n := srv.AuthFailures(); n != 1 {
		t.Errorf("AuthFailures = %d, want 1", n)
	}
	if err := send(sasl.NewPlainClient("", "user", "pass")); err != nil {
		t.Fatalf("PLAIN: %v", err)
	}
	if err := send(sasl.NewLoginClient("user", "pass")); err != nil {
		t.Fatalf("LOGIN: %v", err)
	}
	msgs := srv.WaitFor(t, 2, 5*time.Second)
	for _, m := range msgs {
		if !m.TLS || m.AuthUser != "user" || m.TextBody != "body\n" {
			t.Errorf("received %+v", m)
		}
	}
}

func TestNoAuthAdvertisedWithoutCredentials(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t)
	c, err := smtp.Dial(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.Extension("AUTH"); ok {
		t.Error("AUTH advertised without configured credentials")
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		t.Error("STARTTLS advertised without TLS option")
	}
}

func TestWaitForReturnsAsMessagesArrive(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t)
	go func() {
		for range 3 {
			_ = sendPlain(srv.Addr(), "a@example.com", []string{"b@example.com"}, strings.NewReader("Subject: s\r\n\r\nx\r\n"))
		}
	}()
	if got := srv.WaitFor(t, 3, 5*time.Second); len(got) != 3 {
		t.Fatalf("WaitFor returned %d messages", len(got))
	}
	if len(srv.Messages()) != 3 {
		t.Errorf("Messages() = %d", len(srv.Messages()))
	}
}

// sendPlain delivers raw over an unencrypted connection (smtp.SendMail insists on STARTTLS).
func sendPlain(addr, from string, to []string, raw *strings.Reader) error {
	c, err := smtp.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SendMail(from, to, raw); err != nil {
		return err
	}
	return c.Quit()
}
