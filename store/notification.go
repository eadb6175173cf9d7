package store

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/internal/vocab/text"
)

// Notification kinds (docs/design.md "Scheduled runs, prompt templates, notifications").
const (
	NotifyTaskCompleted         = "task_completed"
	NotifyTaskFailed            = "task_failed"
	NotifyPendingApproval       = "pending_approval"
	NotifyAwaitingInput         = "awaiting_input"
	NotifyScheduledRunCompleted = "scheduled_run_completed"
	NotifyTaskOrphaned          = "task_orphaned"
	NotifyTaskRetryQueued       = "task_retry_queued"
)

// NotificationKinds lists every kind.
var NotificationKinds = []string{NotifyTaskCompleted, NotifyTaskFailed, NotifyPendingApproval, NotifyAwaitingInput,
	NotifyScheduledRunCompleted, NotifyTaskOrphaned, NotifyTaskRetryQueued}

// Subscription target types.
const (
	SubscribeAgent     = "agent"
	SubscribePrincipal = "principal"
)

// Notification is one in-app notification of a user.
type Notification struct {
	ID        string
	UserID    int64
	Kind      string
	Title     string
	Body      string
	TaskID    *int64
	AgentID   *int64
	ReadAt    *time.Time
	CreatedAt time.Time
	// Email is true when the recipient asked for this kind by email too (a subscription with
	// email on); the notification's mail is queued with it.
	Email bool `gorm:"-"`
}

func (Notification) TableName() string { return "notifications" }

