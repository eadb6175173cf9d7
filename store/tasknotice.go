package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/notifykind"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// The notification outbox (notification_outbox): the one status writer leaves a notice in the
// transaction of every transition that may notify someone or settle a notification — a
// top-level task entering a settled status, leaving a pause, or an automatic retry
// scheduled —, naming the task and the status event that announces it. Who is told what is not decided here: the notification service claims
// the notices, reads the facts they carry, and hands back the notifications and mails it
// decided, written with the notice's removal in one transaction (FinishTaskNotice).

// NoticeBackoff is the retry schedule of a notice whose fan-out failed (the database, or a
// notice the service could not read): the mail schedule, then it is kept as failed.
var NoticeBackoff = MailBackoff

func noticeOutbox() outbox {
	return outbox{table: "notification_outbox", noun: "notice", done: "", gaveUp: "failed", schedule: NoticeBackoff}
}

type noticeRow struct {
	ID            int64
	TaskID        int64
	EventSequence int64
	State         string
	Attempts      int
	NextAttemptAt time.Time
	LeaseUntil    *time.Time
	LastError     *string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	FinishedAt    *time.Time
}

func (noticeRow) TableName() string { return "notification_outbox" }

// TaskNotice is a claimed notice with the facts a decision about it needs: the status event
// as it was written, the task's owner and prompt, its agent, the scheduled run that started it.
type TaskNotice struct {
	ID    int64
	Lease time.Time // the claim's fencing token, for FinishTaskNotice and FailTaskNotice
	At    time.Time // when the transition happened: the notifications' creation time
	// Status is the status event the notice announces: the status, error and retry as they
	// were at the transition (the task may have moved on since).
	Status      StatusEvent
	TaskID      int64
	UserID      int64 // the task's owner
	OwnerEmail  string
	Prompt      string
	Source      string // TaskSourceSession or TaskSourceAgentAPI
	AgentID     int64
	AgentName   string
	PrincipalID int64 // the agent's
	// ScheduledRunID is the scheduled run that started the task (0: none); ScheduledRunName its
	// name, "" when the run was deleted meanwhile.
	ScheduledRunID   int64
	ScheduledRunName string
	// Subscriptions are the subscriptions to the agent or to its principal when the notice was
	// claimed, ordered by user then id: who may be told besides the owner.
	Subscriptions []NotificationSubscription
}

// noteNotices writes, in tx, the notices rows owe after c moved them: a top-level task
// entering a settled status or leaving a pause, or a retry scheduled. The status event of each
// row is its last (sequence event_seq). A transition whose decision can only reach subscribers
// or settle an earlier notification (notifykind.Transition.Unconditional false: a completion,
// a failure its owner is not told of by default, a retry) leaves its notice only when the row
// says one is wanted (taskRow.noticeWanted, read by the status UPDATE: mayNoticeIf): the common
// one-step task then writes no notice, and nothing claims, reads and deletes one.
func noteNotices(tx *gorm.DB, now time.Time, c statusChange, rows []taskRow) error {
	var notices []noticeRow
	for i := range rows {
		r := &rows[i]
		moved := c.from != c.to && (taskstate.IsSettled(r.Status) || slices.Contains(taskstate.Paused, c.from))
		announced := moved || c.action == taskstate.ScheduleRetry
		if r.ParentTaskID != nil || !announced {
			continue
		}
		if !noticeTransition(c.from, r).Unconditional() && r.noticeWanted != nil && !*r.noticeWanted {
			continue
		}
		notices = append(notices, noticeRow{TaskID: r.ID, EventSequence: r.EventSeq, State: outboxPending,
			NextAttemptAt: now, CreatedAt: now, UpdatedAt: now})
	}
	if len(notices) == 0 {
		return nil
	}
	if err := tx.Create(&notices).Error; err != nil {
		return fmt.Errorf("notification notices: %w", err)
	}
	if cr := createdFrom(tx); cr != nil {
		cr.Noticed = true
	}
	return nil
}

