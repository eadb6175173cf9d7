package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	netmail "net/mail"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Values of SMTPConfig.Encryption (SVC_MAIL_ENCRYPTION).
const (
	// EncryptionTLS upgrades the connection with STARTTLS right after the greeting and refuses
	// to continue when the server does not offer it. It pairs with port 587.
	EncryptionTLS = "tls"
	// EncryptionSSL speaks TLS from the first byte (implicit TLS, "SMTPS"). It pairs with port
	// 465 and cannot work on 587, where the server expects a plain greeting first.
	EncryptionSSL = "ssl"
	// EncryptionNone never encrypts, even when the server offers STARTTLS.
	EncryptionNone = "none"
	// EncryptionAuto (the empty value) uses STARTTLS when the server offers it and continues
	// in plain text otherwise.
	EncryptionAuto = ""
)

// Default ports chosen when SMTPConfig.Port is zero.
const (
	PortSubmission = 587 // STARTTLS submission, default for EncryptionTLS
	PortSMTPS      = 465 // implicit TLS submission, default for EncryptionSSL
	PortSMTP       = 25  // default for EncryptionNone and EncryptionAuto
)

// DefaultTimeout bounds connecting and each protocol step when SMTPConfig.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// SMTPConfig is the SMTP driver's configuration (the SVC_MAIL_* keys).
type SMTPConfig struct {
	Host       string // hostname or IP literal only: no scheme, no port, no path
	Port       int    // 0 picks the conventional port for Encryption
	Username   string // SMTP AUTH is used only when set
	Password   string // never logged, never part of an error
	Encryption string // EncryptionTLS, EncryptionSSL, EncryptionNone or EncryptionAuto ("")
	From       string // envelope and header sender; "Name <addr>" is accepted too
	FromName   string // display name of the sender; overrides a name given in From
	Timeout    time.Duration
	// Dial, when set, opens the TCP connection (a netguard.Dialer's DialContext screening the
	// host); nil dials directly.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// InsecureSkipVerify disables certificate verification. Tests only (the mailtest server
	// uses a self-signed certificate); never set it from user configuration.
	InsecureSkipVerify bool
}

// LogValue renders the configuration for slog without the password.
func (c SMTPConfig) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("host", c.Host),
		slog.Int("port", c.Port),
		slog.String("username", c.Username),
		slog.Bool("password_set", c.Password != ""),
		slog.String("encryption", c.Encryption),
		slog.String("from", c.From),
		slog.String("from_name", c.FromName),
		slog.Duration("timeout", c.Timeout),
	)
}

// Validate checks cfg the way NewSMTP does, without building a sender. Errors are
// svcerr.ErrInvalid with a message safe to show to an administrator.
func (c SMTPConfig) Validate() error {
	_, err := c.normalize()
	return err
}