// NotificationSubscription is a user's opt-in to the notifications of an agent or a principal.
type NotificationSubscription struct {
	ID         string
	UserID     int64
	TargetType string
	TargetID   int64
	Kinds      []string `gorm:"-"` // empty: every kind
	Email      bool
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

type subscriptionRow struct {
	ID         string
	UserID     int64
	TargetType string
	TargetID   int64
	Kinds      string
	Email      bool
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

func (subscriptionRow) TableName() string { return "notification_subscriptions" }

func (r subscriptionRow) toSubscription() NotificationSubscription {
	s := NotificationSubscription{ID: r.ID, UserID: r.UserID, TargetType: r.TargetType, TargetID: r.TargetID,
		Email: r.Email, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), Kinds: []string{}}
	_ = json.Unmarshal([]byte(r.Kinds), &s.Kinds)
	return s
}

// wants reports whether the subscription covers kind.
func (r subscriptionRow) wants(kind string) bool {
	var kinds []string
	_ = json.Unmarshal([]byte(r.Kinds), &kinds)
	return len(kinds) == 0 || slices.Contains(kinds, kind)
}

// newNotificationID is ntf_ followed by 26 lowercase base32 characters (128 random bits); a
// subscription id starts with nsb_.
func newNotificationID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// notificationKind is the kind a task's new state reports ("" for none): sub-agent tasks report
// to their parent's flow, not to the user.
func notificationKind(t *taskRow) string {
	if t.ParentTaskID != nil {
		return ""
	}
	switch t.Status {
	case taskstate.Completed:
		if _, scheduled := scheduledRunID(t.Data); scheduled {
			return NotifyScheduledRunCompleted
		}
		return NotifyTaskCompleted
	case taskstate.Failed:
		if t.ErrorCode != nil && *t.ErrorCode == taskstate.CodeOrphaned {
			return NotifyTaskOrphaned
		}
		return NotifyTaskFailed
	case taskstate.PendingApproval:
		return NotifyPendingApproval
	case taskstate.AwaitingInput:
		return NotifyAwaitingInput
	}
	return ""
}

// DataScheduledRunID is the key of a task's data naming the scheduled run that started it.
const DataScheduledRunID = "scheduled_run_id"

// scheduledRunID reads data.scheduled_run_id (DataScheduledRunID).
func scheduledRunID(data string) (int64, bool) {
	var d map[string]json.RawMessage
	if json.Unmarshal([]byte(data), &d) != nil || d[DataScheduledRunID] == nil {
		return 0, false
	}
	var id json.Number
	if json.Unmarshal(d[DataScheduledRunID], &id) != nil {
		return 0, false
	}
	n, err := id.Int64()
	return n, err == nil
}

// notificationText is the title and body of kind for task t of the named agent. Only the
// task's owner may read the task: for anyone else (owner false: a subscriber) the text names
// the agent, never the task's prompt or error.
func notificationText(kind, agent string, t *taskRow, owner bool) (string, string) {
	task := fmt.Sprintf("Task %q", text.Clip(t.Prompt, 80))
	why, answer := "", "your answer"
	if t.ErrorMessage != nil {
		why = ": " + text.Clip(*t.ErrorMessage, 200)
	}
	if !owner {
		task, why, answer = "A task of "+agent, "", "an answer"
		if kind == NotifyScheduledRunCompleted {
			task = "A scheduled run of " + agent
		}
	}
	switch kind {
	case NotifyTaskCompleted:
		return agent + " finished", task + " completed."
	case NotifyScheduledRunCompleted:
		return agent + ": scheduled run finished", task + " completed."
	case NotifyTaskFailed:
		return agent + " failed", task + " failed" + why + "."
	case NotifyTaskOrphaned:
		return agent + " lost its worker", task + " failed" + why + "."
	case NotifyPendingApproval:
		return agent + " needs approval", task + " waits for approval of its tool calls."
	case NotifyAwaitingInput:
		return agent + " has a question", task + " waits for " + answer + "."
	case NotifyTaskRetryQueued:
		return agent + " will retry", task + " failed" + why + " and is retried automatically."
	}
	return agent, task
}

// notifyRow is notifyTasks for a task row tx has just written (and holds as written).
func (s *Store) notifyRow(tx *gorm.DB, now time.Time, t *taskRow) error {
	if kind := notificationKind(t); kind != "" {
		if err := s.notify(tx, now, t, kind); err != nil {
			return err
		}
	}
	return s.scheduledRunMail(tx, t)
}

// notify creates notifications of kind about task t: for its user always, and for every user
// whose subscription to the task's agent or its principal covers kind and who can still see
// that principal. Created notifications are handed to the store's notification hook after the
// transaction commits.
func (s *Store) notify(tx *gorm.DB, now time.Time, t *taskRow, kind string) error {
	// The agent's name and principal and the subscriptions to either, in one read (by hand:
	// it runs at the end of every task; see store/rawsql.go).
	type subRow struct {
		Name        string
		PrincipalID int64
		UserID      *int64
		Kinds       *string
		Email       *bool
	}
	rows, err := queryRows(tx, func(r *subRow) []any { return []any{&r.Name, &r.PrincipalID, &r.UserID, &r.Kinds, &r.Email} },
		"SELECT agents.name, agents.principal_id, s.user_id, s.kinds, s.email FROM agents "+
			"LEFT JOIN notification_subscriptions s ON (s.target_type = ? AND s.target_id = agents.id) OR "+
			"(s.target_type = ? AND s.target_id = agents.principal_id) WHERE agents.id = ? ORDER BY s.user_id",
		SubscribeAgent, SubscribePrincipal, t.AgentID)
	if err != nil {
		return fmt.Errorf("task %d: notify: %w", t.ID, err)
	}
	if len(rows) == 0 {
		return fmt.Errorf("task %d: notify: agent %d: %w", t.ID, t.AgentID, gorm.ErrRecordNotFound)
	}
	agent := rows[0]
	recipients := []int64{t.UserID}
	email := map[int64]bool{}
	for _, r := range rows {
		if r.UserID == nil {
			continue // no subscription
		}
		sub := subscriptionRow{UserID: *r.UserID, Kinds: deref(r.Kinds), Email: r.Email != nil && *r.Email}
		if !sub.wants(kind) {
			continue
		}
		if sub.UserID != t.UserID {
			ok, err := canSeePrincipal(tx, sub.UserID, agent.PrincipalID)
			if err != nil {
				return err
			}
			if !ok {
				continue // the target became invisible: the subscription stops delivering
			}
		}
		if !slices.Contains(recipients, sub.UserID) {
			recipients = append(recipients, sub.UserID)
		}
		email[sub.UserID] = email[sub.UserID] || sub.Email
	}
	for _, uid := range recipients {
		// A notification carries only what its recipient may read: a task only its owner.
		title, body := notificationText(kind, agent.Name, t, uid == t.UserID)
		id, agentID := t.ID, t.AgentID
		taskID := &id
		if uid != t.UserID {
			taskID = nil
		}
		n := Notification{ID: newNotificationID("ntf_"), UserID: uid, Kind: kind, Title: title, Body: body,
			TaskID: taskID, AgentID: &agentID, CreatedAt: now, Email: email[uid]}
		if _, err := rawExec(tx, "INSERT INTO notifications (id, user_id, kind, title, body, task_id, agent_id, read_at, created_at) "+
			"VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)", n.ID, n.UserID, n.Kind, n.Title, n.Body, n.TaskID, n.AgentID, n.CreatedAt); err != nil {
			return fmt.Errorf("task %d: create notification: %w", t.ID, err)
		}
		if n.Email {
			if err := s.mailNotification(tx, &n); err != nil {
				return err
			}
		}
		if c := createdFrom(tx); c != nil {
			c.notifications = append(c.notifications, n)
		}
	}
	return nil
}

// mailNotification queues the mail of notification n, in the transaction that created it.
func (s *Store) mailNotification(tx *gorm.DB, n *Notification) error {
	var to string
	if err := tx.Table("users").Select("email").Where("id = ?", n.UserID).Row().Scan(&to); err != nil {
		return fmt.Errorf("notification mail: %w", err)
	}
	if c := createdFrom(tx); c != nil {
		c.mailed = true
	}
	return s.enqueueMailTx(tx, NewMail{To: to, Subject: n.Title, Text: n.Body + "\n", Kind: MailKindNotification})
}

// ScheduledRunOutcome is a scheduled run's task that has just finished for good, for the mail
// to its owner.
type ScheduledRunOutcome struct {
	TaskID    int64
	To        string // the owner's address
	AgentName string
	RunName   string // "" when the run was deleted meanwhile
	Failed    bool
	Detail    string // the answer, or "CODE: message" of the failure
}

// OnScheduledRunFinished sets the builder of the mail that tells the owner a scheduled run's
// task finished (COMPLETED, or FAILED with no automatic retry to come); it answers false when
// no mail is due (notifications_email_enabled off). The mail is queued in the transaction of
// the transition, so a crash never loses it and a retried step never sends it twice.
func (s *Store) OnScheduledRunFinished(f func(o ScheduledRunOutcome) (NewMail, bool)) {
	s.onScheduledRun = f
}

// OnMailQueued sets the hook told after a transaction that queued a mail committed (the mail
// dispatcher's Notify).
func (s *Store) OnMailQueued(f func()) { s.onMailQueued = f }

// scheduledRunMail queues, in tx, the mail of scheduled-run task t that has just finished for
// good.
func (s *Store) scheduledRunMail(tx *gorm.DB, t *taskRow) error {
	runID, scheduled := scheduledRunID(t.Data)
	if s.onScheduledRun == nil || !scheduled || (t.Status != taskstate.Completed && t.Status != taskstate.Failed) {
		return nil
	}
	var agent struct {
		Name       string
		MaxRetries int
	}
	if err := tx.Table("agents").Select("name", "max_retries").Where("id = ?", t.AgentID).Take(&agent).Error; err != nil {
		return fmt.Errorf("task %d: scheduled run mail: %w", t.ID, err)
	}
	o := ScheduledRunOutcome{TaskID: t.ID, AgentName: agent.Name, Failed: t.Status == taskstate.Failed}
	if o.Failed {
		code := deref(t.ErrorCode)
		if taskstate.WillRetry(code, t.RetryCount, agent.MaxRetries) {
			return nil // the retry's outcome is mailed instead
		}
		o.Detail = code + ": " + deref(t.ErrorMessage)
	} else {
		o.Detail = deref(t.Answer)
	}
	if err := tx.Table("users").Select("email").Where("id = ?", t.UserID).Row().Scan(&o.To); err != nil {
		return fmt.Errorf("task %d: scheduled run mail: %w", t.ID, err)
	}
	var run struct{ Name string }
	if err := tx.Table("scheduled_runs").Select("name").Where("id = ? AND agent_id = ?", runID, t.AgentID).Take(&run).Error; err == nil {
		o.RunName = run.Name
	} else if !errors.Is(err, gorm.ErrRecordNotFound) {
		return fmt.Errorf("task %d: scheduled run mail: %w", t.ID, err)
	}
	m, due := s.onScheduledRun(o)
	if !due {
		return nil
	}
	if c := createdFrom(tx); c != nil {
		c.mailed = true
	}
	return s.enqueueMailTx(tx, m)
}

// canSeePrincipal reports whether user uid may see the resources of principal p: theirs, a
// group they belong to, or any as an administrator.
func canSeePrincipal(tx *gorm.DB, uid, p int64) (bool, error) {
	var n int64
	err := tx.Raw(`SELECT COUNT(*) FROM users u WHERE u.id = ? AND (u.principal_id = ?
		OR EXISTS (SELECT 1 FROM user_roles r WHERE r.user_id = u.id AND r.role = ?)
		OR EXISTS (SELECT 1 FROM group_members m JOIN principal_groups g ON g.id = m.group_id
		           WHERE m.user_id = u.id AND g.principal_id = ?))`, uid, p, RoleAdmin, p).Scan(&n).Error
	if err != nil {
		return false, fmt.Errorf("check visibility: %w", err)
	}
	return n > 0, nil
}

// createdKey carries, in a transaction's context, what it created for after the commit.
type createdKey struct{}

type created struct {
	notifications  []Notification
	mailed         bool           // a mail was queued: wake the mail dispatcher after the commit
	eventTasks     []int64        // tasks that got events: wake their event streams after the commit
	queued         bool           // a task became QUEUED: wake the worker daemon after the commit
	versionsBumped bool           // a version was bumped: re-read them after the commit
	transitions    []transitioned // status changes: logged after the commit
}

func withCreated(ctx context.Context, c *created) context.Context {
	return context.WithValue(ctx, createdKey{}, c)
}

func createdFrom(tx *gorm.DB) *created {
	if tx.Statement == nil || tx.Statement.Context == nil {
		return nil
	}
	c, _ := tx.Statement.Context.Value(createdKey{}).(*created)
	return c
}

// OnNotifications sets the hook that receives the notifications a transaction created, once it
// committed (the push channel, notification mails). Set it while the service is assembled.
func (s *Store) OnNotifications(f func(ctx context.Context, ns []Notification)) { s.onNotify = f }

// NotificationQuery pages a user's notifications.
type NotificationQuery struct {
	UserID        int64
	Unread        *bool // nil: all; true: unread only; false: read only
	Page, PerPage int
}

// Notifications returns one page of q.UserID's notifications, newest first.
func (s *Store) Notifications(ctx context.Context, q NotificationQuery) ([]Notification, error) {
	out := []Notification{}
	limit, offset, ok := pageWindow(q.Page, q.PerPage)
	if !ok {
		return out, nil
	}
	db := s.conn(ctx).Where("user_id = ?", q.UserID)
	if q.Unread != nil {
		if *q.Unread {
			db = db.Where("read_at IS NULL")
		} else {
			db = db.Where("read_at IS NOT NULL")
		}
	}
	if err := db.Order("created_at DESC").Order("id DESC").Limit(limit).Offset(offset).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list notifications: %w", err)
	}
	for i := range out {
		normNotification(&out[i])
	}
	return out, nil
}

