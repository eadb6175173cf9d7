package sqlscope_test

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

// FuzzCheck runs the checker on arbitrary files. It must not panic; what it accepts must be
// accepted again unchanged when its statements are checked once more; and, the oracle, running
// what it accepts on a SQLite database never changes a table that is not the plugin's (users,
// and demo_users although it carries the prefix), never copies their content into the
// plugin's tables, and creates nothing outside demo_*.
//
//	go test -run '^$' -fuzz FuzzCheck -fuzztime 60s ./plugins/sqlscope/
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		"CREATE TABLE demo_notes2 (id INTEGER PRIMARY KEY, body TEXT);\nINSERT INTO demo_notes2 (body) VALUES ('a');",
		"UPDATE users SET name='x'",
		"UPDATE demo_notes SET body = (SELECT name FROM users)",
		"INSERT INTO demo_notes SELECT * FROM demo_notes n, users u",
		"DELETE FROM demo_notes WHERE id IN (SELECT id FROM `users`)",
		"CREATE INDEX demo_i ON demo_notes (body)",
		"ALTER TABLE demo_notes RENAME TO demo_other",
		"SELECT 1 -- c\n; /* c */ SELECT 'x''y'",
		"INSERT INTO demo_notes VALUES (1, X'41') ON CONFLICT (id) DO UPDATE SET body = excluded.body",
		"DROP TABLE IF EXISTS demo_notes",
		"INSERT INTO demo_notes (body) SELECT n.body FROM demo_notes n JOIN demo_notes m ON n.id = m.id, demo_notes o",
		"UPDATE demo_notes SET body = o.body FROM demo_notes n JOIN demo_notes m USING (id), demo_notes o",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		stmts, err := scope.Check(src)
		if err != nil {
			return
		}
		again, err := scope.Check(strings.Join(stmts, ";\n"))
		if err != nil || !slices.Equal(again, stmts) {
			t.Fatalf("accepted %q as %q, but its statements check as %q, %v", src, stmts, again, err)
		}
		if len(stmts) > 16 {
			return // the oracle's database stays small
		}
		oracle(t, stmts)
	})
}

// oracle runs stmts on a fresh in-memory database and fails when a table outside the plugin's
// changed or a schema object outside demo_* appeared.
func oracle(t *testing.T, stmts []string) {
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, s := range []string{
		"CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
		"INSERT INTO users VALUES (1, '" + secret + "')",
		"CREATE TABLE demo_users (id INTEGER PRIMARY KEY, name TEXT)",
		"INSERT INTO demo_users VALUES (1, '" + secret + "')",
		"CREATE TABLE demo_notes (id INTEGER PRIMARY KEY, body TEXT)",
		"INSERT INTO demo_notes VALUES (1, 'n')",
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range stmts {
		_, _ = db.ExecContext(ctx, s) // a failing statement is the author's problem, not a breach
	}
	for _, table := range []string{"users", "demo_users"} {
		var n int
		var name string
		if err := db.QueryRow("SELECT COUNT(*), MAX(name) FROM "+table).Scan(&n, &name); err != nil || n != 1 || name != secret {
			t.Fatalf("after %q: %s holds %d rows, name %q, %v", stmts, table, n, name, err)
		}
	}
	var tables []string
	rows, err := db.Query("SELECT type, name, tbl_name FROM sqlite_master UNION ALL SELECT type, name, tbl_name FROM sqlite_temp_master")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var typ, name, table string
		if err := rows.Scan(&typ, &name, &table); err != nil {
			t.Fatal(err)
		}
		lname, ltable := strings.ToLower(name), strings.ToLower(table)
		if typ == "table" && name != "users" && name != "demo_users" {
			tables = append(tables, name)
		}
		switch {
		case name == "users" || name == "demo_users":
		case (typ == "table" || typ == "index") && strings.HasPrefix(ltable, "demo_") && ltable != "demo_users" &&
			(strings.HasPrefix(lname, "demo_") || strings.HasPrefix(lname, "sqlite_autoindex_demo_")):
		default:
			t.Fatalf("after %q: %s %s on %s", stmts, typ, name, table)
		}
	}
	_ = rows.Close()
	for _, table := range tables {
		leaked(t, db, table, stmts)
	}
}

// secret is the users' content the plugin's tables must never receive; the fuzzer does not
// write it (it is in no seed and too long to guess).
const secret = "k3q9-users-secret"

// leaked fails when any value of table holds secret.
func leaked(t *testing.T, db *sql.DB, table string, stmts []string) {
	rows, err := db.Query(`SELECT * FROM "` + strings.ReplaceAll(table, `"`, `""`) + `"`)
	if err != nil {
		return
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if rows.Scan(ptrs...) != nil {
			return
		}
		for _, v := range vals {
			var text string
			switch x := v.(type) {
			case string:
				text = x
			case []byte:
				text = string(x)
			}
			if strings.Contains(text, secret) {
				t.Fatalf("after %q: %s received the users' content", stmts, table)
			}
		}
	}
}
