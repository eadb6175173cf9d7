package store

import (
	"strings"
	"testing"
)

// TestMigrationDialects: every migration exists in every dialect (sqlite, mysql, postgres) with
// the same name, and a set missing one is refused.
func TestMigrationDialects(t *testing.T) {
	if err := MigrationDialectsCheck(); err != nil {
		t.Fatal(err)
	}
	for _, d := range migrationDialects {
		migs, err := loadMigrations(d)
		if err != nil || len(migs) == 0 {
			t.Fatalf("%s migrations: %d, %v", d, len(migs), err)
		}
	}
	full := map[int]string{1: "accounts", 2: "groups"}
	lacking := map[int]string{1: "accounts"}
	renamed := map[int]string{1: "accounts", 2: "teams"}
	dialects := []string{"sqlite", "mysql", "postgres"}
	for name, sets := range map[string][]map[int]string{
		"postgres lacks 0002": {full, full, lacking},
		"sqlite lacks 0002":   {lacking, full, full},
		"mysql renames 0002":  {full, renamed, full},
	} {
		err := compareMigrationSets(dialects, sets)
		if err == nil || !strings.Contains(err.Error(), "0002") {
			t.Errorf("%s: %v, want an error naming 0002", name, err)
		}
	}
	if err := compareMigrationSets(dialects, []map[int]string{full, full, full}); err != nil {
		t.Errorf("equal sets: %v", err)
	}
}

// TestMigrationWithoutStatements: a file with no statement is refused unless it says why.
func TestMigrationWithoutStatements(t *testing.T) {
	for body, ok := range map[string]bool{
		"":                                       false,
		"-- forgot the statement\n":              false,
		noStatements + " no partial index.\n":    true,
		"-- a comment\nCREATE INDEX i ON t (c);": true,
	} {
		stmts, err := migrationStatements(body)
		if (err == nil) != ok {
			t.Errorf("%q: %v, %v", body, stmts, err)
		}
	}
}
