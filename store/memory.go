package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Memory is one fact an agent remembered (the memory tool) or an operator stored for it.
type Memory struct {
	ID      int64
	AgentID int64
	// UserID is the user the memory belongs to (scope agent_user); nil for a memory of the
	// whole agent (scope agent).
	UserID *int64
	Text   string
	// TaskID and MessageSequence name the message whose tool call remembered it; nil when an
	// operator or an import stored it, TaskID also once the task was deleted.
	TaskID          *int64
	MessageSequence *int
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// NewMemory is what Remember stores.
type NewMemory struct {
	AgentID         int64
	UserID          *int64
	Text            string
	TaskID          *int64
	MessageSequence *int
}

// MemoryQuery selects memories of one agent for RecallMemories.
type MemoryQuery struct {
	AgentID int64
	// AllUsers lists every memory of the agent (an operator's view); otherwise only those of
	// UserID (nil: the agent-wide ones), so that a scope never sees another's.
	AllUsers bool
	UserID   *int64
	// Text ranks by its words (see memoryTerms); empty lists the most recent first.
	Text          string
	Offset, Limit int
	// Total asks RecallMemories to count every memory selected (a second pass over the scope's
	// rows: an operator's paged list needs it, the memory tool does not).
	Total bool
}

type memoryRow struct {
	ID              int64 `gorm:"primaryKey"`
	AgentID         int64
	UserID          *int64
	Text            string
	Terms           string
	TaskID          *int64
	MessageSequence *int
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

func (memoryRow) TableName() string { return "agent_memories" }

func (r *memoryRow) toMemory() Memory {
	return Memory{ID: r.ID, AgentID: r.AgentID, UserID: r.UserID, Text: r.Text, TaskID: r.TaskID,
		MessageSequence: r.MessageSequence, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func errMemoryNotFound() error { return svcerr.New(svcerr.ErrNotFound, "memory not found") }

// memoryStopWords are left out of a recall query: they would match nearly every memory.
var memoryStopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"do": true, "does": true, "for": true, "from": true, "has": true, "have": true, "how": true,
	"in": true, "is": true, "it": true, "its": true, "of": true, "on": true, "or": true, "that": true,
	"the": true, "this": true, "to": true, "was": true, "were": true, "what": true, "when": true,
	"where": true, "which": true, "who": true, "why": true, "with": true,
}

// memoryWords splits s into its normalised words: lower-cased runs of letters and digits, each
// once, in order of first appearance. Everything else separates words.
func memoryWords(s string) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// memoryTerms is the terms column of text: its normalised words between single spaces, with a
// space on either side, so that "% word%" matches a word's start.
func memoryTerms(text string) string {
	return " " + strings.Join(memoryWords(text), " ") + " "
}

// memoryTSVector is the expression of agent_memories' full-text index on PostgreSQL (migration
// 0026); a query must name it exactly so for the index to serve it.
const memoryTSVector = "to_tsvector('simple', terms)"

// queryTerms are the words recall matches for q: its normalised words without stop words and
// one-letter words, at most limits.MaxMemoryQueryTerms.
func queryTerms(q string) []string {
	var out []string
	for _, w := range memoryWords(q) {
		if len([]rune(w)) < 2 || memoryStopWords[w] {
			continue
		}
		out = append(out, w)
		if len(out) == limits.MaxMemoryQueryTerms {
			break
		}
	}
	return out
}

// Remember stores m after check allowed it on the locked agent. The caller has checked the
// text (length, not blank). Errors: ErrNotFound "agent not found", ErrInvalidState when the
// agent already keeps limits.MaxMemoriesPerAgent memories, and whatever check returns.
func (s *Agents) Remember(ctx context.Context, m NewMemory, check AgentCheck) (*Memory, error) {
	var out Memory
	err := s.withAgent(ctx, m.AgentID, 0, check, func(tx *gorm.DB, _ *Agent) error {
		var n int64
		if err := tx.Model(&memoryRow{}).Where("agent_id = ?", m.AgentID).Count(&n).Error; err != nil {
			return fmt.Errorf("count memories: %w", err)
		}
		if n >= limits.MaxMemoriesPerAgent {
			return svcerr.New(svcerr.ErrInvalidState, "the agent already keeps %d memories; forget some first", limits.MaxMemoriesPerAgent)
		}
		now := s.now()
		row := memoryRow{AgentID: m.AgentID, UserID: m.UserID, Text: m.Text, Terms: memoryTerms(m.Text),
			TaskID: m.TaskID, MessageSequence: m.MessageSequence, CreatedAt: now, UpdatedAt: now}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("insert memory: %w", err)
		}
		out = row.toMemory()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// RecallMemories returns a page of the memories q selects and, when q.Total, how many it
// selects in all (else 0).
// Ranking (docs/design.md "Memory"): a memory matches when one of the query's terms starts one
// of its words; matches are ordered by the number of distinct query terms they contain, then
// most recent first, the same on every dialect; the candidates come from the dialect's
// full-text index (memoryMatch), the ranking reads those only. Without query terms the
// page is the most recent memories. Errors: none beyond the database's own.
func (s *Agents) RecallMemories(ctx context.Context, q MemoryQuery) ([]Memory, int64, error) {
	db := s.conn(ctx).Model(&memoryRow{}).Where("agent_id = ?", q.AgentID)
	switch {
	case q.AllUsers:
	case q.UserID == nil:
		db = db.Where("user_id IS NULL")
	default:
		db = db.Where("user_id = ?", *q.UserID)
	}
	order := db.Session(&gorm.Session{}).Order("id DESC")
	if terms := queryTerms(q.Text); len(terms) > 0 {
		scores := make([]string, len(terms))
		likes := make([]any, len(terms))
		for i, t := range terms {
			scores[i] = "CASE WHEN terms LIKE ? ESCAPE '!' THEN 1 ELSE 0 END"
			likes[i] = "% " + likeEscape(t) + "%"
		}
		match, args := s.memoryMatch(terms)
		db = db.Where(match, args...)
		order = db.Session(&gorm.Session{}).Select("*, ("+strings.Join(scores, " + ")+") AS score", likes...).
			Order("score DESC").Order("id DESC")
	}
	var total int64
	if q.Total {
		if err := db.Count(&total).Error; err != nil {
			return nil, 0, fmt.Errorf("count memories: %w", err)
		}
	}
	var rows []memoryRow
	if err := order.Offset(q.Offset).Limit(q.Limit).Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("recall memories: %w", err)
	}
	out := make([]Memory, len(rows))
	for i := range rows {
		out[i] = rows[i].toMemory()
	}
	return out, total, nil
}

// memoryFullTextMinLen and memoryFullTextMaxLen bound, in characters, the words InnoDB's
// FULLTEXT index holds (innodb_ft_min_token_size and innodb_ft_max_token_size at their
// defaults); recall matches other words with LIKE.
const (
	memoryFullTextMinLen = 3
	memoryFullTextMaxLen = 84
)

// memoryMatch is the condition selecting the memories with a word that starts with one of
// terms (each a normalised word: letters and digits only, so never a full-text operator),
// through the dialect's full-text index: SQLite's FTS4 table agent_memories_fts, MySQL/MariaDB's
// FULLTEXT index in boolean mode, PostgreSQL's tsvector, each term a prefix and none required. A term InnoDB does not
// index (shorter than three letters, longer than 84) is matched by LIKE instead, which reads the
// scope's rows as recall did before the index.
func (s *Agents) memoryMatch(terms []string) (string, []any) {
	prefixes := make([]string, 0, len(terms))
	var likes []string
	var likeArgs []any
	for _, t := range terms {
		if n := utf8.RuneCountInString(t); s.dialect == DialectMySQL && (n < memoryFullTextMinLen || n > memoryFullTextMaxLen) {
			likes = append(likes, "terms LIKE ? ESCAPE '!'")
			likeArgs = append(likeArgs, "% "+likeEscape(t)+"%")
			continue
		}
		prefixes = append(prefixes, t+"*")
	}
	var conds []string
	var args []any
	if len(prefixes) > 0 {
		switch s.dialect {
		case DialectMySQL:
			conds, args = append(conds, "MATCH (terms) AGAINST (? IN BOOLEAN MODE)"), append(args, strings.Join(prefixes, " "))
		case DialectPostgres:
			// The 'simple' tsvector's lexemes are the words as normalised (no stemming, no stop
			// words); term:* is a prefix query. GIN index of the dialect's migration 0026.
			qs := make([]string, len(prefixes))
			for i, p := range prefixes {
				qs[i] = strings.TrimSuffix(p, "*") + ":*"
			}
			conds, args = append(conds, memoryTSVector+" @@ to_tsquery('simple', ?)"), append(args, strings.Join(qs, " | "))
		default:
			conds, args = append(conds, "id IN (SELECT docid FROM agent_memories_fts WHERE agent_memories_fts MATCH ?)"), append(args, strings.Join(prefixes, " OR "))
		}
	}
	return "(" + strings.Join(append(conds, likes...), " OR ") + ")", append(args, likeArgs...)
}

// Memory returns memory id of agent agentID. Errors: ErrNotFound "memory not found" (unknown,
// or of another agent).
func (s *Agents) Memory(ctx context.Context, agentID, id int64) (*Memory, error) {
	var row memoryRow
	err := s.conn(ctx).Where("id = ? AND agent_id = ?", id, agentID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errMemoryNotFound()
	}
	if err != nil {
		return nil, fmt.Errorf("load memory %d: %w", id, err)
	}
	m := row.toMemory()
	return &m, nil
}

// UpdateMemory replaces the text of memory id of agent agentID (an operator's edit) after check
// allowed it on the locked agent; the caller has checked the text. Errors: ErrNotFound "agent
// not found" or "memory not found", and whatever check returns.
func (s *Agents) UpdateMemory(ctx context.Context, agentID, id int64, text string, check AgentCheck) (*Memory, error) {
	var out Memory
	err := s.withAgent(ctx, agentID, 0, check, func(tx *gorm.DB, _ *Agent) error {
		res := tx.Model(&memoryRow{}).Where("id = ? AND agent_id = ?", id, agentID).
			Updates(map[string]any{"text": text, "terms": memoryTerms(text), "updated_at": s.now()})
		if res.Error != nil {
			return fmt.Errorf("update memory %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return errMemoryNotFound()
		}
		var row memoryRow
		if err := tx.Where("id = ?", id).Take(&row).Error; err != nil {
			return fmt.Errorf("reload memory %d: %w", id, err)
		}
		out = row.toMemory()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ForgetMemory deletes memory id of agent agentID. When scoped, only a memory of userID (nil:
// an agent-wide one) is deleted: the memory tool forgets within its scope only; an operator
// passes scoped false. Errors: ErrNotFound "memory not found" (unknown, of another agent or
// out of scope).
func (s *Agents) ForgetMemory(ctx context.Context, agentID, id int64, scoped bool, userID *int64) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		db := tx.Where("id = ? AND agent_id = ?", id, agentID)
		if scoped {
			if userID == nil {
				db = db.Where("user_id IS NULL")
			} else {
				db = db.Where("user_id = ?", *userID)
			}
		}
		res := db.Delete(&memoryRow{})
		if res.Error != nil {
			return fmt.Errorf("delete memory %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return errMemoryNotFound()
		}
		return nil
	})
}