// mayNoticeIf reports whether c may move a row into a transition whose notice is conditional,
// so that the status UPDATE reads whether it is wanted: every announced change but one leaving
// a pause (always noticed). A row read without it gets its notice.
func mayNoticeIf(c statusChange) bool {
	if slices.Contains(taskstate.Paused, c.from) {
		return false
	}
	return c.action == taskstate.ScheduleRetry || (c.from != c.to && taskstate.IsSettled(c.to))
}

// noticeTransition is row r's move from status from, as the notification rules read it.
func noticeTransition(from string, r *taskRow) notifykind.Transition {
	t := notifykind.Transition{From: from, To: r.Status, RetryQueued: r.NextRetryAt != nil, AgentAPI: r.Source == TaskSourceAgentAPI}
	if r.ErrorCode != nil {
		t.ErrorCode = *r.ErrorCode
	}
	_, t.Scheduled = scheduledRunID(r.Data)
	return t
}

// noticeWantedSQL is the SQL of whether a conditional notice about a row of tasks is wanted
// (its arguments noticeWantedArgs): someone subscribes to the task's agent or its principal, an
// earlier notice of the task is pending (so that its notices are still decided in order), or a
// notification about it that asked for something is unread. It reads what other transactions
// committed: a subscription committed later came after the transition, and an earlier notice's
// fan-out (its removal and its notifications, one transaction) is seen either before or after.
var noticeWantedSQL = "(EXISTS (SELECT 1 FROM notification_subscriptions s WHERE (s.target_type = ? AND s.target_id = tasks.agent_id) OR " +
	"(s.target_type = ? AND s.target_id = (SELECT a.principal_id FROM agents a WHERE a.id = tasks.agent_id))) OR " +
	"EXISTS (SELECT 1 FROM notification_outbox o WHERE o.task_id = tasks.id AND o.state = ?) OR " +
	"EXISTS (SELECT 1 FROM notifications n WHERE n.about_task_id = tasks.id AND n.read_at IS NULL AND n.kind IN (?" +
	strings.Repeat(", ?", len(notifykind.Asking)-1) + ")))"

// noticeWantedArgs are noticeWantedSQL's arguments (shared: never append to them).
var noticeWantedArgs = slices.Concat([]any{SubscribeAgent, SubscribePrincipal, outboxPending}, anys(notifykind.Asking))

// ClaimTaskNotices leases up to limit due notices until now+lease, oldest first, with their
// facts. A notice whose task or status event is gone is dropped. Errors: ErrInvalid (empty or
// oversize worker id, lease not positive), the database's.
func (s *Outboxes) ClaimTaskNotices(ctx context.Context, workerID string, limit int, lease time.Duration) ([]TaskNotice, error) {
	return claimOutbox(ctx, s.Store, noticeOutbox(), workerID, limit, lease,
		func(r *noticeRow) (time.Time, int64) { return r.NextAttemptAt, r.ID },
		func(tx *gorm.DB, rows []noticeRow) ([]TaskNotice, error) {
			facts, err := noticeFacts(tx, rows)
			if err != nil {
				return nil, err
			}
			out := make([]TaskNotice, 0, len(rows))
			var gone []int64
			for i := range rows {
				if n, ok := facts[rows[i].ID]; ok {
					out = append(out, n)
				} else {
					gone = append(gone, rows[i].ID)
				}
			}
			if len(gone) > 0 {
				if err := tx.Delete(&noticeRow{}, gone).Error; err != nil {
					return nil, fmt.Errorf("drop notices %v: %w", gone, err)
				}
			}
			return out, nil
		})
}

