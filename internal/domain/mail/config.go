package mail

import (
	"context"
	"errors"
	"fmt"
	netmail "net/mail"
	"strings"
	"time"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/platform/secret"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// Stored-setting keys of the mail configuration (the file keys of internal/platform/config). An
// administrator's save writes all of them, so the stored layer overrides the file and the
// environment as one block; mail_password only when the request says so.
const (
	keyDriver     = "mail_driver"
	keyHost       = "mail_host"
	keyPort       = "mail_port"
	keyUsername   = "mail_username"
	keyPassword   = "mail_password"
	keyEncryption = "mail_encryption"
	keyFrom       = "mail_from"
	keyFromName   = "mail_from_name"
)

// Drivers as the API names them. The configuration spells "log" as mail_driver none (or
// empty): every value but smtp only logs.
const (
	DriverSMTP = "smtp"
	DriverLog  = "log"
)

// TestTimeout bounds a test message (connecting and each SMTP step), well under the HTTP write
// timeout, so an unreachable server is reported rather than cutting the response.
const TestTimeout = 20 * time.Second

// SettingsStore is the stored-settings layer the configuration is saved to (store.Store).
type SettingsStore interface {
	Settings(ctx context.Context) (map[string]any, error)
	PutSettings(ctx context.Context, values map[string]any) error
	SettingUpdatedAt(ctx context.Context, key string) (*time.Time, error)
}

// EffectiveConfig is the mail configuration in force (stored settings over environment over
// file over defaults), without the password.
type EffectiveConfig struct {
	Driver      string // DriverSMTP or DriverLog
	Host        string
	Port        int
	Username    string
	PasswordSet bool
	Encryption  string // EncryptionNone, EncryptionTLS or EncryptionSSL
	From        string
	FromName    string
	UpdatedAt   *time.Time // when an administrator last saved it; nil when never
}

// Update is an administrator's new configuration. Password nil keeps the current one, ""
// clears it.
type Update struct {
	Driver     string
	Host       string
	Port       int
	Username   string
	Password   *string
	Encryption string
	From       string
	FromName   string
}

// TestResult is the outcome of a test message. Error, when Sent is false, is the mail server's
// reply, the screen's refusal, or ConnectFailed for every connection failure; Detail is the
// cause for the service log. Neither contains the password.
type TestResult struct {
	Sent   bool
	To     string
	Error  string
	Detail string
}

// ConfigService reads and saves the mail configuration as stored settings and sends test
// messages. Saving goes through the configuration loader's stored layer, so every mail the
// service sends (configuredMailer reads the loader at each message) uses it at once.
type ConfigService struct {
	store SettingsStore
	cfg   *config.Loader
	box   *secret.Box
	// Timeout bounds a test message; zero means TestTimeout.
	Timeout time.Duration
	// InsecureSkipVerify is passed to the SMTP sender of test messages (tests only).
	InsecureSkipVerify bool
	// Net is the outbound screen's base (resolver, exemptions) for a saved mail host (ScreenSMTP).
	Net netguard.Options
}

// NewConfigService returns the service over the settings store, the loader whose stored layer
// it updates and the box sealing the password at rest.
func NewConfigService(store SettingsStore, cfg *config.Loader, box *secret.Box) *ConfigService {
	return &ConfigService{store: store, cfg: cfg, box: box}
}

// Get returns the effective configuration to an administrator (by). Errors: ErrForbidden (by
// is no administrator), ErrUnavailable when the configuration cannot be resolved;
// uncategorised store failures.
func (s *ConfigService) Get(ctx context.Context, by *store.User) (*EffectiveConfig, error) {
	if err := access.Administrator(by); err != nil {
		return nil, err
	}
	c := s.cfg.Current()
	if c == nil {
		return nil, svcerr.New(svcerr.ErrUnavailable, "the configuration cannot be read")
	}
	at, err := s.store.SettingUpdatedAt(ctx, keyDriver)
	if err != nil {
		return nil, err
	}
	return effective(c, at), nil
}

func effective(c *config.Config, at *time.Time) *EffectiveConfig {
	e := &EffectiveConfig{Driver: DriverLog, Host: c.MailHost, Port: c.MailPort, Username: c.MailUsername,
		PasswordSet: c.MailPassword != "", Encryption: c.MailEncryption, From: c.MailFrom, FromName: c.MailFromName,
		UpdatedAt: at}
	if c.MailConfigured() {
		e.Driver = DriverSMTP
	}
	if e.Encryption == EncryptionAuto {
		// Opportunistic STARTTLS has no name in the API; the nearest is tls, and saving it back
		// makes the upgrade mandatory rather than turning encryption off.
		e.Encryption = EncryptionTLS
	}
	return e
}

// Validate checks u the way Update does, reporting the first problem. Errors: ErrInvalid with
// a message naming the field (and for ssl on 587, the pairing rule).
func (u *Update) Validate() error {
	invalid := func(format string, args ...any) error {
		return svcerr.New(svcerr.ErrInvalid, format, args...)
	}
	u.Host, u.From = strings.TrimSpace(u.Host), strings.TrimSpace(u.From)
	u.Username, u.FromName = strings.TrimSpace(u.Username), strings.TrimSpace(u.FromName)
	switch u.Driver {
	case DriverSMTP, DriverLog:
	default:
		return invalid("driver %q is not supported (use smtp or log)", u.Driver)
	}
	switch u.Encryption {
	case EncryptionNone, EncryptionTLS, EncryptionSSL:
	default:
		return invalid("encryption %q is not supported (use none, tls or ssl)", u.Encryption)
	}
	if u.Port < 1 || u.Port > limits.MaxPort {
		return invalid("port %d is out of range 1-%d", u.Port, limits.MaxPort)
	}
	if u.Encryption == EncryptionSSL && u.Port == PortSubmission {
		return invalid("encryption ssl cannot be used with port 587: port 587 pairs with tls (STARTTLS after the greeting), port 465 with ssl (immediate TLS)")
	}
	if u.Encryption == EncryptionTLS && u.Port == PortSMTPS {
		return invalid("encryption tls cannot be used with port 465: port 465 pairs with ssl (immediate TLS), port 587 with tls (STARTTLS after the greeting)")
	}
	if u.Host != "" && !validHost(u.Host) {
		return invalid("host %q must be a host name only, without scheme, port or path (the port is a separate field)", u.Host)
	}
	if u.Driver == DriverSMTP && u.Host == "" {
		return invalid("host is required when driver is smtp")
	}
	a, err := netmail.ParseAddress(u.From)
	if err != nil || a.Address != u.From || a.Name != "" {
		return invalid("from_address %q is not a valid email address (put the display name in from_name)", u.From)
	}
	if strings.ContainsFunc(u.FromName+u.Username, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return invalid("from_name and username must not contain control characters")
	}
	return nil
}

// validHost accepts a host name or IP address: no scheme, port, path, user or spaces.
func validHost(h string) bool {
	if len(h) > limits.HostLen || strings.ContainsAny(h, "/:@?#[] \t\r\n\\") {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
	}
	return true
}

// Update validates an administrator's (by) u, applies it to the loader's stored layer
// (validating the whole configuration with it) and stores it as administrator settings, the
// password sealed. Nothing is sent. On a storage failure the previous layer is restored. A
// stored password that cannot be opened is dropped from the layer (see UnsealStored), not an
// error. Errors: ErrForbidden (by is no administrator), ErrInvalid (u breaks a rule, or the
// configuration with it would be invalid); uncategorised store or sealing failures.
func (s *ConfigService) Update(ctx context.Context, by *store.User, u Update) (*EffectiveConfig, error) {
	if err := access.Administrator(by); err != nil {
		return nil, err
	}
	if err := u.Validate(); err != nil {
		return nil, err
	}
	driver := "none"
	if u.Driver == DriverSMTP {
		driver = DriverSMTP
	}
	put := map[string]any{keyDriver: driver, keyHost: u.Host, keyPort: u.Port, keyUsername: u.Username,
		keyEncryption: u.Encryption, keyFrom: u.From, keyFromName: u.FromName}
	var plainPassword *string
	if u.Password != nil {
		plainPassword = u.Password
		put[keyPassword] = ""
		if *u.Password != "" {
			sealed, err := s.box.Seal([]byte(*u.Password))
			if err != nil {
				return nil, fmt.Errorf("seal the mail password: %w", err)
			}
			put[keyPassword] = sealed
		}
	}

	// One read-modify-write of the stored layer at a time, shared with the runtime settings.
	err := s.cfg.EditStored(func() error {
		raw, err := s.store.Settings(ctx)
		if err != nil {
			return err
		}
		prev, _ := UnsealStored(raw, s.box) // an unopenable password is dropped, as at start-up
		next := make(map[string]any, len(prev)+len(put))
		for k, v := range prev {
			next[k] = v
		}
		for k, v := range put {
			next[k] = v
		}
		if plainPassword != nil {
			next[keyPassword] = *plainPassword
		}
		if err := s.cfg.SetStored(next); err != nil {
			var ve *config.ValidationError
			if errors.As(err, &ve) {
				return svcerr.New(svcerr.ErrInvalid, "%s", strings.Join(ve.Problems, "; "))
			}
			return err
		}
		if err := s.store.PutSettings(ctx, put); err != nil {
			if rerr := s.cfg.SetStored(prev); rerr != nil {
				err = errors.Join(err, rerr)
			}
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, by)
}

// UnsealStored returns a copy of stored settings (as store.Settings reads them) with a sealed
// mail_password opened, ready for config.Loader.SetStored. A password that cannot be opened
// (master key changed, value tampered with) is left out, so the file or environment password
// applies, and reported in the error; the returned map is usable either way.
func UnsealStored(stored map[string]any, box *secret.Box) (map[string]any, error) {
	out := make(map[string]any, len(stored))
	for k, v := range stored {
		out[k] = v
	}
	v, ok := out[keyPassword].(string)
	if !ok || v == "" {
		return out, nil
	}
	plain, err := box.Open(v)
	if err != nil {
		delete(out, keyPassword)
		return out, fmt.Errorf("stored mail_password cannot be opened (was the master key changed?); it is ignored: %w", err)
	}
	out[keyPassword] = string(plain)
	return out, nil
}

// SendTest sends an administrator's (by) test message to "to" through SMTP with the effective
// configuration and reports the outcome; delivery failures are part of the result, not errors.
// With the log driver nothing is sent and the result says why. Errors: ErrForbidden (by is no
// administrator), ErrInvalid (to is not an address); ErrUnavailable (the configuration cannot
// be read).
func (s *ConfigService) SendTest(ctx context.Context, by *store.User, to string) (*TestResult, error) {
	if err := access.Administrator(by); err != nil {
		return nil, err
	}
	to = strings.TrimSpace(to)
	if a, err := netmail.ParseAddress(to); err != nil || a.Address != to {
		return nil, svcerr.New(svcerr.ErrInvalid, "to %q is not a valid email address", to)
	}
	c := s.cfg.Current()
	if c == nil {
		return nil, svcerr.New(svcerr.ErrUnavailable, "the configuration cannot be read")
	}
	res := &TestResult{To: to}
	if !c.MailConfigured() {
		res.Error = "mail driver is log: messages are only written to the service log; set driver smtp to send"
		return res, nil
	}
	timeout := s.Timeout
	if timeout == 0 {
		timeout = TestTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	dial, err := ScreenSMTP(ctx, s.cfg.SourceOf(keyHost), c, s.Net)
	var sender *SMTPSender
	if err == nil {
		sender, err = NewSMTP(SMTPConfig{Host: c.MailHost, Port: c.MailPort, Username: c.MailUsername,
			Password: c.MailPassword, Encryption: c.MailEncryption, From: c.MailFrom, FromName: c.MailFromName,
			Timeout: timeout, Dial: dial, InsecureSkipVerify: s.InsecureSkipVerify})
	}
	if err == nil {
		err = sender.Send(ctx, TestMessage(to))
	}
	if err != nil {
		res.Error = scrub(err.Error(), c.MailPassword)
		res.Detail = res.Error
		if errors.Is(err, ErrConnect) {
			res.Error = ConnectFailed
		}
		return res, nil
	}
	res.Sent = true
	return res, nil
}

// scrub removes the password from an error text (the SMTP sender already does; this guards
// configuration errors too).
func scrub(msg, password string) string {
	if password != "" {
		msg = strings.ReplaceAll(msg, password, "[redacted]")
	}
	return msg
}
