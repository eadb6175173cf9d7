// Package mailtest runs an in-process SMTP server for tests of any package that sends mail.
//
// The server listens on 127.0.0.1 on a free port, accepts every recipient, and keeps each
// message it receives, parsed from the real MIME data (subject decoded, text and HTML parts
// decoded from quoted-printable or base64). It can offer STARTTLS or implicit TLS with a
// self-signed certificate generated at start, and can require SMTP AUTH (PLAIN, LOGIN).
//
//	srv := mailtest.Start(t)
//	sender, _ := mail.NewSMTP(mail.SMTPConfig{Host: srv.Host(), Port: srv.Port(), Encryption: "none", From: "svc@example.test"})
//	… code under test sends …
//	msg := srv.WaitFor(t, 1, 5*time.Second)[0]
package mailtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Options configures a Server started with StartWith.
type Options struct {
	// TLS offers STARTTLS (the "tls" encryption mode) with a self-signed certificate.
	TLS bool
	// ImplicitTLS makes the listener speak TLS from the first byte (the "ssl" mode).
	ImplicitTLS bool
	// Username and Password, when Username is set, make the server advertise AUTH and refuse
	// MAIL FROM until a client has authenticated with exactly these credentials.
	Username, Password string
	// AuthMechanisms restricts the advertised mechanisms ("PLAIN", "LOGIN"); default both.
	AuthMechanisms []string
}

// Received is one message accepted by the server.
type Received struct {
	From     string   // envelope sender (MAIL FROM)
	To       []string // envelope recipients (RCPT TO)
	Data     []byte   // the message exactly as transmitted after DATA
	Header   mail.Header
	Subject  string // decoded (RFC 2047)
	TextBody string // decoded text/plain part, line endings normalised to "\n"
	HTMLBody string // decoded text/html part, line endings normalised to "\n"; empty if none
	TLS      bool   // the session was encrypted (STARTTLS or implicit TLS)
	AuthUser string // the authenticated user, empty without AUTH
	ParseErr error  // set when Data is not a parseable MIME message; Data is still kept
}

// Server is a running test SMTP server. Its methods are safe for concurrent use.
type Server struct {
	opts   Options
	srv    *smtp.Server
	ln     net.Listener
	pool   *x509.CertPool
	served chan struct{}

	mu           sync.Mutex
	msgs         []Received
	changed      chan struct{} // closed and replaced whenever msgs grows
	authFailures int
}

// Start starts a plain server without TLS or AUTH; it is stopped in t.Cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith starts a server configured by opts; it is stopped in t.Cleanup.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{opts: opts, served: make(chan struct{}), changed: make(chan struct{})}
	if len(s.opts.AuthMechanisms) == 0 {
		s.opts.AuthMechanisms = []string{sasl.Plain, sasl.Login}
	}

	s.srv = smtp.NewServer(backend{s})
	s.srv.Domain = "mailtest.local"
	s.srv.AllowInsecureAuth = true // loopback only; lets plain-text AUTH be tested
	s.srv.ReadTimeout = 30 * time.Second
	s.srv.WriteTimeout = 30 * time.Second
	s.srv.MaxMessageBytes = 10 << 20
	s.srv.MaxRecipients = 100
	s.srv.ErrorLog = discardLogger{}

	var tlsConf *tls.Config
	if opts.TLS || opts.ImplicitTLS {
		cert, pool, err := selfSigned()
		if err != nil {
			t.Fatalf("mailtest: generate certificate: %v", err)
		}
		s.pool = pool
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if opts.TLS {
		s.srv.TLSConfig = tlsConf
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mailtest: listen: %v", err)
	}
	if opts.ImplicitTLS {
		ln = tls.NewListener(ln, tlsConf)
	}
	s.ln = ln
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln)
	}()
	t.Cleanup(s.close)
	return s
}

func (s *Server) close() {
	_ = s.srv.Close()
	// Serve may not have registered the listener yet when a test ends quickly; closing it
	// here as well guarantees the accept loop ends.
	_ = s.ln.Close()
	<-s.served
}

// Host is the address to dial: always "127.0.0.1".
func (s *Server) Host() string { return "127.0.0.1" }

// Port is the port the server listens on.
func (s *Server) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Addr is "127.0.0.1:port".
func (s *Server) Addr() string { return s.ln.Addr().String() }

// CertPool holds the server's self-signed certificate, for clients that verify it rather
// than skip verification. It is nil when neither TLS nor ImplicitTLS is set.
func (s *Server) CertPool() *x509.CertPool { return s.pool }

// Messages returns a copy of the messages received so far, in arrival order.
func (s *Server) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

// AuthFailures counts rejected AUTH attempts.
func (s *Server) AuthFailures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authFailures
}

// WaitFor waits until at least n messages have arrived and returns all received messages.
// It fails the test when timeout passes first.
func (s *Server) WaitFor(t testing.TB, n int, timeout time.Duration) []Received {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if len(s.msgs) >= n {
			msgs := slices.Clone(s.msgs)
			s.mu.Unlock()
			return msgs
		}
		changed, got := s.changed, len(s.msgs)
		s.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("mailtest: got %d message(s) within %s, want %d", got, timeout, n)
			return nil
		}
	}
}

