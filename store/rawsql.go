package store

import (
	"database/sql"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The statements every step of every task runs (the claim, the lease write, the task read, the
// conversation read, the message and event inserts, the notification's read and insert, the
// tool calls' insert, read and result), and a new task's insert (the per-agent API's chat
// start, issue 28), are written and scanned here by hand instead of through
// GORM's builders and reflection: in a drain, GORM's statement building and scanning made
// most of the allocation of a step (AddClause, clone, ConvertToCreateValues, Scan: about 60 %
// of 85 kB per task, docs/benchmarks.md), and the garbage collector's work followed. They run
// on the connection (or transaction) of the gorm.DB they are given, through the store's
// prepared-statement pool. GORM's callbacks do not see them: none of their tables is guarded
// by a version (store/versions.go), and their errors are wrapped by their callers.

// rawExec runs a statement on db's connection or transaction.
func rawExec(db *gorm.DB, q string, args ...any) (sql.Result, error) {
	return db.Statement.ConnPool.ExecContext(db.Statement.Context, rebind(db, q), args...)
}

// rawQuery runs a query on db's connection or transaction.
func rawQuery(db *gorm.DB, q string, args ...any) (*sql.Rows, error) {
	return db.Statement.ConnPool.QueryContext(db.Statement.Context, rebind(db, q), args...)
}

// rebound caches the PostgreSQL text of each hand-written statement (rebind).
var rebound sync.Map // string → string

// rebind turns the '?' placeholders of a hand-written statement into PostgreSQL's $1, $2 …
// on that dialect (GORM does it for the statements it builds; these bypass it). The
// hand-written statements hold no '?' inside literals.
func rebind(db *gorm.DB, q string) string {
	if db.Dialector.Name() != DialectPostgres || !strings.Contains(q, "?") {
		return q
	}
	if out, ok := rebound.Load(q); ok {
		return out.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] != '?' {
			b.WriteByte(q[i])
			continue
		}
		n++
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
	}
	out := b.String()
	if len(q) < 4096 { // IN lists of many ids are not worth keeping
		rebound.Store(q, out)
	}
	return out
}

// insertReturningID runs INSERT q and returns the new row's id: by RETURNING id on PostgreSQL
// (its driver has no LastInsertId), else from the result.
func insertReturningID(tx *gorm.DB, q string, args ...any) (int64, error) {
	if tx.Dialector.Name() == DialectPostgres {
		rows, err := rawQuery(tx, q+" RETURNING id", args...)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		var id int64
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return 0, err
			}
			return 0, fmt.Errorf("insert returned no id")
		}
		if err := rows.Scan(&id); err != nil {
			return 0, err
		}
		return id, rows.Close()
	}
	res, err := rawExec(tx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// taskColumns are the columns of tasks in the order of taskRow's fields (taskRow.dest).
const taskColumns = "id, agent_id, principal_id, user_id, parent_task_id, status, prompt, answer, error_code, " +
	"error_message, max_steps, steps_used, retry_count, next_retry_at, recoveries, input_tokens, output_tokens, " +
	"data, source, api_key_id, callback_url, lease_owner, lease_expires_at, created_at, updated_at, finished_at, " +
	"event_seq, trace_parent, message_seq, tool_call_count, summary_seq"

// dest are the scan destinations of taskColumns.
func (r *taskRow) dest() []any {
	return []any{&r.ID, &r.AgentID, &r.PrincipalID, &r.UserID, &r.ParentTaskID, &r.Status, &r.Prompt, &r.Answer,
		&r.ErrorCode, &r.ErrorMessage, &r.MaxSteps, &r.StepsUsed, &r.RetryCount, &r.NextRetryAt, &r.Recoveries,
		&r.InputTokens, &r.OutputTokens, &r.Data, &r.Source, &r.APIKeyID, &r.CallbackURL, &r.LeaseOwner,
		&r.LeaseExpiresAt, &r.CreatedAt, &r.UpdatedAt, &r.FinishedAt, &r.EventSeq, &r.TraceParent, &r.MessageSeq,
		&r.ToolCallCount, &r.SummarySeq}
}

// destWanted is dest and taskRow.noticeWanted (noticeWantedSQL, read after the columns).
func (r *taskRow) destWanted() []any {
	r.noticeWanted = new(bool)
	return append(r.dest(), r.noticeWanted)
}

// insertTaskRow writes r to tasks (every column but id, as GORM's Create did) and sets its id.
// Errors: the dialect's errors translated as GORM's (gorm.ErrForeignKeyViolated for an unknown
// agent, user or parent task).
func insertTaskRow(tx *gorm.DB, r *taskRow) error {
	id, err := insertReturningID(tx, "INSERT INTO tasks (agent_id, principal_id, user_id, parent_task_id, status, prompt, "+
		"answer, error_code, error_message, max_steps, steps_used, retry_count, next_retry_at, recoveries, input_tokens, "+
		"output_tokens, data, source, api_key_id, callback_url, lease_owner, lease_expires_at, created_at, updated_at, "+
		"finished_at, event_seq, trace_parent, message_seq, tool_call_count, summary_seq) "+
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		r.AgentID, r.PrincipalID, r.UserID, r.ParentTaskID, r.Status, r.Prompt, r.Answer, r.ErrorCode, r.ErrorMessage,
		r.MaxSteps, r.StepsUsed, r.RetryCount, r.NextRetryAt, r.Recoveries, r.InputTokens, r.OutputTokens, r.Data, r.Source,
		r.APIKeyID, r.CallbackURL, r.LeaseOwner, r.LeaseExpiresAt, r.CreatedAt, r.UpdatedAt, r.FinishedAt, r.EventSeq,
		r.TraceParent, r.MessageSeq, r.ToolCallCount, r.SummarySeq)
	if err != nil {
		return dialectError(tx, err)
	}
	r.ID = id
	return nil
}

// queryRows runs q and scans every row into a T through dest (the row's fields in the order of
// q's columns).
func queryRows[T any](db *gorm.DB, dest func(*T) []any, q string, args ...any) ([]T, error) {
	rows, err := rawQuery(db, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var r T
		if err := rows.Scan(dest(&r)...); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// changedRows returns copies of rows with changes (an UPDATE's SET list, setClause's: column →
// value, nil, or an expression adding to the column's own value, "col + ?" or "col + 1")
// applied as the UPDATE applies them, or nil when rows is empty or a change is of another form
// (the caller then reads the rows back).
func changedRows(rows []taskRow, changes map[string]any) []taskRow {
	if len(rows) == 0 {
		return nil
	}
	cols := strings.Split(taskColumns, ", ")
	out := slices.Clone(rows)
	for i := range out {
		dest := out[i].dest()
		for c, v := range changes {
			j := slices.Index(cols, c)
			if j < 0 || !setField(reflect.ValueOf(dest[j]).Elem(), c, v) {
				return nil
			}
		}
	}
	return out
}

// setField sets f, the field of column c, to v as the UPDATE's SET c = v does, and reports
// whether it could.
func setField(f reflect.Value, c string, v any) bool {
	if e, ok := v.(clause.Expr); ok {
		var n int64
		switch {
		case e.SQL == c+" + 1" && len(e.Vars) == 0:
			n = 1
		case e.SQL == c+" + ?" && len(e.Vars) == 1 && reflect.ValueOf(e.Vars[0]).CanInt():
			n = reflect.ValueOf(e.Vars[0]).Int()
		default:
			return false
		}
		if !f.CanInt() {
			return false
		}
		f.SetInt(f.Int() + n)
		return true
	}
	if v == nil {
		if f.Kind() != reflect.Pointer {
			return false
		}
		f.SetZero()
		return true
	}
	rv := reflect.ValueOf(v)
	if f.Kind() == reflect.Pointer && rv.Type().AssignableTo(f.Type().Elem()) {
		p := reflect.New(rv.Type())
		p.Elem().Set(rv)
		f.Set(p)
		return true
	}
	if !rv.Type().AssignableTo(f.Type()) {
		return false
	}
	f.Set(rv)
	return true
}

// queryTasks runs q, which returns taskColumns.
func queryTasks(db *gorm.DB, q string, args ...any) ([]taskRow, error) {
	return queryRows(db, (*taskRow).dest, q, args...)
}

// inList renders ids as the parenthesised placeholder list of an IN, with its arguments.
func inList(ids []int64) (string, []any) {
	return "(" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")", anys(ids)
}

// idIn is the condition "col is one of ids" with its arguments. On PostgreSQL it is
// col = ANY(?) with the ids as one array: one statement text whatever their number. An IN list
// of n placeholders is a statement of its own for each n, and PostgreSQL plans each prepared
// statement afresh for its first five runs on every connection, so a batch's changing size
// kept the claim's UPDATE planned on almost every run (issue 28: 445 plans in 514 runs).
func idIn(tx *gorm.DB, col string, ids []int64) (string, []any) {
	if tx.Dialector.Name() == DialectPostgres {
		return col + " = ANY(?)", []any{ids}
	}
	in, args := inList(ids)
	return col + " IN " + in, args
}

// anys is xs as statement arguments.
func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// setClause renders changes (column → value, or gorm.Expr) as the SET list of an UPDATE, in
// column order (one statement text per set of columns, so it stays prepared), with its
// arguments.
func setClause(changes map[string]any) (string, []any) {
	cols := make([]string, 0, len(changes))
	for c := range changes {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	var b strings.Builder
	args := make([]any, 0, len(cols))
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c)
		if e, ok := changes[c].(clause.Expr); ok {
			b.WriteString(" = ")
			b.WriteString(e.SQL)
			args = append(args, e.Vars...)
			continue
		}
		b.WriteString(" = ?")
		args = append(args, changes[c])
	}
	return b.String(), args
}

// toolCallColumns are the columns of task_tool_calls in the order of toolCallRow's fields.
const toolCallColumns = "id, task_id, message_sequence, provider_call_id, tool_class, name, operation, status, " +
	"proposed_arguments, approved_arguments, result, reason, decided_by, decided_by_key, decided_at, created_at, executed_at, restarts, gate, allow_for_task, decided_by_system, approval_timeout_seconds"

// dest are the scan destinations of toolCallColumns.
func (r *toolCallRow) dest() []any {
	return []any{&r.ID, &r.TaskID, &r.MessageSequence, &r.ProviderCallID, &r.ToolClass, &r.Name, &r.Operation,
		&r.Status, &r.ProposedArguments, &r.ApprovedArguments, &r.Result, &r.Reason, &r.DecidedBy, &r.DecidedByKey,
		&r.DecidedAt, &r.CreatedAt, &r.ExecutedAt, &r.Restarts, &r.Gate, &r.AllowForTask, &r.DecidedBySystem, &r.ApprovalTimeoutSeconds}
}

// insertToolCallRow writes r to task_tool_calls and sets its id. Errors: the dialect's errors
// translated as GORM's (gorm.ErrDuplicatedKey for a provider call id recorded already).
func insertToolCallRow(tx *gorm.DB, r *toolCallRow) error {
	id, err := insertReturningID(tx, "INSERT INTO task_tool_calls (task_id, message_sequence, provider_call_id, tool_class, name, "+
		"operation, status, proposed_arguments, approved_arguments, result, reason, decided_by, decided_by_key, decided_at, "+
		"created_at, executed_at, gate, approval_timeout_seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		r.TaskID, r.MessageSequence, r.ProviderCallID, r.ToolClass, r.Name, r.Operation, r.Status, r.ProposedArguments,
		r.ApprovedArguments, r.Result, r.Reason, r.DecidedBy, r.DecidedByKey, r.DecidedAt, r.CreatedAt, r.ExecutedAt, r.Gate,
		r.ApprovalTimeoutSeconds)
	if err != nil {
		return dialectError(tx, err)
	}
	r.ID = id
	return nil
}

// insertEventRows writes rows to task_events in one statement (their ids are not read: a blind
// write, held inside holdBlind's scope). On PostgreSQL the columns go as five arrays, one
// statement text whatever the number of rows (see idIn).
func insertEventRows(tx *gorm.DB, rows []taskEventRow) error {
	if len(rows) == 0 {
		return nil
	}
	if tx.Dialector.Name() == DialectPostgres {
		taskIDs, seqs := make([]int64, len(rows)), make([]int64, len(rows))
		types, data, at := make([]string, len(rows)), make([]string, len(rows)), make([]time.Time, len(rows))
		for i, r := range rows {
			taskIDs[i], seqs[i], types[i], data[i], at[i] = r.TaskID, r.Sequence, r.Type, r.Data, r.CreatedAt
		}
		return blindExec(tx, "INSERT INTO task_events (task_id, sequence, type, data, created_at) "+
			"SELECT * FROM unnest(?::bigint[], ?::bigint[], ?::text[], ?::text[], ?::timestamp[])", taskIDs, seqs, types, data, at)
	}
	var b strings.Builder
	b.WriteString("INSERT INTO task_events (task_id, sequence, type, data, created_at) VALUES ")
	args := make([]any, 0, 5*len(rows))
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?)")
		args = append(args, r.TaskID, r.Sequence, r.Type, r.Data, r.CreatedAt)
	}
	return blindExec(tx, b.String(), args...)
}

