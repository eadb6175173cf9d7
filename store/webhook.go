package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// Callback delivery states (webhook_deliveries.state).
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryAbandoned = "abandoned"
)

// DeliveryRetryDelays are the waits before the retries of a failed callback (document 2:
// five retries at 30 s, 1, 2, 4 and 8 minutes); the failure after the last one abandons the
// delivery, so MaxDeliveryAttempts attempts are made at most.
var DeliveryRetryDelays = []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute}

// MaxDeliveryAttempts is the number of attempts after which a failing delivery is abandoned.
const MaxDeliveryAttempts = 6

// ChatSnapshot is a chat as it settled, kept with its delivery so the callback shows that
// moment even when it is sent (or retried) later: the task, its PENDING_APPROVAL calls (in
// PENDING_APPROVAL), its unanswered question batches (in AWAITING_INPUT), and for a FAILED
// task the text of the last assistant turn that had text.
type ChatSnapshot struct {
	Task      Task            `json:"task"`
	Calls     []ToolCall      `json:"calls"`
	Questions []QuestionBatch `json:"questions"`
	LastSaid  *string         `json:"last_said,omitempty"`
}

// WebhookDelivery is one callback of the outbox with the signing key joined from
// agent_api_keys: KeyID is the key's public id (safe to log), SecretDigest the lowercase hex
// SHA-256 of its secret (the HMAC key; never log it). Attempts counts the failed attempts so
// far. LeaseUntil, on a claimed delivery, is the claim's fencing token for FinishDelivery.
type WebhookDelivery struct {
	ID            int64
	TaskID        int64
	APIKeyID      int64
	KeyID         string
	SecretDigest  string
	URL           string
	Status        string // the task status that triggered it
	Snapshot      ChatSnapshot
	State         string
	Attempts      int
	NextAttemptAt time.Time
	LeaseUntil    *time.Time
	LastError     *string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	FinishedAt    *time.Time
}

type webhookDeliveryRow struct {
	ID            int64
	TaskID        int64
	APIKeyID      int64
	URL           string
	Status        string
	Snapshot      string
	State         string
	Attempts      int
	NextAttemptAt time.Time
	LeaseUntil    *time.Time
	LastError     *string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	FinishedAt    *time.Time
}

func (webhookDeliveryRow) TableName() string { return "webhook_deliveries" }

// deliveryKey is the signing material of a key.
type deliveryKey struct {
	ID           int64
	KeyID        string
	SecretDigest string
}

func (r *webhookDeliveryRow) toDelivery(k deliveryKey) (WebhookDelivery, error) {
	d := WebhookDelivery{
		ID: r.ID, TaskID: r.TaskID, APIKeyID: r.APIKeyID, KeyID: k.KeyID, SecretDigest: k.SecretDigest, URL: r.URL,
		Status: r.Status, State: r.State, Attempts: r.Attempts, NextAttemptAt: r.NextAttemptAt.UTC(),
		LeaseUntil: utcPtr(r.LeaseUntil), LastError: r.LastError, CreatedAt: r.CreatedAt.UTC(),
		UpdatedAt: r.UpdatedAt.UTC(), FinishedAt: utcPtr(r.FinishedAt),
	}
	dec := json.NewDecoder(strings.NewReader(r.Snapshot))
	dec.UseNumber() // task data and tool arguments keep their numbers exactly
	if err := dec.Decode(&d.Snapshot); err != nil {
		return d, fmt.Errorf("webhook delivery %d: snapshot: %w", r.ID, err)
	}
	return d, nil
}

// enqueueCallbacks writes one pending delivery, due now, for each of taskIDs that has a
// callback_url and an API key and whose status is a settle state (taskstate.Settled). Call it in
// the transaction that moved the tasks, after the move: the outbox row commits with the status
// change or not at all. Tasks without a callback cost one indexed query. A chat whose key was
// revoked gets no new callback.
func enqueueCallbacks(tx *gorm.DB, now time.Time, taskIDs ...int64) error {
	if len(taskIDs) == 0 {
		return nil
	}
	if err := flushHeld(tx); err != nil { // the snapshot reads the step's message
		return err
	}
	var rows []taskRow
	err := tx.Where("id IN ? AND callback_url IS NOT NULL AND api_key_id IS NOT NULL AND status IN ?", taskIDs, taskstate.Settled).
		Where("api_key_id IN (SELECT id FROM agent_api_keys WHERE revoked_at IS NULL)").
		Order("id").Find(&rows).Error
	if err != nil {
		return fmt.Errorf("enqueue callbacks: %w", err)
	}
	for i := range rows {
		snap, err := chatSnapshot(tx, &rows[i])
		if err != nil {
			return err
		}
		enc, err := json.Marshal(snap)
		if err != nil {
			return fmt.Errorf("task %d: encode callback snapshot: %w", rows[i].ID, err)
		}
		d := webhookDeliveryRow{
			TaskID: rows[i].ID, APIKeyID: *rows[i].APIKeyID, URL: *rows[i].CallbackURL, Status: rows[i].Status,
			Snapshot: string(enc), State: DeliveryPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now,
		}
		if err := tx.Create(&d).Error; err != nil {
			return fmt.Errorf("task %d: enqueue callback: %w", rows[i].ID, err)
		}
	}
	return nil
}

