package sqlscope_test

import (
	"strings"
	"testing"

	"github.com/agentsvc/svc/plugins/sqlscope"
)

// scope is the demo plugin's: its tables start with demo_; users, tasks and demo_users (a
// pretend service table with the prefix) are reserved.
var scope = sqlscope.Scope{Slug: "demo", Reserved: func(n string) bool { return n == "users" || n == "tasks" || n == "demo_users" }}

// TestAccepts: the statements plugin migrations write, in both dialects, pass and are
// re-emitted without comments.
func TestAccepts(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		"CREATE TABLE demo_notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL DEFAULT '', created_at DATETIME DEFAULT CURRENT_TIMESTAMP)",
		"CREATE TABLE IF NOT EXISTS `demo_notes` (`id` BIGINT NOT NULL AUTO_INCREMENT, body VARCHAR(255) CHARACTER SET utf8mb4, PRIMARY KEY (id), KEY demo_k (body(191)), UNIQUE KEY demo_u (id, body)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci",
		`CREATE TABLE "demo_tags" (note_id INTEGER REFERENCES demo_notes(id) ON DELETE CASCADE ON UPDATE CASCADE, tag TEXT CHECK (length(tag) < 40))`,
		"CREATE TABLE [demo_x] (a DECIMAL(10,2), b DATETIME(6) DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)) WITHOUT ROWID",
		"CREATE UNIQUE INDEX IF NOT EXISTS demo_notes_body ON demo_notes (body)",
		"CREATE INDEX demo_i ON demo_notes (lower(body))",
		"CREATE INDEX demo_i ON demo_notes (body(100), id)",
		"ALTER TABLE demo_notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0",
		"ALTER TABLE demo_notes RENAME TO demo_notes2",
		"ALTER TABLE demo_notes RENAME COLUMN body TO text",
		"ALTER TABLE demo_notes ADD INDEX demo_p (pinned), ADD CONSTRAINT demo_fk FOREIGN KEY (id) REFERENCES demo_tags (note_id)",
		"DROP TABLE IF EXISTS demo_old, demo_older",
		"DROP INDEX IF EXISTS demo_notes_body",
		"DROP INDEX demo_i ON demo_notes",
		"INSERT INTO demo_notes (body) VALUES ('it''s'), ('two'), (X'41')",
		"INSERT OR IGNORE INTO demo_notes (id, body) SELECT id, body FROM demo_old WHERE id IN (SELECT note_id FROM demo_tags)",
		"INSERT INTO demo_notes (id, body) VALUES (1, 'x') ON CONFLICT (id) DO UPDATE SET body = excluded.body",
		"INSERT INTO demo_notes (id, body) VALUES (1, 'x') ON DUPLICATE KEY UPDATE body = VALUES(body)",
		"REPLACE INTO demo_notes (id) VALUES (1)",
		"UPDATE demo_notes SET body = upper(body) WHERE id > 3",
		"UPDATE demo_notes AS n SET body = (SELECT t.tag FROM demo_tags t WHERE t.note_id = n.id)",
		"DELETE FROM demo_notes WHERE body = '' AND id NOT IN (SELECT note_id FROM demo_tags AS t JOIN demo_notes n ON n.id = t.note_id)",
		"SELECT 1",
		"SELECT COUNT(*) FROM demo_notes n LEFT JOIN demo_tags t ON t.note_id = n.id GROUP BY n.id",
		"SELECT \"event\", \"data\" FROM demo_notes",
		"SELECT a, b FROM demo_a JOIN demo_b ON demo_a.id = demo_b.id WHERE a IN (1, 2) ORDER BY a, b LIMIT 1, 2",
		"INSERT INTO demo_a (a, b) SELECT x, y FROM demo_b ON DUPLICATE KEY UPDATE a = 1, b = 2",
		"UPDATE demo_a JOIN demo_b ON demo_a.id = demo_b.id SET demo_a.x = 1, demo_a.y = 2",
		"-- a comment\nCREATE TABLE demo_a (id INT); /* another */ INSERT INTO demo_a VALUES (1);\n",
	} {
		stmts, err := scope.Check(src)
		if err != nil || len(stmts) == 0 {
			t.Errorf("%s\nrefused: %v", src, err)
			continue
		}
		for _, s := range stmts {
			if strings.Contains(s, "--") || strings.Contains(s, "/*") || strings.Contains(s, ";") {
				t.Errorf("%s\nre-emitted with a comment or a separator: %q", src, s)
			}
		}
	}
	stmts, err := scope.Check("CREATE TABLE demo_a (id INT);\n\n-- two\nINSERT INTO demo_a VALUES (X'41');;")
	if err != nil || len(stmts) != 2 || stmts[0] != "CREATE TABLE demo_a (id INT)" || stmts[1] != "INSERT INTO demo_a VALUES (X'41')" {
		t.Fatalf("statements = %q, %v", stmts, err)
	}
}

