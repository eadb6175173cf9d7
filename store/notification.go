package store

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

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

// newNotificationID is ntf_ followed by 26 lowercase base32 characters (128 random bits); a
// subscription id starts with nsb_.
func newNotificationID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// NotificationQuery pages a user's notifications.
type NotificationQuery struct {
	UserID        int64
	Unread        *bool // nil: all; true: unread only; false: read only
	Page, PerPage int
}

// Notifications returns one page of q.UserID's notifications, newest first.
func (s *Inbox) Notifications(ctx context.Context, q NotificationQuery) ([]Notification, error) {
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
func (s *Inbox) UnreadNotifications(ctx context.Context, userID int64) (int64, error) {
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
func (s *Inbox) MarkNotificationRead(ctx context.Context, userID int64, id string) (*Notification, error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*Notification, error) {
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
func (s *Inbox) MarkAllNotificationsRead(ctx context.Context, userID int64) (int64, error) {
	res := s.conn(ctx).Model(&Notification{}).Where("user_id = ? AND read_at IS NULL", userID).Update("read_at", s.now())
	return res.RowsAffected, res.Error
}

// DeleteNotification deletes userID's notification id. Errors: ErrNotFound.
func (s *Inbox) DeleteNotification(ctx context.Context, userID int64, id string) error {
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
func (s *Inbox) DeleteNotifications(ctx context.Context, userID int64) error {
	return s.conn(ctx).Where("user_id = ?", userID).Delete(&Notification{}).Error
}

// DeleteReadNotificationsBefore removes up to limit notifications read before t (retention,
// store/retention.go), oldest first, and returns how many.
func (s *Inbox) DeleteReadNotificationsBefore(ctx context.Context, t time.Time, limit int) (int64, error) {
	return deleteOldest[string](ctx, s.Store, "notifications", "read_at IS NOT NULL AND read_at < ?", []any{normTime(t)}, "read_at", limit)
}

// Subscriptions returns userID's subscriptions, oldest first.
func (s *Inbox) Subscriptions(ctx context.Context, userID int64) ([]NotificationSubscription, error) {
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

// subscriptionsTo returns, in tx, the subscriptions to any of agents or principals, ordered by
// user then id: the candidates of the notifications about a claimed batch of notices (one read
// for the batch; each notice takes those to its agent or its agent's principal).
func subscriptionsTo(tx *gorm.DB, agents, principals []int64) ([]NotificationSubscription, error) {
	var rows []subscriptionRow
	err := tx.Where("(target_type = ? AND target_id IN ?) OR (target_type = ? AND target_id IN ?)",
		SubscribeAgent, agents, SubscribePrincipal, principals).Order("user_id").Order("id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("subscriptions to agents %v: %w", agents, err)
	}
	out := make([]NotificationSubscription, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.toSubscription())
	}
	return out, nil
}

// Subscribe creates userID's subscription to the target, or replaces the kinds and email flag
// of the existing one; created says which. The caller (the notification service) has checked
// the target type, the kinds and that the target is visible.
func (s *Inbox) Subscribe(ctx context.Context, sub NotificationSubscription) (out NotificationSubscription, created bool, err error) {
	kinds := sub.Kinds
	if kinds == nil {
		kinds = []string{}
	}
	enc, _ := json.Marshal(kinds)
	type result struct {
		row     subscriptionRow
		created bool
	}
	r, err := inTx(ctx, s.Store, func(tx *gorm.DB) (result, error) {
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
func (s *Inbox) Unsubscribe(ctx context.Context, userID int64, id, targetType string, targetID int64) (bool, error) {
	db := s.conn(ctx).Where("user_id = ?", userID)
	if id != "" {
		db = db.Where("id = ?", id)
	} else {
		db = db.Where("target_type = ? AND target_id = ?", targetType, targetID)
	}
	res := db.Delete(&subscriptionRow{})
	return res.RowsAffected > 0, res.Error
}
