package pathid_test

import (
	"testing"

	"github.com/agentsvc/svc/internal/vocab/pathid"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "abc", "0", "-1", "01", "+1", "1.5", " 1", "1 ", "9223372036854775808"} {
		if id, ok := pathid.Parse(s); ok {
			t.Errorf("Parse(%q) = %d, true; want refused", s, id)
		}
	}
	for s, want := range map[string]int64{"1": 1, "42": 42, "9223372036854775807": 9223372036854775807} {
		if id, ok := pathid.Parse(s); !ok || id != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", s, id, ok, want)
		}
	}
}