// messageColumns are the columns of task_messages in the order of taskMessageRow's fields.
const messageColumns = "task_id, sequence, role, text, reasoning, tool_calls, provider_call_id, media_ids, " +
	"input_tokens, output_tokens, created_at"

// dest are the scan destinations of messageColumns.
func (r *taskMessageRow) dest() []any {
	return []any{&r.TaskID, &r.Sequence, &r.Role, &r.Text, &r.Reasoning, &r.ToolCalls, &r.ProviderCallID,
		&r.MediaIDs, &r.InputTokens, &r.OutputTokens, &r.CreatedAt}
}

// agentColumns are the columns of agents in the order of agentRow's fields.
const agentColumns = "id, principal_id, name, description, system_prompt, notes, max_steps, allow_followup, " +
	"retry_after_minutes, max_retries, metadata, picture_media_id, compaction_enabled, compaction_threshold_percent, " +
	"compaction_answer_reserve, tool_result_max_chars, summary_llm_config_id, approvers, approval_timeout_seconds, " +
	"approval_timeout_action, created_at, updated_at"

// agentByID reads one agent (its id the second argument) with the favorite marker of a viewer
// (the first), as agentQuery does.
var agentByID = "SELECT agents." + strings.ReplaceAll(agentColumns, ", ", ", agents.") +
	", agent_favorites.agent_id IS NOT NULL FROM agents LEFT JOIN agent_favorites ON agent_favorites.agent_id = agents.id" +
	" AND agent_favorites.user_id = ? WHERE agents.id = ?"

