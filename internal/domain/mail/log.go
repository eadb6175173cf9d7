package mail

import (
	"context"
	"log/slog"
)

// LogSender is the development fallback used when no mail driver is configured: instead of
// delivering a message it logs it at warning level (the default
// log level), so the message is visible without changing log_level.
//
// The logged record contains the recipient, the subject and the full plain-text body. The
// body carries one-time links (email verification, password reset, email change), so anyone
// who can read the log can use them. That is deliberate, since it lets a developer complete
// these flows without a mail server; in production SendRedacted is used instead, which leaves
// the body out.
type LogSender struct {
	logger *slog.Logger
}

var _ Sender = (*LogSender)(nil)

// NewLog returns a LogSender writing to logger, or to slog.Default() when logger is nil.
func NewLog(logger *slog.Logger) *LogSender {
	if logger == nil {
		logger = slog.Default()
	}
	return &LogSender{logger: logger}
}

// Send logs m and always returns nil: a missing mail configuration must not make account
// operations fail.
func (s *LogSender) Send(ctx context.Context, m Message) error {
	s.logger.LogAttrs(context.WithoutCancel(ctx), slog.LevelWarn, "mail not sent: no mail driver configured, logging it instead",
		slog.String("to", m.To),
		slog.String("subject", m.Subject),
		slog.String("text", m.Text),
	)
	return nil
}

// SendRedacted logs m's recipient and subject only, never its body (which carries one-time
// links), and always returns nil: the fallback of a production deployment without a mail driver.
func (s *LogSender) SendRedacted(ctx context.Context, m Message) error {
	s.logger.LogAttrs(context.WithoutCancel(ctx), slog.LevelWarn, "mail not sent: no mail driver configured; body withheld in production",
		slog.String("to", m.To),
		slog.String("subject", m.Subject),
	)
	return nil
}