// noticeFacts reads what the claimed notices rows announce and the subscriptions to their
// agents, in two statements for the batch (one per notice cost a round trip each), keyed by
// notice id; a notice whose task or event is gone has no entry.
func noticeFacts(tx *gorm.DB, rows []noticeRow) (map[int64]TaskNotice, error) {
	type factRow struct {
		NoticeID    int64
		UserID      int64
		Email       string
		Prompt      string
		Source      string
		Data        string
		AgentID     int64
		AgentName   string
		PrincipalID int64
		Event       string
	}
	if len(rows) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(rows))
	byID := make(map[int64]*noticeRow, len(rows))
	for i := range rows {
		ids[i], byID[rows[i].ID] = rows[i].ID, &rows[i]
	}
	byIDs, args := idIn(tx, "n.id", ids)
	facts, err := queryRows(tx, func(f *factRow) []any {
		return []any{&f.NoticeID, &f.UserID, &f.Email, &f.Prompt, &f.Source, &f.Data, &f.AgentID, &f.AgentName, &f.PrincipalID, &f.Event}
	}, "SELECT n.id, t.user_id, u.email, t.prompt, t.source, t.data, t.agent_id, a.name, a.principal_id, e.data FROM notification_outbox n "+
		"JOIN tasks t ON t.id = n.task_id JOIN users u ON u.id = t.user_id JOIN agents a ON a.id = t.agent_id "+
		"JOIN task_events e ON e.task_id = n.task_id AND e.sequence = n.event_sequence WHERE "+byIDs, args...)
	if err != nil {
		return nil, fmt.Errorf("notices' facts: %w", err)
	}
	var agents, principals []int64
	for _, f := range facts {
		if !slices.Contains(agents, f.AgentID) {
			agents = append(agents, f.AgentID)
		}
		if !slices.Contains(principals, f.PrincipalID) {
			principals = append(principals, f.PrincipalID)
		}
	}
	var subs []NotificationSubscription
	if len(facts) > 0 {
		if subs, err = subscriptionsTo(tx, agents, principals); err != nil {
			return nil, err
		}
	}
	events := make(map[int64]*eventPayload, len(facts))
	for _, f := range facts {
		r := byID[f.NoticeID]
		var ev eventPayload
		if err := json.Unmarshal([]byte(f.Event), &ev); err != nil || ev.Status == nil {
			return nil, fmt.Errorf("notice %d: event %d of task %d is not a status event", r.ID, r.EventSequence, r.TaskID)
		}
		events[r.ID] = &ev
	}
	if err := fillAnswers(tx, rows, events); err != nil {
		return nil, err
	}
	out := make(map[int64]TaskNotice, len(facts))
	for _, f := range facts {
		r := byID[f.NoticeID]
		ev := events[r.ID]
		n := TaskNotice{ID: r.ID, Lease: *r.LeaseUntil, At: r.CreatedAt.UTC(), Status: *ev.Status, TaskID: r.TaskID, UserID: f.UserID,
			OwnerEmail: f.Email, Prompt: f.Prompt, Source: f.Source, AgentID: f.AgentID, AgentName: f.AgentName, PrincipalID: f.PrincipalID}
		if runID, ok := scheduledRunID(f.Data); ok {
			n.ScheduledRunID = runID
			var run struct{ Name string }
			err := tx.Table("scheduled_runs").Select("name").Where("id = ? AND agent_id = ?", runID, f.AgentID).Take(&run).Error
			if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
				return nil, fmt.Errorf("notice %d: scheduled run: %w", r.ID, err)
			}
			n.ScheduledRunName = run.Name
		}
		n.Subscriptions = []NotificationSubscription{}
		for _, sub := range subs {
			if (sub.TargetType == SubscribeAgent && sub.TargetID == f.AgentID) || (sub.TargetType == SubscribePrincipal && sub.TargetID == f.PrincipalID) {
				n.Subscriptions = append(n.Subscriptions, sub)
			}
		}
		out[r.ID] = n
	}
	return out, nil
}

