package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Mail states (mail_outbox.state).
const (
	MailPending   = "pending"
	MailDelivered = "delivered"
	MailFailed    = "failed" // given up after MailBackoff's last attempt; kept for operators
)

// Kinds of mail (NewMail.Kind), for logs and operators.
const (
	MailKindAccount      = "account"       // verification, password reset, email change
	MailKindScheduledRun = "scheduled_run" // a scheduled run finished
	MailKindNotification = "notification"  // a notification the user subscribed to by email
)

// Limits of a queued mail.
const (
	MaxMailRecipientLen = 320
	MaxMailSubjectLen   = 998 // one header line (RFC 5322)
	MaxMailBodyLen      = 1 << 20
)

// MailBackoff is the retry schedule of the mail outbox: the callback schedule (30 s, 1, 2, 4, 8
// minutes) continued, because an SMTP server is more often down for a while than a callback
// receiver gone for good: 11 attempts over about eight and a half hours, then the mail is
// kept as failed.
var MailBackoff = Backoff{Delays: []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute,
	8 * time.Minute, 16 * time.Minute, 32 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour}}

// NewMail is one message to enqueue for a single recipient. HTML is optional; Kind is one of
// the MailKind values or another short lowercase word ("test").
type NewMail struct {
	To, Subject, Text string
	HTML              string
	Kind              string
}

// Mail is one message of the outbox. Attempts counts the failed attempts so far; LeaseUntil,
// on a claimed mail, is the claim's fencing token for FinishMail.
type Mail struct {
	ID            int64
	Kind          string
	To            string
	Subject       string
	Text          string
	HTML          string
	State         string
	Attempts      int
	NextAttemptAt time.Time
	LeaseUntil    *time.Time
	LastError     *string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	FinishedAt    *time.Time
}

type mailRow struct {
	ID            int64
	Kind          string
	Recipient     string
	Subject       string
	TextBody      string
	HTMLBody      string `gorm:"column:html_body"`
	State         string
	Attempts      int
	NextAttemptAt time.Time
	LeaseUntil    *time.Time
	LastError     *string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	FinishedAt    *time.Time
}

func (mailRow) TableName() string { return "mail_outbox" }

func (r *mailRow) toMail() Mail {
	return Mail{
		ID: r.ID, Kind: r.Kind, To: r.Recipient, Subject: r.Subject, Text: r.TextBody, HTML: r.HTMLBody, State: r.State,
		Attempts: r.Attempts, NextAttemptAt: r.NextAttemptAt.UTC(), LeaseUntil: utcPtr(r.LeaseUntil), LastError: r.LastError,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), FinishedAt: utcPtr(r.FinishedAt),
	}
}

// mailOutbox is the mail outbox: the shared machinery over mail_outbox.
func mailOutbox() outbox {
	return outbox{table: "mail_outbox", noun: "mail", done: MailDelivered, gaveUp: MailFailed, schedule: MailBackoff}
}

// check validates m before it is queued: a mail that cannot be sent must fail its cause now,
// not the dispatcher later. It stays in the store: most mails are built inside the store
// transaction of their cause (notifications, account tokens), where no service sees them
// before the write.
func (m *NewMail) check() error {
	m.To = strings.TrimSpace(m.To)
	if m.To == "" || strings.ContainsAny(m.To, "\r\n") {
		return invalidf("mail recipient is required and must be one line")
	}
	if err := checkText("mail recipient", m.To, MaxMailRecipientLen); err != nil {
		return err
	}
	if strings.ContainsAny(m.Subject, "\r\n") {
		return invalidf("mail subject must be one line")
	}
	if err := checkText("mail subject", m.Subject, MaxMailSubjectLen); err != nil {
		return err
	}
	if err := checkText("mail text", m.Text, MaxMailBodyLen); err != nil {
		return err
	}
	if err := checkText("mail HTML", m.HTML, MaxMailBodyLen); err != nil {
		return err
	}
	if m.Kind == "" || len(m.Kind) > 32 || strings.Trim(m.Kind, "abcdefghijklmnopqrstuvwxyz_") != "" {
		return invalidf("mail kind must be 1 to 32 lowercase letters or underscores")
	}
	return nil
}

