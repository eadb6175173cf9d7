package api

import (
	"context"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/store"
)

func toNotification(n *store.Notification) gen.Notification {
	return gen.Notification{Id: n.ID, Kind: gen.NotificationKind(n.Kind), Title: n.Title, Body: n.Body, TaskId: n.TaskID,
		AgentId: n.AgentID, ReadAt: n.ReadAt, CreatedAt: n.CreatedAt}
}

func toSubscription(s *store.NotificationSubscription) gen.NotificationSubscription {
	out := gen.NotificationSubscription{Id: s.ID, TargetType: gen.NotificationSubscriptionTargetType(s.TargetType),
		TargetId: s.TargetID, Email: s.Email, CreatedAt: s.CreatedAt, Kinds: make([]gen.NotificationKind, 0, len(s.Kinds))}
	for _, k := range s.Kinds {
		out.Kinds = append(out.Kinds, gen.NotificationKind(k))
	}
	return out
}

// ListNotifications pages the caller's notifications, newest first, with the unread count.
func (a *API) ListNotifications(ctx context.Context, req gen.ListNotificationsRequestObject) (gen.ListNotificationsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	page, per := pageArgs(req.Params.Page, req.Params.PerPage)
	ns, unread, err := a.notifications.List(ctx, id.User, req.Params.Unread, page, per)
	if err != nil {
		return nil, err
	}
	var r gen.ListNotifications200JSONResponse
	r.Data.UnreadCount = unread
	r.Data.Notifications = make([]gen.Notification, 0, len(ns))
	for i := range ns {
		r.Data.Notifications = append(r.Data.Notifications, toNotification(&ns[i]))
	}
	return r, nil
}

// DeleteAllNotifications deletes every notification of the caller.
func (a *API) DeleteAllNotifications(ctx context.Context, _ gen.DeleteAllNotificationsRequestObject) (gen.DeleteAllNotificationsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.notifications.DeleteAll(ctx, id.User); err != nil {
		return nil, err
	}
	var r gen.DeleteAllNotifications200JSONResponse
	r.Data.Deleted = true
	return r, nil
}

// DeleteNotification deletes one of the caller's notifications.
func (a *API) DeleteNotification(ctx context.Context, req gen.DeleteNotificationRequestObject) (gen.DeleteNotificationResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.notifications.Delete(ctx, id.User, req.Id); err != nil {
		return nil, err
	}
	var r gen.DeleteNotification200JSONResponse
	r.Data.Deleted = true
	return r, nil
}

// MarkNotificationRead marks one of the caller's notifications read.
func (a *API) MarkNotificationRead(ctx context.Context, req gen.MarkNotificationReadRequestObject) (gen.MarkNotificationReadResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := a.notifications.MarkRead(ctx, id.User, req.Id)
	if err != nil {
		return nil, err
	}
	var r gen.MarkNotificationRead200JSONResponse
	r.Data.Notification = toNotification(n)
	return r, nil
}

// MarkAllNotificationsRead marks every notification of the caller read.
func (a *API) MarkAllNotificationsRead(ctx context.Context, _ gen.MarkAllNotificationsReadRequestObject) (gen.MarkAllNotificationsReadResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := a.notifications.MarkAllRead(ctx, id.User)
	if err != nil {
		return nil, err
	}
	var r gen.MarkAllNotificationsRead200JSONResponse
	r.Data.Updated = n
	return r, nil
}

// ListNotificationSubscriptions lists the caller's subscriptions.
func (a *API) ListNotificationSubscriptions(ctx context.Context, _ gen.ListNotificationSubscriptionsRequestObject) (gen.ListNotificationSubscriptionsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	subs, err := a.notifications.Subscriptions(ctx, id.User)
	if err != nil {
		return nil, err
	}
	var r gen.ListNotificationSubscriptions200JSONResponse
	r.Data.Subscriptions = make([]gen.NotificationSubscription, 0, len(subs))
	for i := range subs {
		r.Data.Subscriptions = append(r.Data.Subscriptions, toSubscription(&subs[i]))
	}
	return r, nil
}

// SubscribeNotifications follows an agent or a principal (201), or changes the kinds of an
// existing subscription to it (200).
func (a *API) SubscribeNotifications(ctx context.Context, req gen.SubscribeNotificationsRequestObject) (gen.SubscribeNotificationsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	sub := store.NotificationSubscription{TargetType: string(b.TargetType), TargetID: b.TargetId, Email: deref(b.Email)}
	if b.Kinds != nil {
		for _, k := range *b.Kinds {
			sub.Kinds = append(sub.Kinds, string(k))
		}
	}
	out, created, err := a.notifications.Subscribe(ctx, id.User, sub)
	if err != nil {
		return nil, err
	}
	if created {
		var r gen.SubscribeNotifications201JSONResponse
		r.Data.Subscription = toSubscription(&out)
		return r, nil
	}
	var r gen.SubscribeNotifications200JSONResponse
	r.Data.Subscription = toSubscription(&out)
	return r, nil
}

// UnsubscribeNotifications removes a subscription by id or by target; idempotent.
func (a *API) UnsubscribeNotifications(ctx context.Context, req gen.UnsubscribeNotificationsRequestObject) (gen.UnsubscribeNotificationsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	p := req.Params
	var targetType string
	if p.TargetType != nil {
		targetType = string(*p.TargetType)
	}
	deleted, err := a.notifications.Unsubscribe(ctx, id.User, deref(p.Id), targetType, deref(p.TargetId))
	if err != nil {
		return nil, err
	}
	var r gen.UnsubscribeNotifications200JSONResponse
	r.Data.Deleted = deleted
	return r, nil
}
