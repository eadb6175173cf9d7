package store_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// The hand-written statements list their tables' columns explicitly: a column added by a
// migration must be added there too (and to the row type), or the hot path would silently
// neither read nor write it. The id of the tables keyed by (task_id, sequence) is read by
// nothing: PostgreSQL has none, the others keep it unlisted.
func TestHandWrittenColumnsMatchTables(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	columns := func(table string) []string {
		rows, err := s.GormDBForTest().Raw("SELECT * FROM " + table + " LIMIT 0").Rows()
		if err != nil {
			t.Fatal(err)
		}
		cols, err := rows.Columns()
		_ = rows.Close()
		if err != nil {
			t.Fatal(err)
		}
		return cols
	}
	for _, table := range store.UnreadIDForTest {
		if has := slices.Contains(columns(table), "id"); has != (s.Dialect() != store.DialectPostgres) {
			t.Errorf("%s has an id column: %v on %s", table, has, s.Dialect())
		}
	}
	for table, list := range store.HandWrittenColumnsForTest {
		cols := slices.DeleteFunc(columns(table), func(c string) bool {
			return c == "id" && slices.Contains(store.UnreadIDForTest, table)
		})
		var listed []string
		for _, c := range strings.Split(list, ",") {
			listed = append(listed, strings.TrimSpace(c))
		}
		slices.Sort(cols)
		slices.Sort(listed)
		if !slices.Equal(cols, listed) {
			t.Errorf("%s: the table has %v, the hand-written statements list %v", table, cols, listed)
		}
	}
}