// TestRefuses: every way found to name another table, or to do something else than change
// the plugin's tables, is refused with the rule.
func TestRefuses(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		// the migration, and the service's tables in every position
		"UPDATE users SET name='x'":                                                      "table users is not one of the plugin's",
		"UPDATE demo_notes SET body = 'x';\nUPDATE users SET name='x'":                   "statement 2 (UPDATE users SET name='x'): table users",
		"UPDATE demo_notes, users SET users.name = 'x'":                                  "table users",
		"UPDATE demo_notes JOIN users ON 1 = 1 SET users.name = 'x'":                     "table users",
		"UPDATE demo_notes SET body = 1 FROM users":                                      "table users",
		"DELETE FROM users":                                                              "table users",
		"DELETE demo_notes, users FROM demo_notes JOIN users":                            "only DELETE FROM",
		"DELETE FROM demo_notes USING demo_notes JOIN users":                             "table users",
		"INSERT INTO users (name) VALUES ('x')":                                          "table users",
		"INSERT users (name) VALUES ('x')":                                               "table users",
		"INSERT INTO demo_notes SELECT name FROM users":                                  "table users",
		"INSERT INTO demo_notes SELECT * FROM demo_a, users":                             "table users",
		"INSERT INTO demo_notes SELECT * FROM demo_a a, users":                           "table users",
		"INSERT INTO demo_notes SELECT * FROM demo_a AS `a`, users":                      "table users",
		"INSERT INTO demo_notes VALUES ((SELECT password_hash FROM users LIMIT 1))":      "table users",
		"SELECT * FROM demo_a WHERE id IN (SELECT id FROM users)":                        "table users",
		"SELECT * FROM (SELECT * FROM users) s":                                          "table users",
		"SELECT * FROM demo_a NATURAL JOIN users":                                        "table users",
		"SELECT * FROM demo_a JOIN demo_b ON demo_a.id = demo_b.id, users":               "table users",
		"SELECT * FROM demo_a JOIN demo_b USING (id), users":                             "table users",
		"INSERT INTO demo_a SELECT * FROM demo_a JOIN demo_b ON (1), users u":            "table users",
		"UPDATE demo_a JOIN demo_b ON demo_a.id = demo_b.id, users SET users.name = 'x'": "table users",
		"DELETE FROM demo_a USING demo_a JOIN demo_b ON 1, users":                        "table users",
		"SELECT * FROM demo_a JOIN demo_b ON duplicate = 1, users":                       "table users",
		"UPDATE demo_a SET x = 1 WHERE 'hash' IN users":                                  "table users",
		"UPDATE demo_a SET x = 1 WHERE 'hash' NOT IN `users`":                            "table `users`",
		"UPDATE demo_a SET x = 1 WHERE 'hash' IN 'users'":                                "expected a table name",
		"UPDATE demo_a SET x = 1 WHERE 'hash' IN main.demo_b":                            "qualified by a schema",
		"UPDATE demo_a SET x = 1 WHERE id IN demo_b":                                     "",
		"SELECT * FROM demo_a, (SELECT 1) s, users":                                      "table users",
		"CREATE TABLE demo_copy AS SELECT * FROM users":                                  "table users",
		"CREATE TABLE demo_copy LIKE users":                                              "table users",
		"CREATE TABLE demo_a (u INT REFERENCES users(id))":                               "table users",
		"CREATE INDEX demo_i ON users (name)":                                            "table users",
		"CREATE INDEX idx_users ON demo_a (name)":                                        "index idx_users is not one of the plugin's",
		"DROP INDEX idx_tasks_status":                                                    "index idx_tasks_status",
		"DROP TABLE users":                                                               "table users",
		"DROP TABLE demo_a, users":                                                       "table users",
		"ALTER TABLE users ADD COLUMN x INT":                                             "table users",
		"ALTER TABLE demo_a RENAME TO users":                                             "table users",
		"ALTER TABLE demo_a RENAME users":                                                "table users",
		"INSERT INTO demo_a TABLE users":                                                 "table users",
		"DELETE FROM demo_users":                                                         "belongs to the service",
		"DELETE FROM sqlite_master":                                                      "table sqlite_master",
		"DELETE FROM demo_":                                                              "is not one of the plugin's",
		// quoting and qualification
		"DELETE FROM `users`":                      "table `users`",
		`DELETE FROM "users"`:                      `table "users"`,
		"DELETE FROM [users]":                      "table [users]",
		"DELETE FROM 'users'":                      "expected a table name",
		"DELETE FROM main.demo_a":                  "qualified by a schema",
		"DELETE FROM demo_a.users":                 "qualified by a schema",
		"DELETE FROM `demo_a`.`users`":             "qualified by a schema",
		"DELETE FROM `demo_a x`":                   "lowercase letters",
		"DELETE FROM `DEMO_A`":                     "",
		"SELECT * FROM pragma_table_info('users')": "table pragma_table_info",
		"SELECT * FROM demo_a(1)":                  "table-valued functions",
		// statement kinds
		"PRAGMA writable_schema = 1":  "PRAGMA statements are not allowed",
		"ATTACH DATABASE 'x.db' AS x": "ATTACH statements are not allowed",
		"GRANT ALL ON *.* TO 'x'":     "GRANT statements",
		"CREATE TRIGGER demo_t AFTER INSERT ON demo_a BEGIN UPDATE users SET name = 'x'; END": "CREATE TRIGGER is not allowed",
		"CREATE VIEW demo_v AS SELECT * FROM users":                                           "CREATE VIEW is not allowed",
		"CREATE TEMP TABLE users (id INT)":                                                    "CREATE TEMP is not allowed",
		"CREATE VIRTUAL TABLE demo_f USING fts5(body)":                                        "CREATE VIRTUAL is not allowed",
		"CREATE PROCEDURE demo_p() BEGIN END":                                                 "CREATE PROCEDURE is not allowed",
		"CREATE OR REPLACE TABLE demo_a (id INT)":                                             "CREATE OR is not allowed",
		"RENAME TABLE demo_a TO users":                                                        "RENAME statements",
		"TRUNCATE TABLE users":                                                                "TRUNCATE statements",
		"SET GLOBAL general_log = 1":                                                          "SET statements",
		"DO SLEEP(10)":                                                                        "DO statements",
		"WITH x AS (SELECT * FROM users) SELECT * FROM x":                                     "WITH statements",
		"SELECT * FROM demo_a UNION SELECT name FROM users":                                   "UNION is not allowed",
		"SELECT body FROM demo_a INTO OUTFILE '/tmp/x'":                                       "OUTFILE is not allowed",
		"SELECT body INTO demo_b FROM demo_a":                                                 "INTO is allowed only in INSERT INTO",
		"SELECT * FROM demo_a FOR UPDATE":                                                     "UPDATE",
		"SELECT 1 FOR UPDATE":                                                                 "UPDATE is allowed only",
		"CREATE TABLE demo_m (id INT) ENGINE=MERGE UNION=(users)":                             "UNION is not allowed",
		"CREATE TABLE demo_m (id INT) ENGINE=MyISAM":                                          "ENGINE must be InnoDB",
		"CREATE TABLE demo_m (id INT) ENGINE=FEDERATED CONNECTION='mysql://x/y/users'":        "CONNECTION is not allowed",
		"CREATE TABLE demo_m (id INT) DATA DIRECTORY = '/var/lib'":                            "DIRECTORY is not allowed",
		"ALTER TABLE demo_a EXCHANGE PARTITION p WITH TABLE users":                            "EXCHANGE is not allowed",
		"SELECT load_extension('/tmp/x.so')":                                                  "load_extension(…) is not allowed",
		"SELECT LOAD_FILE('/etc/passwd')":                                                     "LOAD_FILE(…) is not allowed",
		"SELECT SLEEP(100)":                                                                   "SLEEP(…) is not allowed",
		"SELECT \"sleep\"(1)":                                                                 "quoted function names",
		"SELECT x.sleep(1)":                                                                   "sleep(…) is not allowed",
		"CREATE TABLE demo_a (b TEXT DEFAULT (randomblob(1000000000)))":                       "randomblob(…) is not allowed",
		"SELECT @@version":                                                                    "'@' is not allowed",
		"SELECT ?":                                                                            "'?' is not allowed",
		// lexing
		"INSERT INTO demo_a VALUES ('\\'); UPDATE users SET name = 1; -- ')": "backslashes",
		"SELECT 1 /*! ; UPDATE users SET name = 'x' */":                      "executable comments",
		"SELECT 1 /*M!100000 ; UPDATE users SET name = 'x' */":               "executable comments",
		"SELECT 1 # comment\n":                     "'#' is not allowed",
		"SELECT 1 --x\nUPDATE users SET name = 1":  `"--" must be followed by a space`,
		"SELECT 1 -- x\rUPDATE users SET name = 1": "control character in a comment",
		"SELECT 1\r":                   "carriage return",
		"SELECT * FROM demo_a, 9users": "identifiers may not start with a digit",
		"SELECT 'open":                 "not closed",
		"SELECT 1 /* open":             "not closed",
		"SELECT ((1)":                  "unbalanced",
		"SELECT * FROM démo_a":         "not allowed outside literals",
		"SELECT 'a\x00'":               "NUL byte",
		"SELECT '\xff'":                "not valid UTF-8",
		"SELECT " + strings.Repeat("(", 40) + "1" + strings.Repeat(")", 40): "nest deeper than 32",
	} {
		_, err := scope.Check(src)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: refused: %v", src, err)
		case want != "" && err == nil:
			t.Errorf("%q: accepted, want %q", src, want)
		case want != "" && !strings.Contains(err.Error(), want):
			t.Errorf("%q:\n%v\ndoes not say %q", src, err, want)
		}
	}
}

