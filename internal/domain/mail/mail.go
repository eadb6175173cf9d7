// Package mail sends the service's outgoing email: account messages (verification, password
// reset, email change), the administrator's test message and scheduled-run notifications.
//
// Callers depend on the Sender interface. The SMTP driver (SVC_MAIL_DRIVER=smtp) is SMTPSender;
// when no driver is configured the service uses LogSender, which only logs. Message builders
// (VerificationMessage, PasswordResetMessage …) produce the plain-text and HTML bodies.
package mail

import "context"

// Message is one outgoing email to a single recipient.
type Message struct {
	To      string // recipient address, e.g. "ada@example.com"
	Subject string
	Text    string // plain-text body; always sent
	HTML    string // optional HTML alternative of Text
}

// Sender delivers messages. Implementations are safe for concurrent use.
type Sender interface {
	// Send delivers m or returns why it could not. It honours ctx cancellation.
	Send(ctx context.Context, m Message) error
}
