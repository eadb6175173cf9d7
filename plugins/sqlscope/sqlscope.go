// Package sqlscope checks, before they run, that a plugin's SQL migrations touch only the
// plugin's own tables: every table and index they name starts with `<slug>_`, is not one of
// the service's, and is never qualified by a schema; only a few kinds of statement are allowed.
// A migration is untrusted input (it comes in a catalog archive), so the checker reads it with
// its own small lexer and refuses whatever it cannot classify: a false refusal costs the
// author a rewrite, a false admission would let a plugin rewrite the users table.
//
// The statements a migration runs are the ones Check returns, re-emitted from the tokens it
// checked (comments dropped, whitespace collapsed), one statement per string, so the database
// never reads text the checker did not.
//
// The rules, for both dialects (SQLite and MySQL/MariaDB):
//
//   - statement kinds: CREATE TABLE, CREATE [UNIQUE] INDEX, ALTER TABLE, DROP TABLE, DROP INDEX,
//     INSERT, REPLACE, UPDATE, DELETE FROM, SELECT. No triggers, views, temporary or virtual
//     tables, PRAGMA, ATTACH, GRANT, procedures, CTEs (WITH), UNION, SELECT … INTO, and none of
//     the MySQL table options that reach outside the table (ENGINE other than InnoDB, UNION,
//     CONNECTION, DATA/INDEX DIRECTORY, TABLESPACE);
//   - names: every table after FROM, JOIN, INTO, UPDATE, TABLE, REFERENCES, USING, IN (SQLite's
//     x IN users), LIKE (in CREATE), RENAME, an index statement's ON, and in comma lists after
//     them (join conditions included), and every index name of CREATE INDEX and DROP INDEX, is
//     a bare or quoted identifier of lowercase letters, digits, '_' and '-' that starts with
//     `<slug>_`, is not reserved (the service's tables and indexes, sqlite_*), and is not
//     followed by a '.';
//   - calls: a word followed by '(' is a type (VARCHAR(20)), a keyword (VALUES, IN, KEY …), a
//     plain function from a short list (LOWER, COALESCE, COUNT, DATETIME …), or a column
//     prefix length in an index (body(191)); anything else (load_extension, LOAD_FILE, SLEEP,
//     table-valued functions) is refused;
//   - lexing: see lex (no backslashes in literals, no executable comments, ASCII outside
//     literals).
package sqlscope

import (
	"fmt"
	"regexp"
	"strings"
)

// Size limits of one migration file.
const (
	MaxBytes      = 1 << 20
	MaxStatements = 1000
	MaxTokens     = 200_000
	MaxDepth      = 32 // nesting of parentheses
)

// Scope is whose tables a migration may touch.
type Scope struct {
	// Slug is the plugin's slug; its tables and indexes are named `<slug>_…`.
	Slug string
	// Reserved reports names (lowercase) no plugin may touch although they carry the prefix:
	// the service's own tables and indexes. Nil reserves none besides sqlite_*.
	Reserved func(name string) bool
}

// Check splits a migration file into statements, checks each and returns them as they must be
// run. Errors name the statement (1-based, with its first words) and the rule; nothing is
// returned then, so a caller that checks every file before running any runs nothing.
func (s Scope) Check(src string) ([]string, error) {
	if len(src) > MaxBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxBytes)
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	var out []string
	for start := 0; start < len(toks); {
		end := start
		for end < len(toks) && !(toks[end].kind == punct && toks[end].value == ";") {
			end++
		}
		if end > start {
			if len(out) == MaxStatements {
				return nil, fmt.Errorf("more than %d statements", MaxStatements)
			}
			stmt := toks[start:end]
			if err := s.statement(stmt); err != nil {
				return nil, fmt.Errorf("statement %d (%s): %w", len(out)+1, preview(stmt), err)
			}
			out = append(out, emit(stmt))
		}
		start = end + 1
	}
	return out, nil
}

// emit writes tokens back as SQL: their text, one space where the source had whitespace or a
// comment.
func emit(toks []token) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 && t.gap {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return b.String()
}