// TestLimits: a file over the size or statement limits is refused as a whole.
func TestLimits(t *testing.T) {
	t.Parallel()
	if _, err := scope.Check(strings.Repeat(" ", sqlscope.MaxBytes+1)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("big file: %v", err)
	}
	if _, err := scope.Check(strings.Repeat("SELECT 1;", sqlscope.MaxStatements+1)); err == nil || !strings.Contains(err.Error(), "more than 1000 statements") {
		t.Errorf("many statements: %v", err)
	}
	if _, err := scope.Check(strings.Repeat(",", sqlscope.MaxTokens+2)); err == nil || !strings.Contains(err.Error(), "tokens") {
		t.Errorf("many tokens: %v", err)
	}
}

// TestLargeFile: a file near the token limit whose every call needs the enclosing list (index
// prefix lengths) is checked in one pass (each rule looks its parenthesis up; walking back
// from every call took 50 s for 180 kB).
func TestLargeFile(t *testing.T) {
	t.Parallel()
	n := sqlscope.MaxTokens/5 - 100
	src := "CREATE TABLE demo_a (a INT, KEY demo_k (" + strings.Repeat("a(1), ", n) + "a(1)))"
	if stmts, err := scope.Check(src); err != nil || len(stmts) != 1 {
		t.Fatalf("%d bytes: %v", len(src), err)
	}
}
