// Package notification holds the rules of in-app notifications and subscriptions (issue 12):
// a user sees only their own notifications; a subscription follows an agent or a principal the
// user can see (anything else is 404, like every invisible resource); notifications are pushed
// on the user's notification topic as soon as the transaction that created them committed, and
// read ones are removed after a retention period. The store creates notifications in the
// transaction of the task transition that causes them (store.notify).
package notification

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/platform/push"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// Retention is how long a read notification is kept.
const Retention = 30 * 24 * time.Hour

// Service applies the notification rules over the store.
type Service struct {
	store *store.Store
	push  *push.Service
	log   *slog.Logger
}

// New returns the service; push may be nil (nothing pushed).
func New(st *store.Store, p *push.Service, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{store: st, push: p, log: log}
}

// Event is the JSON pushed on user/{id}/notifications for each new notification.
type Event struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	TaskID    *int64    `json:"task_id"`
	AgentID   *int64    `json:"agent_id"`
	ReadAt    *string   `json:"read_at"`
	CreatedAt time.Time `json:"created_at"`
}

// Created pushes notifications a committed transaction created to their users' topics (the
// store's OnNotifications hook). Push failures are logged: the notification is stored anyway.
func (s *Service) Created(ctx context.Context, ns []store.Notification) {
	if s.push == nil {
		return
	}
	for _, n := range ns {
		data, err := json.Marshal(Event{ID: n.ID, Kind: n.Kind, Title: n.Title, Body: n.Body, TaskID: n.TaskID,
			AgentID: n.AgentID, CreatedAt: n.CreatedAt})
		if err == nil {
			err = s.push.Publish(ctx, push.NotificationTopic(n.UserID), data)
		}
		if err != nil {
			s.log.WarnContext(ctx, "push notification", "notification_id", n.ID, "user_id", n.UserID, "err", err)
		}
	}
}

// List returns one page of u's notifications, newest first, and u's unread count.
func (s *Service) List(ctx context.Context, u *store.User, unread *bool, page, perPage int) ([]store.Notification, int64, error) {
	ns, err := s.store.Notifications(ctx, store.NotificationQuery{UserID: u.ID, Unread: unread, Page: page, PerPage: perPage})
	if err != nil {
		return nil, 0, err
	}
	n, err := s.store.UnreadNotifications(ctx, u.ID)
	return ns, n, err
}

// MarkRead marks u's notification id read. Errors: ErrNotFound for any other id.
func (s *Service) MarkRead(ctx context.Context, u *store.User, id string) (*store.Notification, error) {
	return s.store.MarkNotificationRead(ctx, u.ID, id)
}

// MarkAllRead marks every notification of u read and returns how many changed.
func (s *Service) MarkAllRead(ctx context.Context, u *store.User) (int64, error) {
	return s.store.MarkAllNotificationsRead(ctx, u.ID)
}

// Delete deletes u's notification id. Errors: ErrNotFound for any other id.
func (s *Service) Delete(ctx context.Context, u *store.User, id string) error {
	return s.store.DeleteNotification(ctx, u.ID, id)
}

// DeleteAll deletes every notification of u.
func (s *Service) DeleteAll(ctx context.Context, u *store.User) error {
	return s.store.DeleteNotifications(ctx, u.ID)
}

// Subscriptions lists u's subscriptions, oldest first.
func (s *Service) Subscriptions(ctx context.Context, u *store.User) ([]store.NotificationSubscription, error) {
	return s.store.Subscriptions(ctx, u.ID)
}

// Subscribe follows the target for u (kinds empty: every kind; email: also by mail), or
// replaces the kinds and email flag of u's subscription to it; created says which. Errors:
// ErrNotFound for an agent or principal u cannot see, ErrInvalid for an unknown kind.
func (s *Service) Subscribe(ctx context.Context, u *store.User, sub store.NotificationSubscription) (store.NotificationSubscription, bool, error) {
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return sub, false, err
	}
	switch sub.TargetType {
	case store.SubscribeAgent:
		a, err := s.store.Agent(ctx, sub.TargetID, u.ID)
		if err != nil || !sc.CanSee(a.PrincipalID) {
			return sub, false, svcerr.New(svcerr.ErrNotFound, "agent not found")
		}
	case store.SubscribePrincipal:
		if !sc.CanSee(sub.TargetID) {
			return sub, false, svcerr.New(svcerr.ErrNotFound, "principal not found")
		}
	default:
		return sub, false, svcerr.New(svcerr.ErrInvalid, "target_type must be agent or principal")
	}
	sub.UserID = u.ID
	return s.store.Subscribe(ctx, sub)
}

// Unsubscribe removes u's subscription with id, or to the target; idempotent (false when there
// was none). Errors: ErrInvalid unless exactly one of id and the target is given.
func (s *Service) Unsubscribe(ctx context.Context, u *store.User, id, targetType string, targetID int64) (bool, error) {
	byID, byTarget := id != "", targetType != "" && targetID != 0
	if byID == byTarget || (!byID && (targetType == "") != (targetID == 0)) {
		return false, svcerr.New(svcerr.ErrInvalid, "name the subscription by id, or by target_type and target_id")
	}
	return s.store.Unsubscribe(ctx, u.ID, id, targetType, targetID)
}

// Sweep removes notifications read more than Retention before now (housekeeping).
func (s *Service) Sweep(ctx context.Context, now time.Time) (int64, error) {
	return s.store.DeleteReadNotificationsBefore(ctx, now.Add(-Retention))
}