// fillAnswers sets the answer of the status events (by notice id, of the notices rows) that name
// it by its message's sequence (eventPayload.AnswerSeq), in one read for the batch. A message
// that is not there (nothing deletes one but its task's deletion, which takes the notice too)
// leaves the answer unset rather than failing the batch: one damaged notice must not hold up
// every other's fan-out, and the answer is only a scheduled run's mail's detail.
func fillAnswers(tx *gorm.DB, rows []noticeRow, events map[int64]*eventPayload) error {
	var where []string
	var args []any
	for i := range rows {
		if ev := events[rows[i].ID]; ev != nil && ev.AnswerSeq > 0 {
			where = append(where, "(task_id = ? AND sequence = ?)")
			args = append(args, rows[i].TaskID, ev.AnswerSeq)
		}
	}
	if len(where) == 0 {
		return nil
	}
	type answerRow struct {
		TaskID   int64
		Sequence int64
		Text     string
	}
	answers, err := queryRows(tx, func(a *answerRow) []any { return []any{&a.TaskID, &a.Sequence, &a.Text} },
		"SELECT task_id, sequence, text FROM task_messages WHERE "+strings.Join(where, " OR "), args...)
	if err != nil {
		return fmt.Errorf("notices' answers: %w", err)
	}
	for i := range rows {
		ev := events[rows[i].ID]
		if ev == nil || ev.AnswerSeq == 0 {
			continue
		}
		for _, a := range answers {
			if a.TaskID == rows[i].TaskID && a.Sequence == ev.AnswerSeq {
				text := a.Text
				ev.Status.Answer = &text
			}
		}
	}
	return nil
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
	v, err := id.Int64()
	return v, err == nil
}

// NoticeDecision is what the notification service decided about a notice.
type NoticeDecision struct {
	// Notifications to create (the store gives each its id, and the transition's time as their
	// creation time); all are about the notice's task.
	Notifications []Notification
	Mails         []NewMail
	// Settled are the kinds of the task's earlier notifications that asked for something now
	// done (a decision, an answer): unread ones are marked read, for every recipient.
	Settled []string
}

// FinishTaskNotice writes decision d about notice n and removes the notice, in one transaction
// fenced by the claim's lease: a service whose lease lapsed and was taken over writes nothing.
// It returns the notifications as stored. Errors: ErrInvalidState when the notice is no longer
// held under n.Lease, ErrInvalid for a mail that cannot be sent, the database's.
func (s *Outboxes) FinishTaskNotice(ctx context.Context, n TaskNotice, d NoticeDecision) ([]Notification, error) {
	for i := range d.Mails {
		if err := d.Mails[i].check(); err != nil {
			return nil, err
		}
	}
	out := make([]Notification, len(d.Notifications))
	// Notices are finished by several fan-outs at once; they lock no row another write shares.
	err := s.groupTx(ctx, 0, func(tx *gorm.DB) error {
		res := tx.Where("id = ? AND state = ? AND lease_until = ?", n.ID, outboxPending, normTime(n.Lease)).Delete(&noticeRow{})
		if res.Error != nil {
			return fmt.Errorf("finish notice %d: %w", n.ID, res.Error)
		}
		if res.RowsAffected == 0 {
			return noticeOutbox().lostLease(n.ID)
		}
		if len(d.Settled) > 0 {
			if err := tx.Model(&Notification{}).Where("about_task_id = ? AND kind IN ? AND read_at IS NULL", n.TaskID, d.Settled).
				Update("read_at", s.now()).Error; err != nil {
				return fmt.Errorf("notice %d: settle notifications: %w", n.ID, err)
			}
		}
		for i, x := range d.Notifications {
			x.ID, x.CreatedAt, x.ReadAt = newNotificationID("ntf_"), normTime(n.At), nil
			if _, err := rawExec(tx, "INSERT INTO notifications (id, user_id, kind, title, body, task_id, agent_id, about_task_id, read_at, created_at) "+
				"VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)", x.ID, x.UserID, x.Kind, x.Title, x.Body, x.TaskID, x.AgentID, n.TaskID, x.CreatedAt); err != nil {
				return fmt.Errorf("notice %d: create notification: %w", n.ID, err)
			}
			out[i] = x
		}
		for _, m := range d.Mails {
			if err := s.enqueueMailTx(tx, m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FailTaskNotice records a failed fan-out of notice n (errText, bounded): it is due again after
// NoticeBackoff's delay, or kept as failed after the last attempt. Errors: ErrInvalidState when
// the notice is no longer held under n.Lease.
func (s *Outboxes) FailTaskNotice(ctx context.Context, n TaskNotice, errText string) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		_, err := noticeOutbox().finish(tx, s.now(), n.ID, n.Lease, false, errText)
		return err
	})
}