// preview is the start of a statement for messages.
func preview(toks []token) string {
	s := emit(toks[:min(len(toks), 6)])
	if len(toks) > 6 {
		s += " …"
	}
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

var nameRE = regexp.MustCompile(`^[a-z0-9_-]+$`)

// checker holds one statement under check.
type checker struct {
	Scope
	t      []token
	tables map[int]bool // indexes of tokens checked as table or index names
	head   string       // the statement kind, e.g. "CREATE INDEX"
	match  []int        // for a '(' the index of its ')'
	opener []int        // for every token the index of the innermost '(' around it, or -1
}

func (s Scope) statement(toks []token) error {
	c := &checker{Scope: s, t: toks, tables: map[int]bool{}}
	if err := c.parens(); err != nil {
		return err
	}
	if err := c.headRule(); err != nil {
		return err
	}
	for _, t := range toks {
		if t.kind == word && denied[t.value] {
			return fmt.Errorf("%s is not allowed in a plugin migration (quote a column of that name)", t.text)
		}
	}
	for i, t := range toks {
		if err := c.tokenRule(i, t); err != nil {
			return err
		}
	}
	return nil
}

// at returns token i, or a zero token past the end.
func (c *checker) at(i int) token {
	if i >= 0 && i < len(c.t) {
		return c.t[i]
	}
	return token{}
}

func (c *checker) isPunct(i int, p string) bool {
	t := c.at(i)
	return t.kind == punct && t.value == p
}

// parens checks that parentheses balance and nest at most MaxDepth deep, and records which
// parenthesis closes which and encloses each token (so no rule walks the statement again: a
// file is checked in time linear in its size).
func (c *checker) parens() error {
	c.match, c.opener = make([]int, len(c.t)), make([]int, len(c.t))
	var open []int
	for i, t := range c.t {
		c.opener[i] = -1
		if len(open) > 0 {
			c.opener[i] = open[len(open)-1]
		}
		if t.kind != punct {
			continue
		}
		switch t.value {
		case "(":
			if open = append(open, i); len(open) > MaxDepth {
				return fmt.Errorf("parentheses nest deeper than %d", MaxDepth)
			}
		case ")":
			if len(open) == 0 {
				return fmt.Errorf("unbalanced parentheses")
			}
			c.match[open[len(open)-1]] = i
			open = open[:len(open)-1]
		}
	}
	if len(open) != 0 {
		return fmt.Errorf("unbalanced parentheses")
	}
	return nil
}

// name checks token i as a table or index name of the plugin and marks it.
func (c *checker) name(i int, what string) error {
	t := c.at(i)
	if t.kind != word && t.kind != quoted {
		return fmt.Errorf("expected a %s name, found %q", what, t.text)
	}
	if c.isPunct(i+1, ".") {
		return fmt.Errorf("%s %s.%s: names qualified by a schema are not allowed", what, t.text, c.at(i+2).text)
	}
	n := strings.ToLower(t.value)
	if t.kind == word {
		n = strings.ToLower(t.text)
	}
	prefix := strings.ToLower(c.Slug) + "_"
	switch {
	case !nameRE.MatchString(n):
		return fmt.Errorf("%s %s: names are made of lowercase letters, digits, '_' and '-'", what, t.text)
	case !strings.HasPrefix(n, prefix) || len(n) == len(prefix):
		return fmt.Errorf("%s %s is not one of the plugin's (their names start with %s)", what, t.text, prefix)
	case strings.HasPrefix(n, "sqlite_") || (c.Reserved != nil && c.Reserved(n)):
		return fmt.Errorf("%s %s belongs to the service", what, t.text)
	}
	c.tables[i] = true
	return nil
}

// skipWords returns the index after the optional words at i (any of them, in any order).
func (c *checker) skipWords(i int, words ...string) int {
	for {
		t := c.at(i)
		found := false
		for _, w := range words {
			if t.is(w) {
				found = true
				break
			}
		}
		if !found {
			return i
		}
		i++
	}
}

// ifExists skips IF [NOT] EXISTS at i.
func (c *checker) ifExists(i int) int {
	if c.at(i).is("IF") {
		if c.at(i + 1).is("NOT") {
			i++
		}
		if c.at(i + 1).is("EXISTS") {
			return i + 2
		}
	}
	return i
}

// headRule checks the statement kind and the names its head gives.
func (c *checker) headRule() error {
	first := c.at(0)
	if first.kind != word {
		return fmt.Errorf("a statement starts with a keyword")
	}
	switch first.value {
	case "CREATE":
		i := 1
		switch {
		case c.at(i).is("TABLE"):
			c.head = "CREATE TABLE" // the name: tokenRule's TABLE
		case c.at(i).is("INDEX") || (c.at(i).is("UNIQUE") && c.at(i+1).is("INDEX")):
			c.head = "CREATE INDEX"
			if c.at(i).is("UNIQUE") {
				i++
			}
			return c.indexHead(i + 1)
		default:
			return fmt.Errorf("CREATE %s is not allowed (only CREATE TABLE and CREATE [UNIQUE] INDEX)", c.at(i).text)
		}
	case "ALTER", "DROP":
		switch {
		case c.at(1).is("TABLE"):
			c.head = first.value + " TABLE"
		case first.value == "DROP" && c.at(1).is("INDEX"):
			c.head = "DROP INDEX"
			return c.indexHead(2)
		default:
			return fmt.Errorf("%s %s is not allowed (only %s TABLE%s)", first.value, c.at(1).text, first.value,
				map[bool]string{true: " and DROP INDEX"}[first.value == "DROP"])
		}
	case "INSERT", "REPLACE":
		c.head = "INSERT"
		i := 1
		if c.at(i).is("OR") {
			i += 2
		}
		i = c.skipWords(i, "LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE")
		if c.at(i).is("INTO") {
			c.tables[i] = true // the one INTO allowed
			i++
		}
		return c.name(i, "table")
	case "UPDATE":
		c.head = "UPDATE"
		i := 1
		if c.at(i).is("OR") {
			i += 2
		}
		i = c.skipWords(i, "LOW_PRIORITY", "IGNORE")
		c.tables[0] = true // the statement's UPDATE is no ON UPDATE
		if err := c.tableList(i); err != nil {
			return err
		}
		return c.joins(i)
	case "DELETE":
		c.head = "DELETE"
		if i := c.skipWords(1, "LOW_PRIORITY", "QUICK", "IGNORE"); !c.at(i).is("FROM") {
			return fmt.Errorf("only DELETE FROM <table> is allowed")
		}
	case "SELECT":
		c.head = "SELECT"
	default:
		return fmt.Errorf("%s statements are not allowed (CREATE TABLE, CREATE INDEX, ALTER TABLE, DROP TABLE, DROP INDEX, INSERT, REPLACE, UPDATE, DELETE and SELECT are)", first.text)
	}
	return nil
}

// indexHead checks [IF [NOT] EXISTS] <index> [ON <table>] from i.
func (c *checker) indexHead(i int) error {
	i = c.ifExists(i)
	if err := c.name(i, "index"); err != nil {
		return err
	}
	if c.at(i + 1).is("ON") {
		return c.name(i+2, "table")
	}
	if c.head == "CREATE INDEX" {
		return fmt.Errorf("CREATE INDEX needs ON <table>")
	}
	return nil
}

// listEnd are the words that may follow a table list.
var listEnd = set("WHERE", "JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "NATURAL", "OUTER", "STRAIGHT_JOIN",
	"ON", "USING", "GROUP", "ORDER", "LIMIT", "HAVING", "SET", "RETURNING", "INDEXED", "NOT", "USE", "FORCE",
	"IGNORE", "WINDOW", "OFFSET")

// tableList checks a comma-separated list of table references from i: a name or a
// parenthesised SELECT, each with an optional alias, followed by the end of the statement, a
// ')' or a word of listEnd. Anything else is refused, so no table hides behind an unexpected
// token.
func (c *checker) tableList(i int) error {
	for {
		if c.isPunct(i, "(") {
			if !c.at(i + 1).is("SELECT") {
				return fmt.Errorf("only a subquery (SELECT …) may stand in parentheses among tables")
			}
			i = c.match[i] + 1
		} else {
			if err := c.name(i, "table"); err != nil {
				return err
			}
			if c.isPunct(i+1, "(") {
				return fmt.Errorf("table-valued functions are not allowed (%s(…))", c.at(i).text)
			}
			i++
		}
		if c.at(i).is("AS") {
			i++
		}
		if t := c.at(i); t.kind == quoted || (t.kind == word && !listEnd[t.value]) {
			i++ // the alias
		}
		switch t := c.at(i); {
		case t.kind == punct && t.value == ",":
			i++
			continue
		case t.kind == 0, t.kind == punct && t.value == ")", t.kind == word && listEnd[t.value]:
			return nil
		default:
			return fmt.Errorf("unexpected %q after a table reference", t.text)
		}
	}
}

// clauseEnd are the words that end a FROM clause (or an UPDATE's table list): reserved in both
// dialects, so none can stand for a column inside a join condition.
var clauseEnd = set("WHERE", "GROUP", "ORDER", "LIMIT", "HAVING", "SET", "UPDATE")

// joins checks the rest of the join clause that starts at i: a comma at the clause's own depth,
// also after a join condition (FROM a JOIN b ON a.id = b.id, users), starts another table
// reference. The clause ends at a word of clauseEnd, the ')' around it or the statement's end.
func (c *checker) joins(i int) error {
	for j := i; j < len(c.t); j++ {
		switch t := c.t[j]; {
		case t.kind == punct && t.value == "(":
			j = c.match[j]
		case t.kind == punct && t.value == ")", t.kind == word && clauseEnd[t.value]:
			return nil
		case t.kind == punct && t.value == ",":
			if err := c.tableList(j + 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// denied are words refused wherever they appear bare (quote a column named like one of them).
var denied = set("TRIGGER", "VIEW", "PRAGMA", "ATTACH", "DETACH", "GRANT", "REVOKE", "CALL", "PROCEDURE",
	"FUNCTION", "LOAD", "HANDLER", "LOCK", "OUTFILE", "DUMPFILE", "INFILE", "DATABASE", "SCHEMA", "PREPARE",
	"EXECUTE", "DELIMITER", "CONNECTION", "DIRECTORY", "UNION", "TABLESPACE", "ENCRYPTION", "INSERT_METHOD",
	"DEFINER", "SECURITY", "PARTITION", "SERVER", "VACUUM", "SEQUENCE", "WITH", "TRUNCATE", "EXCHANGE",
	"DISCARD", "IMPORT", "SECONDARY_ENGINE", "ENGINE_ATTRIBUTE", "KILL", "SHUTDOWN")

// callable are the words that may be followed by '(': types, keywords that open a list or an
// expression, and plain functions that read only their arguments.
var callable = set(
	// types
	"CHAR", "VARCHAR", "NCHAR", "NVARCHAR", "CHARACTER", "VARYING", "BINARY", "VARBINARY", "DECIMAL",
	"DEC", "NUMERIC", "FLOAT", "DOUBLE", "REAL", "INT", "INTEGER", "TINYINT", "SMALLINT", "MEDIUMINT",
	"BIGINT", "BIT", "DATETIME", "TIMESTAMP", "TIME", "YEAR", "TEXT", "BLOB", "ENUM", "SET",
	// keywords
	"KEY", "INDEX", "UNIQUE", "CHECK", "DEFAULT", "VALUES", "VALUE", "IN", "EXISTS", "AS", "AND", "OR",
	"NOT", "ON", "USING", "WHERE", "SELECT", "THEN", "ELSE", "WHEN", "IS", "BY", "HAVING", "CASE",
	"RETURNING", "DO", "CONFLICT", "FROM", "JOIN", // FROM (SELECT …): tableList

	// functions
	"LOWER", "UPPER", "LENGTH", "CHAR_LENGTH", "SUBSTR", "SUBSTRING", "TRIM", "LTRIM", "RTRIM", "REPLACE",
	"INSTR", "CONCAT", "CONCAT_WS", "COALESCE", "IFNULL", "NULLIF", "IF", "IIF", "ABS", "ROUND", "FLOOR",
	"CEIL", "CEILING", "MAX", "MIN", "COUNT", "SUM", "AVG", "TOTAL", "CAST", "DATE", "JULIANDAY",
	"STRFTIME", "UNIXEPOCH", "NOW", "CURRENT_TIMESTAMP", "UTC_TIMESTAMP", "UNIX_TIMESTAMP",
	"FROM_UNIXTIME", "HEX", "TYPEOF", "JSON_OBJECT", "JSON_ARRAY", "JSON_EXTRACT", "JSON_VALID")

// tokenRule applies the rules every token obeys, whatever the statement.
func (c *checker) tokenRule(i int, t token) error {
	if t.kind != word {
		if t.kind == quoted && c.isPunct(i+1, "(") && !c.tables[i] {
			return fmt.Errorf("quoted function names are not allowed (%s(…))", t.text)
		}
		return nil
	}
	switch t.value {
	case "FROM", "JOIN", "STRAIGHT_JOIN":
		if err := c.tableList(i + 1); err != nil {
			return err
		}
		if err := c.joins(i + 1); err != nil {
			return err
		}
	case "TABLE":
		j := c.ifExists(i + 1)
		for {
			if err := c.name(j, "table"); err != nil {
				return err
			}
			if !c.isPunct(j+1, ",") {
				break
			}
			j += 2
		}
	case "INTO":
		if !c.tables[i] {
			return fmt.Errorf("INTO is allowed only in INSERT INTO <table>")
		}
	case "UPDATE":
		if prev := c.at(i - 1); !c.tables[i] && !prev.is("ON") && !prev.is("KEY") && !prev.is("DO") {
			return fmt.Errorf("UPDATE is allowed only at the start of a statement, in ON UPDATE, ON DUPLICATE KEY UPDATE and DO UPDATE")
		}
	case "REFERENCES":
		if err := c.name(i+1, "table"); err != nil {
			return err
		}
	case "IN":
		// SQLite reads x IN users as x IN (SELECT * FROM users).
		if n := c.at(i + 1); n.kind == word || n.kind == quoted || n.kind == str {
			if err := c.name(i+1, "table"); err != nil {
				return err
			}
		}
	case "USING":
		if !c.isPunct(i+1, "(") && !c.at(i+1).is("BTREE") && !c.at(i+1).is("HASH") {
			if err := c.tableList(i + 1); err != nil {
				return err
			}
			if err := c.joins(i + 1); err != nil {
				return err
			}
		}
	case "LIKE":
		if n := c.at(i + 1); c.head == "CREATE TABLE" && (n.kind == word || n.kind == quoted) {
			if err := c.name(i+1, "table"); err != nil {
				return err
			}
		}
	case "RENAME":
		switch n := c.at(i + 1); {
		case n.is("TO") || n.is("AS"):
			if err := c.name(i+2, "table"); err != nil {
				return err
			}
		case n.is("COLUMN") || n.is("INDEX") || n.is("KEY") || n.is("CONSTRAINT"):
		default:
			if err := c.name(i+1, "table"); err != nil {
				return err
			}
		}
	case "ENGINE":
		j := i + 1
		if c.isPunct(j, "=") {
			j++
		}
		if !c.at(j).is("INNODB") {
			return fmt.Errorf("ENGINE must be InnoDB")
		}
	}
	if c.isPunct(i+1, "(") && !c.tables[i] && !callable[t.value] && !c.prefixLength(i) && !c.indexName(i) {
		return fmt.Errorf("%s(…) is not allowed: only types, a few plain functions and index prefix lengths may be followed by '('", t.text)
	}
	return nil
}

// indexName reports an index name followed by its column list inside CREATE or ALTER TABLE
// (KEY k_body (body), UNIQUE INDEX u (a)).
func (c *checker) indexName(i int) bool {
	p := c.at(i - 1)
	return (c.head == "CREATE TABLE" || c.head == "ALTER TABLE") && indexWord(p)
}

// prefixLength reports a column prefix length in an index's column list: body(191), where the
// enclosing list follows KEY/INDEX/UNIQUE, an index name, or the table of CREATE INDEX … ON.
func (c *checker) prefixLength(i int) bool {
	if c.at(i+2).kind != number || !c.isPunct(i+3, ")") {
		return false
	}
	j := c.opener[i]
	if j < 0 {
		return false
	}
	return indexWord(c.at(j-1)) || c.indexName(j-1) || (c.head == "CREATE INDEX" && c.tables[j-1])
}

// indexWord reports the words that precede an index's name or column list in a table
// definition.
func indexWord(t token) bool {
	return t.is("KEY") || t.is("INDEX") || t.is("UNIQUE") || t.is("FULLTEXT") || t.is("SPATIAL")
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
