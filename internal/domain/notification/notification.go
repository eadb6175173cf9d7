// Package notification holds the rules of in-app notifications and subscriptions (issue 12):
// who is told what when a task settles (fanout.go), a user sees only their own notifications,
// a subscription follows an agent or a principal the user can see (anything else is 404, like
// every invisible resource), notifications are pushed on the user's notification topic once
// stored, and read ones are removed after a retention period.
//
// The fan-out is durable: the store's status writer leaves a notice in the notification outbox
// in the transaction of each transition that may notify someone; the service's loop (Start,
// Stop, Drain) claims notices with a lease, decides, and writes the notifications and mails
// with the notice's removal in one transaction, so a crash never loses a notification and none
// is written twice.
package notification

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/outbox"
	"github.com/agentsvc/svc/internal/platform/push"
	"github.com/agentsvc/svc/internal/vocab/notifykind"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// Store is what the service needs of the store; *store.Store satisfies it.
type Store interface {
	access.Memberships
	UserByID(ctx context.Context, id int64) (*store.User, error)
	Agent(ctx context.Context, id, viewer int64) (*store.Agent, error)
	Task(ctx context.Context, id int64) (*store.Task, error)
	PrincipalManagers(ctx context.Context, p int64) ([]int64, error)
	ClaimTaskNotices(ctx context.Context, workerID string, limit int, lease time.Duration) ([]store.TaskNotice, error)
	FinishTaskNotice(ctx context.Context, n store.TaskNotice, d store.NoticeDecision) ([]store.Notification, error)
	FailTaskNotice(ctx context.Context, n store.TaskNotice, errText string) error
	Notifications(ctx context.Context, q store.NotificationQuery) ([]store.Notification, error)
	UnreadNotifications(ctx context.Context, userID int64) (int64, error)
	MarkNotificationRead(ctx context.Context, userID int64, id string) (*store.Notification, error)
	MarkAllNotificationsRead(ctx context.Context, userID int64) (int64, error)
	DeleteNotification(ctx context.Context, userID int64, id string) error
	DeleteNotifications(ctx context.Context, userID int64) error
	Subscriptions(ctx context.Context, userID int64) ([]store.NotificationSubscription, error)
	Subscribe(ctx context.Context, sub store.NotificationSubscription) (store.NotificationSubscription, bool, error)
	Unsubscribe(ctx context.Context, userID int64, id, targetType string, targetID int64) (bool, error)
}

var _ Store = (*store.Store)(nil)

// Service applies the notification rules over the store.
type Service struct {
	store  Store
	push   *push.Service
	log    *slog.Logger
	config func() *config.Config // the scheduled-run mail's settings, read at each message
	// notices is the loop fanning out the notification outbox.
	notices outbox.Loop[store.TaskNotice]
}

// New returns the service; push may be nil (nothing pushed), config nil (no scheduled-run
// mail).
func New(st Store, p *push.Service, config func() *config.Config, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	s := &Service{store: st, push: p, log: log, config: config}
	s.notices = outbox.Loop[store.TaskNotice]{Name: "notification", Claim: st.ClaimTaskNotices, Deliver: s.fanOut, Logger: log}
	return s
}

// Start begins fanning out the notification outbox in the background (every poll, and at
// once on Notify); Stop ends it, waiting for the fan-outs in flight until ctx ends.
func (s *Service) Start(ctx context.Context) { s.notices.Start(ctx) }

// Stop ends the fan-out loop; errors when ctx ended with fan-outs in flight.
func (s *Service) Stop(ctx context.Context) error { return s.notices.Stop(ctx) }

// Notify wakes the fan-out loop: a committed transition left a notice.
func (s *Service) Notify() { s.notices.Notify() }

// Drain fans out every due notice now, synchronously, and returns how many it handled: for
// tests, which read notifications right after an action without starting the background work.
// Errors: the store's.
func (s *Service) Drain(ctx context.Context) (int, error) { return s.notices.Drain(ctx) }

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

// Created pushes stored notifications to their users' topics. Push failures are logged: the notification is stored anyway.
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
	kinds := []string{}
	for _, k := range sub.Kinds {
		if !slices.Contains(notifykind.All, k) {
			return sub, false, svcerr.New(svcerr.ErrInvalid, "unknown notification kind %q", k)
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	sub.UserID, sub.Kinds = u.ID, kinds
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
