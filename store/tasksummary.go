package store

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Summary is a compaction of a task's conversation (issue 25): the model's summary of the
// messages up to ThroughSequence, sent in their place from then on. It lives in the task's
// event log (an EventSummary event): the transcript keeps every message.
type Summary struct {
	// FromSequence is the first message it newly replaces (the ones before were in the previous
	// summary, which it folds in).
	FromSequence    int64  `json:"from_sequence,omitempty"`
	ThroughSequence int64  `json:"through_sequence"`
	Text            string `json:"text"`
	Model           string `json:"model"`
	LLMConfigID     int64  `json:"llm_config_id,omitempty"` // the configuration that wrote it
	InputTokens     int64  `json:"input_tokens"`
	OutputTokens    int64  `json:"output_tokens"`
	// Prices are the writing configuration's, in force at the call: the summary's model call is
	// written to the usage ledger with them (not part of the event).
	Prices LLMPrices `json:"-"`
}

// AppendSummary records summary sm of task taskID, held by workerID, as its next event, and
// adds the summary's tokens to the task's usage, in one transaction. Errors: ErrInvalidState
// when the task is not RUNNING under workerID's lease; ErrInvalid for a summary that replaces
// no message.
func (s *Tasks) AppendSummary(ctx context.Context, taskID int64, workerID string, sm Summary) error {
	if sm.ThroughSequence < 1 || sm.InputTokens < 0 || sm.OutputTokens < 0 {
		return invalidf("a summary replaces messages 1 to its through_sequence, with its usage")
	}
	return s.tx(ctx, func(tx *gorm.DB) error {
		now := s.now()
		row, err := leaseWrite(tx, taskID, workerID, now, map[string]any{
			"input_tokens":  gorm.Expr("input_tokens + ?", sm.InputTokens),
			"output_tokens": gorm.Expr("output_tokens + ?", sm.OutputTokens),
		}, reserve{events: 1})
		if err != nil {
			return err
		}
		call := ModelCall{LLMConfigID: sm.LLMConfigID, Model: sm.Model, InputTokens: sm.InputTokens, OutputTokens: sm.OutputTokens, Prices: sm.Prices}
		if err := s.recordUsage(tx, row, now, call); err != nil {
			return err
		}
		if err := insertNumbered(tx, taskID, row.EventSeq, now, []TaskEvent{{Type: EventSummary, Summary: &sm}}); err != nil {
			return err
		}
		// Its own statement: MySQL/MariaDB would read event_seq as just set within one UPDATE,
		// SQLite as it was before.
		return tx.Table("tasks").Where("id = ?", taskID).Update("summary_seq", row.EventSeq).Error
	})
}

// SummaryAt returns the summary of task taskID written as event seq (Task.SummarySeq). Errors:
// ErrNotFound when that event is not a summary; the database's.
func (s *Tasks) SummaryAt(ctx context.Context, taskID, seq int64) (*Summary, error) {
	var row taskEventRow
	err := s.conn(ctx).Where("task_id = ? AND sequence = ? AND type = ?", taskID, seq, EventSummary).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, svcerr.New(svcerr.ErrNotFound, "task %d has no summary at event %d", taskID, seq)
	}
	if err != nil {
		return nil, fmt.Errorf("task %d: summary: %w", taskID, err)
	}
	ev, err := row.toEvent()
	if err != nil {
		return nil, err
	}
	return ev.Summary, nil
}

// Summaries returns the summary events of task taskID (EventSummary, with their sequence and
// time), oldest first: a chat's transcript shows them. Errors: the database's.
func (s *Tasks) Summaries(ctx context.Context, taskID int64) ([]TaskEvent, error) {
	var rows []taskEventRow
	if err := s.conn(ctx).Where("task_id = ? AND type = ?", taskID, EventSummary).Order("sequence").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("task %d: summaries: %w", taskID, err)
	}
	out := make([]TaskEvent, 0, len(rows))
	for i := range rows {
		ev, err := rows[i].toEvent()
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}