// normalize validates the configuration and fills in defaults.
func (c SMTPConfig) normalize() (SMTPConfig, error) {
	invalid := func(format string, args ...any) (SMTPConfig, error) {
		return SMTPConfig{}, svcerr.New(svcerr.ErrInvalid, "mail: "+format, args...)
	}

	c.Host = strings.TrimSpace(c.Host)
	switch {
	case c.Host == "":
		return invalid("host is required")
	case strings.Contains(c.Host, "://"):
		return invalid("host %q must be a hostname without a scheme, e.g. %q", c.Host, c.Host[strings.Index(c.Host, "://")+3:])
	case strings.ContainsAny(c.Host, "/@?# \t\r\n"):
		return invalid("host %q must be a hostname only (no path, user or spaces)", c.Host)
	}
	if strings.HasPrefix(c.Host, "[") && strings.HasSuffix(c.Host, "]") {
		c.Host = c.Host[1 : len(c.Host)-1]
	}
	if strings.Contains(c.Host, ":") && net.ParseIP(c.Host) == nil {
		return invalid("host %q must not include a port; set the port separately", c.Host)
	}

	c.Encryption = strings.ToLower(strings.TrimSpace(c.Encryption))
	switch c.Encryption {
	case EncryptionTLS, EncryptionSSL, EncryptionNone, EncryptionAuto:
	default:
		return invalid("encryption %q is not one of tls, ssl, none or empty", c.Encryption)
	}

	if c.Port == 0 {
		switch c.Encryption {
		case EncryptionTLS:
			c.Port = PortSubmission
		case EncryptionSSL:
			c.Port = PortSMTPS
		default:
			c.Port = PortSMTP
		}
	}
	if c.Port < 1 || c.Port > 65535 {
		return invalid("port %d is out of range 1-65535", c.Port)
	}
	if c.Encryption == EncryptionSSL && c.Port == PortSubmission {
		return invalid("encryption \"ssl\" (implicit TLS) does not work on port 587, which expects STARTTLS: use encryption \"tls\" on port 587, or \"ssl\" on port 465")
	}
	if c.Encryption == EncryptionTLS && c.Port == PortSMTPS {
		return invalid("encryption \"tls\" (STARTTLS) does not work on port 465, which expects implicit TLS: use encryption \"ssl\" on port 465, or \"tls\" on port 587")
	}

	c.From = strings.TrimSpace(c.From)
	if c.From == "" {
		return invalid("from address is required")
	}
	from, err := netmail.ParseAddress(c.From)
	if err != nil {
		return invalid("from address %q is not a valid email address", c.From)
	}
	c.From = from.Address
	c.FromName = strings.TrimSpace(stripControl(c.FromName))
	if c.FromName == "" {
		c.FromName = from.Name
	}

	if c.Timeout < 0 {
		return invalid("timeout must not be negative")
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c, nil
}

// SMTPSender delivers messages over SMTP. Each Send opens its own connection, sends one
// message and closes it, so an SMTPSender is safe for concurrent use and holds no idle
// connection.
//
// Credentials are sent only over an encrypted connection, or to a loopback host
// (localhost, 127.0.0.1, ::1) when encryption is "none" or not offered; otherwise Send fails
// instead of exposing the password.
type SMTPSender struct {
	cfg     SMTPConfig
	from    netmail.Address
	tlsConf *tls.Config
	opts    []gomail.Option
}

var _ Sender = (*SMTPSender)(nil)

// NewSMTP validates cfg and returns a sender for it. It does not contact the server.
// Configuration errors are svcerr.ErrInvalid with a message safe to show to an administrator:
// a missing host, a host with a scheme or port, an unknown encryption, "ssl" on port 587,
// "tls" on port 465, a missing or malformed from address.
func NewSMTP(cfg SMTPConfig) (*SMTPSender, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	s := &SMTPSender{
		cfg:  cfg,
		from: netmail.Address{Name: cfg.FromName, Address: cfg.From},
		tlsConf: &tls.Config{
			ServerName:         cfg.Host,
			MinVersion:         tls.VersionTLS12,
			InsecureSkipVerify: cfg.InsecureSkipVerify, //nolint:gosec // tests only, documented on the field
		},
	}
	s.opts = []gomail.Option{
		gomail.WithPort(cfg.Port),
		gomail.WithTimeout(cfg.Timeout),
		gomail.WithTLSConfig(s.tlsConf),
	}
	switch cfg.Encryption {
	case EncryptionTLS:
		s.opts = append(s.opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case EncryptionSSL:
		// The dialer in Send performs the TLS handshake itself; WithSSL stops go-mail from
		// attempting STARTTLS on top of it.
		s.opts = append(s.opts, gomail.WithSSL())
	case EncryptionNone:
		s.opts = append(s.opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		s.opts = append(s.opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if cfg.Username != "" {
		s.opts = append(s.opts,
			gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthPlain, gomail.SMTPAuthLogin),
			gomail.WithUsername(cfg.Username),
			gomail.WithPassword(cfg.Password),
		)
	}
	return s, nil
}

// Addr is the "host:port" the sender connects to.
func (s *SMTPSender) Addr() string {
	return net.JoinHostPort(s.cfg.Host, strconv.Itoa(s.cfg.Port))
}

// Send connects, optionally upgrades to TLS and authenticates, delivers m and disconnects.
// Cancelling ctx aborts the exchange at any step. A malformed recipient is svcerr.ErrInvalid;
// a failure to connect, authenticate or deliver is svcerr.ErrUnavailable wrapping the cause;
// a cancelled ctx yields an error matching ctx.Err(). Errors never contain the password.
func (s *SMTPSender) Send(ctx context.Context, m Message) (err error) {
	to, err := netmail.ParseAddress(strings.TrimSpace(m.To))
	if err != nil {
		return svcerr.New(svcerr.ErrInvalid, "mail: recipient %q is not a valid email address", m.To)
	}
	msg := gomail.NewMsg()
	msg.FromMailAddress(&s.from)
	msg.ToMailAddress(&netmail.Address{Address: to.Address, Name: to.Name})
	msg.Subject(stripControl(m.Subject))
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	if m.HTML != "" {
		msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	}

	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mail: send to %s: %w", to.Address, err)
	}

	// The dialer remembers the raw TCP connection so that cancelling ctx can close it while
	// go-mail is blocked reading a reply, and so that it is closed on every path.
	var raw net.Conn
	var stopWatch func() bool
	defer func() {
		if stopWatch != nil {
			stopWatch()
		}
		if raw != nil {
			_ = raw.Close()
		}
	}()
	dial := func(dctx context.Context, network, _ string) (net.Conn, error) {
		dialer := s.cfg.Dial
		if dialer == nil {
			var d net.Dialer
			dialer = d.DialContext
		}
		conn, err := dialer(dctx, network, s.Addr())
		if err != nil {
			return nil, err
		}
		raw = conn
		stopWatch = context.AfterFunc(ctx, func() { _ = conn.Close() })
		if s.cfg.Encryption != EncryptionSSL {
			return conn, nil
		}
		tc := tls.Client(conn, s.tlsConf)
		if err := tc.HandshakeContext(dctx); err != nil {
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		return tc, nil
	}

	opts := append(s.opts[:len(s.opts):len(s.opts)], gomail.WithDialContextFunc(dial))
	client, err := gomail.NewClient(s.cfg.Host, opts...)
	if err != nil {
		return s.wrap(ctx, to.Address, "configure client", err)
	}
	sc, err := client.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return s.wrap(ctx, to.Address, "connect", err)
	}
	if err := client.SendWithSMTPClient(sc, msg); err != nil {
		return s.wrap(ctx, to.Address, "deliver", err)
	}
	// The server accepted the message at the end of DATA; a failing QUIT changes nothing.
	_ = client.CloseWithSMTPClient(sc)
	return nil
}

// wrap adds context to a go-mail failure, categorises it and scrubs the password.
func (s *SMTPSender) wrap(ctx context.Context, to, step string, err error) error {
	kind := svcerr.ErrUnavailable
	if ctxErr := ctx.Err(); ctxErr != nil {
		kind = ctxErr
	}
	var reply *textproto.Error
	if step == "connect" && !errors.As(err, &reply) {
		kind = errors.Join(kind, ErrConnect) // no SMTP server answered
	}
	wrapped := fmt.Errorf("mail: send to %s via %s: %s: %w: %w", to, s.Addr(), step, kind, err)
	if s.cfg.Password != "" && strings.Contains(wrapped.Error(), s.cfg.Password) {
		// Drop the original chain: unwrapping it would reveal the secret again.
		return &redactedError{msg: strings.ReplaceAll(wrapped.Error(), s.cfg.Password, "[redacted]"), kind: kind}
	}
	return wrapped
}

// ErrConnect is matched (errors.Is) by a Send error where no SMTP server answered: the
// connection was refused, cut, timed out, or what answered was not SMTP (or TLS failed).
var ErrConnect = errors.New("mail server not reached")

// redactedError carries a scrubbed message and only the failure's category.
type redactedError struct {
	msg  string
	kind error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.kind }

// stripControl replaces control characters (CR, LF, tabs …) with spaces so that a
// user-controlled value cannot break a header line.
func stripControl(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