// EnqueueMail queues m for the mail dispatcher, due at once, in its own transaction: for
// causes that are not a store transaction (or whose store call offers no mail). Store code
// that changes state a mail reports uses enqueueMailTx in that transaction instead, so the
// mail commits with its cause or not at all. Errors: ErrInvalid (empty or multi-line
// recipient or subject, oversize or invalid text, bad kind).
func (s *Outboxes) EnqueueMail(ctx context.Context, m NewMail) error {
	if err := m.check(); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *gorm.DB) error { return s.enqueueMailTx(tx, m) })
}

// enqueueMailTx queues m, due at once, in tx (the transaction of the mail's cause). The
// dispatcher sees it after tx commits, woken by the commit's listeners (Commit.MailQueued). Errors: ErrInvalid as EnqueueMail.
func (s *Store) enqueueMailTx(tx *gorm.DB, m NewMail) error {
	if err := m.check(); err != nil {
		return err
	}
	now := s.now()
	row := mailRow{Kind: m.Kind, Recipient: m.To, Subject: m.Subject, TextBody: m.Text, HTMLBody: m.HTML,
		State: MailPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
	if err := tx.Create(&row).Error; err != nil {
		return fmt.Errorf("enqueue %s mail: %w", m.Kind, err)
	}
	if c := createdFrom(tx); c != nil {
		c.MailQueued = true
	}
	return nil
}

// ClaimMails leases up to limit due pending mails (next_attempt_at <= now, lease free or
// expired), oldest due first, until now+lease: the claim shared with the callback outbox, so
// concurrent dispatchers (processes) never receive the same mail while its lease runs.
// workerID names the claimer in errors only. Errors: ErrInvalid (empty or oversize worker id,
// lease not positive).
func (s *Outboxes) ClaimMails(ctx context.Context, workerID string, limit int, lease time.Duration) ([]Mail, error) {
	return claimOutbox(ctx, s.Store, mailOutbox(), workerID, limit, lease,
		func(r *mailRow) (time.Time, int64) { return r.NextAttemptAt, r.ID },
		func(_ *gorm.DB, rows []mailRow) ([]Mail, error) {
			out := make([]Mail, len(rows))
			for i := range rows {
				out[i] = rows[i].toMail()
			}
			return out, nil
		})
}

// FinishMail records the outcome of an attempt at mail id claimed with lease (the claimed
// mail's LeaseUntil, a fencing token: a dispatcher whose lease expired and was taken over
// writes nothing). ok: delivered. Otherwise attempts grows by one and errText becomes
// last_error; the mail is due again after MailBackoff's delay, or kept as failed after the
// last attempt (gaveUp reports that, for the log). Errors: ErrNotFound "mail not found",
// ErrInvalidState when the mail is no longer pending under that lease.
func (s *Outboxes) FinishMail(ctx context.Context, id int64, lease time.Time, ok bool, errText string) (gaveUp bool, err error) {
	err = s.tx(ctx, func(tx *gorm.DB) error {
		var ferr error
		gaveUp, ferr = mailOutbox().finish(tx, s.now(), id, lease, ok, errText)
		return ferr
	})
	return gaveUp, err
}

// Mails returns the outbox's mails to an address (every address when to is ""), oldest first,
// for tests and operators. Errors: none beyond the database's own.
func (s *Outboxes) Mails(ctx context.Context, to string) ([]Mail, error) {
	var rows []mailRow
	q := s.conn(ctx).Order("id")
	if to != "" {
		q = q.Where("recipient = ?", strings.TrimSpace(to))
	}
	if err := q.Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("mails: %w", err))
	}
	out := make([]Mail, len(rows))
	for i := range rows {
		out[i] = rows[i].toMail()
	}
	return out, nil
}