// dest are the scan destinations of agentByID's columns.
func (v *agentView) dest() []any {
	r := &v.Row
	return []any{&r.ID, &r.PrincipalID, &r.Name, &r.Description, &r.SystemPrompt, &r.Notes, &r.MaxSteps, &r.AllowFollowup,
		&r.RetryAfterMinutes, &r.MaxRetries, &r.Metadata, &r.PictureMediaID, &r.CompactionEnabled, &r.CompactionThresholdPercent,
		&r.CompactionAnswerReserve, &r.ToolResultMaxChars, &r.SummaryLLMConfigID, &r.Approvers, &r.ApprovalTimeoutSeconds,
		&r.ApprovalTimeoutAction, &r.CreatedAt, &r.UpdatedAt, &v.IsFavorite}
}

// apiKeyColumns are the columns of agent_api_keys in the order of apiKeyRow's fields.
const apiKeyColumns = "id, key_id, agent_id, name, secret_digest, created_by, created_at, last_used_at, revoked_at"

// dest are the scan destinations of apiKeyColumns.
func (r *apiKeyRow) dest() []any {
	return []any{&r.ID, &r.KeyID, &r.AgentID, &r.Name, &r.SecretDigest, &r.CreatedBy, &r.CreatedAt, &r.LastUsedAt, &r.RevokedAt}
}

// insertMessageRow writes r to task_messages: a blind write (blindwrite.go) — nothing reads a
// message's id, and a step's reads of task_messages after it (enqueueCallbacks) flush first.
func insertMessageRow(tx *gorm.DB, r *taskMessageRow) error {
	err := blindExec(tx, "INSERT INTO task_messages (task_id, sequence, role, text, reasoning, tool_calls, provider_call_id, "+
		"media_ids, input_tokens, output_tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		r.TaskID, r.Sequence, r.Role, r.Text, r.Reasoning, r.ToolCalls, r.ProviderCallID, r.MediaIDs, r.InputTokens,
		r.OutputTokens, r.CreatedAt)
	if err != nil {
		return fmt.Errorf("message: %w", err)
	}
	return nil
}

// dialectError is err translated by the dialect as GORM's own calls translate theirs
// (gorm.ErrDuplicatedKey, gorm.ErrForeignKeyViolated …), for the hand-written statements.
func dialectError(tx *gorm.DB, err error) error {
	if t, ok := tx.Dialector.(gorm.ErrorTranslator); ok {
		return t.Translate(err)
	}
	return err
}