// chatSnapshot reads what the chat record of a settled task shows.
func chatSnapshot(tx *gorm.DB, row *taskRow) (*ChatSnapshot, error) {
	t, err := row.toTask()
	if err != nil {
		return nil, err
	}
	snap := &ChatSnapshot{Task: *t, Calls: []ToolCall{}, Questions: []QuestionBatch{}}
	switch t.Status {
	case taskstate.PendingApproval:
		if snap.Calls, err = toolCalls(tx, t.ID, ToolCallPendingApproval); err != nil {
			return nil, err
		}
	case taskstate.AwaitingInput:
		if snap.Questions, err = questionBatches(tx, t.ID, true); err != nil {
			return nil, err
		}
	case taskstate.Failed:
		var texts []string
		err := tx.Model(&taskMessageRow{}).Where("task_id = ? AND role = ? AND text <> ''", t.ID, RoleAssistant).
			Order("sequence DESC").Limit(1).Pluck("text", &texts).Error
		if err != nil {
			return nil, fmt.Errorf("task %d: last assistant text: %w", t.ID, err)
		}
		if len(texts) == 1 {
			snap.LastSaid = &texts[0]
		}
	}
	return snap, nil
}

// webhookOutbox is the callback outbox: the shared machinery over webhook_deliveries.
func webhookOutbox() outbox {
	return outbox{table: "webhook_deliveries", noun: "webhook delivery", done: DeliveryDelivered, gaveUp: DeliveryAbandoned,
		schedule: Backoff{Delays: DeliveryRetryDelays}}
}

// ClaimDeliveries leases up to limit due pending deliveries (next_attempt_at <= now, lease
// free or expired), oldest due first, until now+lease, and returns them with their keys'
// signing material. Concurrent claimers never receive the same delivery while its lease runs
// (the outbox claim shared with the mail outbox). workerID names the claimer in errors only
// (the table keeps no owner: the lease expiry is the claim's token).
// Errors: ErrInvalid (empty or oversize worker id, lease not positive).
func (s *Outboxes) ClaimDeliveries(ctx context.Context, workerID string, limit int, lease time.Duration) ([]WebhookDelivery, error) {
	return claimOutbox(ctx, s.Store, webhookOutbox(), workerID, limit, lease,
		func(r *webhookDeliveryRow) (time.Time, int64) { return r.NextAttemptAt, r.ID }, withKeys)
}

// withKeys converts rows, joining their keys' public ids and digests.
func withKeys(db *gorm.DB, rows []webhookDeliveryRow) ([]WebhookDelivery, error) {
	out := make([]WebhookDelivery, 0, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	ids := make([]int64, 0, len(rows))
	for _, r := range rows {
		if !slices.Contains(ids, r.APIKeyID) {
			ids = append(ids, r.APIKeyID)
		}
	}
	var keys []deliveryKey
	if err := db.Table("agent_api_keys").Select("id", "key_id", "secret_digest").Where("id IN ?", ids).Find(&keys).Error; err != nil {
		return nil, fmt.Errorf("webhook deliveries: keys: %w", err)
	}
	byID := make(map[int64]deliveryKey, len(keys))
	for _, k := range keys {
		byID[k.ID] = k
	}
	for i := range rows {
		d, err := rows[i].toDelivery(byID[rows[i].APIKeyID])
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// FinishDelivery records the outcome of an attempt at delivery id claimed with lease (the
// claimed delivery's LeaseUntil, a fencing token: a dispatcher whose lease expired and was
// taken over writes nothing). ok: delivered. Otherwise attempts grows by one and errText
// becomes last_error; after the MaxDeliveryAttempts-th failure the delivery is abandoned, else
// it is due again after DeliveryRetryDelays[attempts-1]. The lease is released either way.
// Errors: ErrNotFound "webhook delivery not found", ErrInvalidState when the delivery is no
// longer pending under that lease.
func (s *Outboxes) FinishDelivery(ctx context.Context, id int64, lease time.Time, ok bool, errText string) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		_, err := webhookOutbox().finish(tx, s.now(), id, lease, ok, errText)
		return err
	})
}

// WebhookDeliveries returns every callback delivery of a task, oldest first (for tests and
// operators). Errors: none beyond the database's own.
func (s *Outboxes) WebhookDeliveries(ctx context.Context, taskID int64) ([]WebhookDelivery, error) {
	var rows []webhookDeliveryRow
	db := s.conn(ctx)
	if err := db.Where("task_id = ?", taskID).Order("id").Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("task %d: webhook deliveries: %w", taskID, err))
	}
	return withKeys(db, rows)
}