// UnreadNotifications counts userID's unread notifications.
func (s *Store) UnreadNotifications(ctx context.Context, userID int64) (int64, error) {
	var n int64
	err := s.conn(ctx).Model(&Notification{}).Where("user_id = ? AND read_at IS NULL", userID).Count(&n).Error
	return n, err
}

func normNotification(n *Notification) {
	n.CreatedAt = n.CreatedAt.UTC()
	if n.ReadAt != nil {
		r := n.ReadAt.UTC()
		n.ReadAt = &r
	}
}

func notificationNotFound() error { return svcerr.New(svcerr.ErrNotFound, "notification not found") }

// MarkNotificationRead sets read_at of userID's notification id (kept when already read) and
// returns it. Errors: ErrNotFound for an id that is not the user's.
func (s *Store) MarkNotificationRead(ctx context.Context, userID int64, id string) (*Notification, error) {
	return inTx(ctx, s, func(tx *gorm.DB) (*Notification, error) {
		var n Notification
		err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Where("id = ? AND user_id = ?", id, userID).Take(&n).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, notificationNotFound()
		}
		if err != nil {
			return nil, err
		}
		if n.ReadAt == nil {
			now := s.now()
			if err := tx.Model(&Notification{}).Where("id = ?", id).Update("read_at", now).Error; err != nil {
				return nil, err
			}
			n.ReadAt = &now
		}
		normNotification(&n)
		return &n, nil
	})
}

