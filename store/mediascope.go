package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// maxMediaTreeTasks bounds the chat tree AgentMediaQuery looks at (the root and its sub-agent
// chats).
const maxMediaTreeTasks = 1000

// AgentMediaQuery selects the media an agent's media tool may see in one chat: the live assets
// of the agent's owner, and those produced in or attached to the chat's tree (its root chat and
// every sub-agent chat below the root).
type AgentMediaQuery struct {
	PrincipalID int64  // the agent's owner
	TaskID      int64  // the current chat
	Text        string // case-insensitive substring of the file name; "" for any
	Kind        string // "" for every kind
	// Page starts at 1 (lower values mean 1); PerPage is at most 100, and below 1 means 25.
	Page, PerPage int
}

// SearchAgentMedia returns one page of the media q may see, newest first (created_at, then id,
// descending). Errors: none beyond the database's own.
func (s *Media) SearchAgentMedia(ctx context.Context, q AgentMediaQuery) ([]MediaAsset, error) {
	out := []MediaAsset{}
	limit, offset, ok := pageWindow(q.Page, q.PerPage)
	if !ok {
		return out, nil
	}
	db := s.conn(ctx)
	scope, err := agentMediaScope(db, q.PrincipalID, q.TaskID)
	if err != nil {
		return nil, err
	}
	db = scope.Where(mediaLive, s.now())
	if q.Kind != "" {
		db = db.Where("media_assets.kind = ?", q.Kind)
	}
	if q.Text != "" {
		db = db.Where("LOWER(media_assets.filename) LIKE ? ESCAPE '!'", "%"+likeEscape(strings.ToLower(q.Text))+"%")
	}
	var rows []mediaAssetRow
	if err := db.Order("media_assets.created_at DESC").Order("media_assets.id DESC").Limit(limit).Offset(offset).Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("search agent media: %w", err))
	}
	for i := range rows {
		out = append(out, *rows[i].toMediaAsset())
	}
	return out, nil
}

// AgentMediaAsset returns asset id when the media tool of an agent owned by principalID may see
// it in chat taskID (see AgentMediaQuery). Errors: ErrNotFound "media asset not found" in every
// other case.
func (s *Media) AgentMediaAsset(ctx context.Context, principalID, taskID int64, id string) (*MediaAsset, error) {
	if id == "" || len(id) > MaxMediaIDLen {
		return nil, errMediaNotFound()
	}
	db := s.conn(ctx)
	scope, err := agentMediaScope(db, principalID, taskID)
	if err != nil {
		return nil, err
	}
	var row mediaAssetRow
	err = scope.Where("media_assets.id = ?", id).Where(mediaLive, s.now()).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errMediaNotFound()
	}
	if err != nil {
		return nil, TranslateError(fmt.Errorf("load agent media: %w", err))
	}
	return row.toMediaAsset(), nil
}

// agentMediaScope is the media_assets query narrowed to the assets of principalID and those
// produced in or attached to the chat tree of taskID.
func agentMediaScope(db *gorm.DB, principalID, taskID int64) (*gorm.DB, error) {
	tree, err := chatTree(db, taskID)
	if err != nil {
		return nil, err
	}
	q := db.Model(&mediaAssetRow{})
	if len(tree) == 0 {
		return q.Where("media_assets.principal_id = ?", principalID), nil
	}
	return q.Where("(media_assets.principal_id = ? OR media_assets.task_id IN ? OR EXISTS (SELECT 1 FROM task_media "+
		"WHERE task_media.media_id = media_assets.id AND task_media.task_id IN ?))", principalID, tree, tree), nil
}

// chatTree returns the ids of the tree of task id: its root (found up parent_task_id) and every
// task below the root, at most maxMediaTreeTasks; empty when the task does not exist.
func chatTree(db *gorm.DB, id int64) ([]int64, error) {
	root := id
	for depth := 0; depth <= maxMediaTaskDepth; depth++ {
		var rows []struct {
			ID           int64
			ParentTaskID *int64
		}
		if err := db.Model(&taskRow{}).Select("id, parent_task_id").Where("id = ?", root).Scan(&rows).Error; err != nil {
			return nil, TranslateError(fmt.Errorf("chat tree: %w", err))
		}
		if len(rows) == 0 {
			if root == id {
				return nil, nil
			}
			break
		}
		if rows[0].ParentTaskID == nil {
			break
		}
		root = *rows[0].ParentTaskID
	}
	out := []int64{root}
	level := []int64{root}
	for depth := 0; len(level) > 0 && depth <= maxMediaTaskDepth && len(out) < maxMediaTreeTasks; depth++ {
		var next []int64
		if err := db.Model(&taskRow{}).Where("parent_task_id IN ?", level).Order("id").
			Limit(maxMediaTreeTasks-len(out)).Pluck("id", &next).Error; err != nil {
			return nil, TranslateError(fmt.Errorf("chat tree: %w", err))
		}
		out = append(out, next...)
		level = next
	}
	return out, nil
}

// likeEscape escapes the LIKE wildcards of s with '!' (the ESCAPE character used above).
func likeEscape(s string) string {
	return strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(s)
}
