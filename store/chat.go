package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// LastAssistantText returns the text of the last assistant turn of a task that has text (the
// per-agent API's answer of a failed chat), nil when there is none.
func (s *Tasks) LastAssistantText(ctx context.Context, taskID int64) (*string, error) {
	var row taskMessageRow
	err := s.conn(ctx).Where("task_id = ? AND role = ? AND text <> ''", taskID, RoleAssistant).
		Order("sequence DESC").Limit(1).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, TranslateError(fmt.Errorf("task %d: last assistant text: %w", taskID, err))
	}
	return &row.Text, nil
}

// attachMedia links the assets ids to message seq of a task (task_media): an attached asset
// stays live while a link exists, whatever its expires_at (the expiry sweep and the reads skip
// linked assets), and expires normally once its chats are gone. Called by appendMessages inside
// its transaction. Errors: ErrInvalid (unknown asset).
func attachMedia(tx *gorm.DB, taskID int64, seq int, now time.Time, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	rows := make([]taskMediaRow, 0, len(ids))
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		if id == "" || len(id) > MaxMediaIDLen { // cannot be a key: the foreign key's answer below
			return invalidf("media_ids: no such media asset")
		}
		seen[id] = true
		rows = append(rows, taskMediaRow{TaskID: taskID, MediaID: id, MessageSequence: seq, CreatedAt: now})
	}
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&rows).Error; err != nil {
		// The services check the ids before (task.checkMedia, chat's attachments); whether the
		// asset is still there when the link is written only this transaction knows.
		if errors.Is(TranslateError(err), svcerr.ErrInvalid) {
			return invalidf("media_ids: no such media asset")
		}
		return fmt.Errorf("task %d: attach media: %w", taskID, err)
	}
	return nil
}

// ChatQuery selects a page of one agent's per-agent API chats for ListChats.
type ChatQuery struct {
	AgentID int64
	Since   *time.Time // only chats updated strictly after
	// Page starts at 1 (lower values mean 1); PerPage is at most 100, and below 1 means 25.
	Page, PerPage int
}

// ListChats returns one page of the chats of q.AgentID: top-level tasks started through the
// per-agent API (source agent_api, no parent), newest first (created_at, then id,
// descending). Errors: none beyond the database's own.
func (s *Tasks) ListChats(ctx context.Context, q ChatQuery) ([]Task, error) {
	db := s.conn(ctx).Where("agent_id = ? AND source = ? AND parent_task_id IS NULL", q.AgentID, TaskSourceAgentAPI)
	return listTasks(db, "list chats", q.Since, q.Page, q.PerPage)
}