// MarkAllNotificationsRead marks every unread notification of userID read and returns how
// many changed.
func (s *Store) MarkAllNotificationsRead(ctx context.Context, userID int64) (int64, error) {
	res := s.conn(ctx).Model(&Notification{}).Where("user_id = ? AND read_at IS NULL", userID).Update("read_at", s.now())
	return res.RowsAffected, res.Error
}

// DeleteNotification deletes userID's notification id. Errors: ErrNotFound.
func (s *Store) DeleteNotification(ctx context.Context, userID int64, id string) error {
	res := s.conn(ctx).Where("id = ? AND user_id = ?", id, userID).Delete(&Notification{})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return notificationNotFound()
	}
	return nil
}

// DeleteNotifications deletes every notification of userID.
func (s *Store) DeleteNotifications(ctx context.Context, userID int64) error {
	return s.conn(ctx).Where("user_id = ?", userID).Delete(&Notification{}).Error
}

// DeleteReadNotificationsBefore removes read notifications read before t (retention) and
// returns how many.
func (s *Store) DeleteReadNotificationsBefore(ctx context.Context, t time.Time) (int64, error) {
	res := s.conn(ctx).Where("read_at IS NOT NULL AND read_at < ?", normTime(t)).Delete(&Notification{})
	return res.RowsAffected, res.Error
}

