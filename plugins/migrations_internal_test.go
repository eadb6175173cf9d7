package plugins

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestLoadMigrations holds the migration file rules the store applied before they moved here.
func TestLoadMigrations(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	ok := fstest.MapFS{
		"sqlite/demo_0002_more.sql":  file("SELECT 2;"),
		"sqlite/demo_0001_first.sql": file("SELECT 1;"),
		"mysql/demo_0001_first.sql":  file("SELECT 1;"),
	}
	migs, err := loadMigrations(ok, "sqlite", "demo")
	if err != nil || len(migs) != 2 || migs[0].Version != 1 || migs[1].Name != "demo_0002_more.sql" || migs[1].SQL != "SELECT 2;" {
		t.Fatalf("loadMigrations = %+v, %v", migs, err)
	}
	if migs, err := loadMigrations(ok, "postgres", "demo"); err != nil || len(migs) != 0 {
		t.Fatalf("missing dialect folder = %+v, %v", migs, err)
	}
	for name, tc := range map[string]struct {
		fs   fstest.MapFS
		want string
	}{
		"no prefix": {fstest.MapFS{"sqlite/0001_x.sql": file("")}, "the name must be demo_NNNN_name.sql"},
		"gap":       {fstest.MapFS{"sqlite/demo_0001_a.sql": file(""), "sqlite/demo_0003_c.sql": file("")}, "without gaps or repeats"},
		"repeat":    {fstest.MapFS{"sqlite/demo_0001_a.sql": file(""), "sqlite/demo_0001_b.sql": file("")}, "without gaps or repeats"},
	} {
		if _, err := loadMigrations(tc.fs, "sqlite", "demo"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
