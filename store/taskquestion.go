package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// Question is one question of an ask_user_question batch.
type Question struct {
	Question      string   `json:"question"`
	Header        string   `json:"header"`
	Options       []string `json:"options"`
	Multiple      bool     `json:"multiple"`
	AllowFreeText bool     `json:"allowFreeText"`
}

// QuestionAnswer is the answer to one question, named by its header.
type QuestionAnswer struct {
	Header     string   `json:"header"`
	Selections []string `json:"selections"`
	FreeText   *string  `json:"free_text,omitempty"`
}

// QuestionBatch is one ask_user_question call; Answers is nil until answered.
type QuestionBatch struct {
	ID         int64
	TaskID     int64
	ToolCallID string
	Questions  []Question
	Answers    []QuestionAnswer
	CreatedAt  time.Time
	AnsweredAt *time.Time
	AnsweredBy *int64 // the user who answered (nil: unanswered, or answered through an API key)
}

type questionRow struct {
	ID         int64
	TaskID     int64
	ToolCallID string
	Questions  string
	Answers    *string
	CreatedAt  time.Time
	AnsweredAt *time.Time
	AnsweredBy *int64
}

func (questionRow) TableName() string { return "task_questions" }

func (r *questionRow) toBatch() (QuestionBatch, error) {
	b := QuestionBatch{ID: r.ID, TaskID: r.TaskID, ToolCallID: r.ToolCallID, CreatedAt: r.CreatedAt.UTC(), AnsweredAt: utcPtr(r.AnsweredAt), AnsweredBy: r.AnsweredBy}
	if err := json.Unmarshal([]byte(r.Questions), &b.Questions); err != nil {
		return b, fmt.Errorf("question batch %d: %w", r.ID, err)
	}
	if r.Answers != nil {
		if err := json.Unmarshal([]byte(*r.Answers), &b.Answers); err != nil {
			return b, fmt.Errorf("question batch %d: answers: %w", r.ID, err)
		}
	}
	return b, nil
}

// RecordQuestions stores a question batch asked by tool call toolCallID of a task whose lease
// workerID holds. Errors: ErrInvalidState (lease lost), ErrConflict (batch already recorded),
// ErrInvalid (no questions, oversize values), ErrNotFound.
func (s *Tasks) RecordQuestions(ctx context.Context, taskID int64, workerID, toolCallID string, qs []Question) (*QuestionBatch, error) {
	// Not user input: the loop records what the model asked; these checks guard its columns.
	if err := checkKey("tool call id", toolCallID, true); err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, invalidf("a question batch needs at least one question")
	}
	enc, err := encodeJSON("questions", qs)
	if err != nil {
		return nil, err
	}
	if err := checkText("questions", enc, MaxTaskJSONLen); err != nil {
		return nil, err
	}
	out, err := inLease(ctx, s.Store, taskID, workerID, func(tx *gorm.DB, now time.Time) (QuestionBatch, error) {
		row := questionRow{TaskID: taskID, ToolCallID: toolCallID, Questions: enc, CreatedAt: now}
		if err := tx.Create(&row).Error; err != nil {
			if errors.Is(TranslateError(err), svcerr.ErrConflict) {
				return QuestionBatch{}, svcerr.New(svcerr.ErrConflict, "question batch %q is already recorded", toolCallID)
			}
			return QuestionBatch{}, fmt.Errorf("task %d: record questions: %w", taskID, err)
		}
		b, err := row.toBatch()
		if err != nil {
			return b, err
		}
		return b, appendEvents(tx, taskID, now, TaskEvent{Type: EventQuestionAsked, Questions: &b})
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// PendingQuestions returns the unanswered question batches of a task, oldest first.
func (s *Tasks) PendingQuestions(ctx context.Context, taskID int64) ([]QuestionBatch, error) {
	return questionBatches(s.conn(ctx), taskID, true)
}

// QuestionBatches returns every question batch of a task (answered ones with their answers).
func (s *Tasks) QuestionBatches(ctx context.Context, taskID int64) ([]QuestionBatch, error) {
	return questionBatches(s.conn(ctx), taskID, false)
}

func questionBatches(db *gorm.DB, taskID int64, pendingOnly bool) ([]QuestionBatch, error) {
	db = db.Where("task_id = ?", taskID)
	if pendingOnly {
		db = db.Where("answered_at IS NULL")
	}
	var rows []questionRow
	if err := db.Order("id").Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("task %d: questions: %w", taskID, err))
	}
	return convertRows(rows, (*questionRow).toBatch)
}

// AnswerCheck validates answers against the pending batch inside the answering transaction;
// its error is returned as it is.
type AnswerCheck func(b *QuestionBatch) error

// AnswerQuestions records answers to pending batch toolCallID of a task in AWAITING_INPUT
// after check accepted them; when no batch is left unanswered the task becomes QUEUED.
// The caller has bounded the answers (task.CheckJSON). Errors: ErrNotFound "task not found",
// ErrInvalidState (not AWAITING_INPUT), ErrInvalid (no such pending batch: read under the task's
// lock), and whatever check returns.
func (s *Tasks) AnswerQuestions(ctx context.Context, taskID int64, toolCallID string, answers []QuestionAnswer, check AnswerCheck) (*Task, error) {
	return s.AnswerQuestionsBy(ctx, taskID, Decider{}, toolCallID, answers, check)
}

// AnswerQuestionsBy is AnswerQuestions recording by's user (when set, and not through an API
// key) as who answered.
func (s *Tasks) AnswerQuestionsBy(ctx context.Context, taskID int64, by Decider, toolCallID string, answers []QuestionAnswer, check AnswerCheck) (*Task, error) {
	var answeredBy *int64
	if by.UserID != 0 && by.KeyID == "" && !by.System {
		answeredBy = &by.UserID
	}
	enc, err := encodeJSON("answers", answers)
	if err != nil {
		return nil, err
	}
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*Task, error) {
		row, err := loadTask(tx, taskID, true)
		if err != nil {
			return nil, err
		}
		if !taskstate.Leaves(taskstate.Answer, row.Status) {
			return nil, invalidState(taskstate.Rules[taskstate.Answer].Verb, row.Status)
		}
		var qr questionRow
		err = tx.Where("task_id = ? AND tool_call_id = ? AND answered_at IS NULL", taskID, toolCallID).Take(&qr).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, invalidf("tool_call_id: no pending question batch %q", toolCallID)
		}
		if err != nil {
			return nil, fmt.Errorf("task %d: question batch: %w", taskID, err)
		}
		b, err := qr.toBatch()
		if err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(&b); err != nil {
				return nil, err
			}
		}
		now := s.now()
		res := tx.Model(&questionRow{}).Where("id = ? AND answered_at IS NULL", qr.ID).
			Updates(map[string]any{"answers": enc, "answered_at": now, "answered_by": answeredBy})
		if res.Error != nil {
			return nil, fmt.Errorf("task %d: answer: %w", taskID, res.Error)
		}
		b.Answers, b.AnsweredAt, b.AnsweredBy = answers, &now, answeredBy
		if err := appendEvents(tx, taskID, now, TaskEvent{Type: EventQuestionAnswered, Questions: &b}); err != nil {
			return nil, err
		}
		return s.queueWhenSettled(tx, taskID, taskstate.Answer, row.Status, now, &questionRow{}, "answered_at IS NULL")
	})
}