func (s *Server) add(r Received) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, r)
	close(s.changed)
	s.changed = make(chan struct{})
}

type backend struct{ s *Server }

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{s: b.s, conn: c}, nil
}

type session struct {
	s        *Server
	conn     *smtp.Conn
	authUser string
	from     string
	to       []string
}

var _ smtp.AuthSession = (*session)(nil)

func (se *session) AuthMechanisms() []string {
	if se.s.opts.Username == "" {
		return nil
	}
	return se.s.opts.AuthMechanisms
}

func (se *session) Auth(mech string) (sasl.Server, error) {
	if se.s.opts.Username == "" || !slices.Contains(se.s.opts.AuthMechanisms, mech) {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(_, username, password string) error {
			return se.check(username, password)
		}), nil
	case sasl.Login:
		return &loginServer{check: se.check}, nil
	}
	return nil, smtp.ErrAuthUnknownMechanism
}

func (se *session) check(username, password string) error {
	if username == se.s.opts.Username && password == se.s.opts.Password {
		se.authUser = username
		return nil
	}
	se.s.mu.Lock()
	se.s.authFailures++
	se.s.mu.Unlock()
	return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "Authentication credentials invalid"}
}

func (se *session) Mail(from string, _ *smtp.MailOptions) error {
	if se.s.opts.Username != "" && se.authUser == "" {
		return smtp.ErrAuthRequired
	}
	se.from = from
	return nil
}

func (se *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	se.to = append(se.to, to)
	return nil
}

func (se *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, isTLS := se.conn.TLSConnectionState()
	rec := Received{From: se.from, To: slices.Clone(se.to), Data: data, TLS: isTLS, AuthUser: se.authUser}
	rec.ParseErr = parse(&rec)
	se.s.add(rec)
	return nil
}

func (se *session) Reset() {
	se.from = ""
	se.to = nil
}

func (se *session) Logout() error { return nil }

// loginServer is the server side of the LOGIN mechanism, which go-sasl only implements for
// clients.
type loginServer struct {
	check    func(username, password string) error
	step     int
	username string
}

func (l *loginServer) Next(response []byte) ([]byte, bool, error) {
	switch l.step {
	case 0:
		l.step = 1
		if response == nil {
			return []byte("Username:"), false, nil
		}
		fallthrough // initial response carries the username
	case 1:
		l.username = string(response)
		l.step = 2
		return []byte("Password:"), false, nil
	case 2:
		l.step = 3
		return nil, true, l.check(l.username, string(response))
	}
	return nil, false, errors.New("unexpected LOGIN response")
}

// parse fills the decoded fields of r from r.Data.
func parse(r *Received) error {
	msg, err := mail.ReadMessage(bytes.NewReader(r.Data))
	if err != nil {
		return fmt.Errorf("read message: %w", err)
	}
	r.Header = msg.Header
	dec := new(mime.WordDecoder)
	if r.Subject, err = dec.DecodeHeader(msg.Header.Get("Subject")); err != nil {
		return fmt.Errorf("decode subject: %w", err)
	}
	return walk(r, msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body)
}

// walk decodes a (possibly multipart) body, keeping the first text/plain and text/html parts.
func walk(r *Received, contentType, encoding string, body io.Reader) error {
	if contentType == "" {
		contentType = "text/plain"
	}
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return fmt.Errorf("content type %q: %w", contentType, err)
	}
	if strings.HasPrefix(mediaType, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			part, err := mr.NextRawPart()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("multipart: %w", err)
			}
			if err := walk(r, part.Header.Get("Content-Type"), part.Header.Get("Content-Transfer-Encoding"), part); err != nil {
				return err
			}
		}
	}

	var dec io.Reader
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "quoted-printable":
		dec = quotedprintable.NewReader(body)
	case "base64":
		dec = base64.NewDecoder(base64.StdEncoding, newlineStripper{body})
	default:
		dec = body
	}
	raw, err := io.ReadAll(dec)
	if err != nil {
		return fmt.Errorf("decode %s part: %w", mediaType, err)
	}
	content := strings.ReplaceAll(string(raw), "\r\n", "\n")
	switch {
	case mediaType == "text/plain" && r.TextBody == "":
		r.TextBody = content
	case mediaType == "text/html" && r.HTMLBody == "":
		r.HTMLBody = content
	}
	return nil
}

// newlineStripper drops CR and LF so base64 split over lines decodes.
type newlineStripper struct{ r io.Reader }

func (n newlineStripper) Read(p []byte) (int, error) {
	for {
		k, err := n.r.Read(p)
		j := 0
		for _, b := range p[:k] {
			if b != '\r' && b != '\n' {
				p[j] = b
				j++
			}
		}
		if j > 0 || err != nil {
			return j, err
		}
	}
}

// selfSigned makes a short-lived ECDSA certificate for 127.0.0.1, ::1 and localhost.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "mailtest"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}
func (discardLogger) Println(...any)        {}