// Subscriptions returns userID's subscriptions, oldest first.
func (s *Store) Subscriptions(ctx context.Context, userID int64) ([]NotificationSubscription, error) {
	var rows []subscriptionRow
	if err := s.conn(ctx).Where("user_id = ?", userID).Order("created_at").Order("id").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]NotificationSubscription, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.toSubscription())
	}
	return out, nil
}

// Subscribe creates userID's subscription to the target, or replaces the kinds and email flag
// of the existing one; created says which. The caller has checked the target is visible.
// Errors: ErrInvalid (unknown target type or kind).
func (s *Store) Subscribe(ctx context.Context, sub NotificationSubscription) (out NotificationSubscription, created bool, err error) {
	if sub.TargetType != SubscribeAgent && sub.TargetType != SubscribePrincipal {
		return out, false, invalidf("target_type must be agent or principal")
	}
	kinds := []string{}
	for _, k := range sub.Kinds {
		if !slices.Contains(NotificationKinds, k) {
			return out, false, invalidf("unknown notification kind %q", k)
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	enc, _ := json.Marshal(kinds)
	type result struct {
		row     subscriptionRow
		created bool
	}
	r, err := inTx(ctx, s, func(tx *gorm.DB) (result, error) {
		now := s.now()
		var row subscriptionRow
		err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
			Where("user_id = ? AND target_type = ? AND target_id = ?", sub.UserID, sub.TargetType, sub.TargetID).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			row = subscriptionRow{ID: newNotificationID("nsb_"), UserID: sub.UserID, TargetType: sub.TargetType,
				TargetID: sub.TargetID, Kinds: string(enc), Email: sub.Email, CreatedAt: now, UpdatedAt: now}
			return result{row, true}, tx.Create(&row).Error
		}
		if err != nil {
			return result{}, err
		}
		row.Kinds, row.Email, row.UpdatedAt = string(enc), sub.Email, now
		return result{row, false}, tx.Model(&subscriptionRow{}).Where("id = ?", row.ID).
			Updates(map[string]any{"kinds": row.Kinds, "email": row.Email, "updated_at": now}).Error
	})
	if err != nil {
		return out, false, err
	}
	return r.row.toSubscription(), r.created, nil
}

// Unsubscribe removes userID's subscription to the target (targetType and targetID), or the one
// with id when id is set; it reports whether one was removed.
func (s *Store) Unsubscribe(ctx context.Context, userID int64, id, targetType string, targetID int64) (bool, error) {
	db := s.conn(ctx).Where("user_id = ?", userID)
	if id != "" {
		db = db.Where("id = ?", id)
	} else {
		db = db.Where("target_type = ? AND target_id = ?", targetType, targetID)
	}
	res := db.Delete(&subscriptionRow{})
	return res.RowsAffected > 0, res.Error
}
