package yamldoc_test

import (
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/platform/yamldoc"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, err string
		empty   bool
	}{
		{in: "", empty: true},
		{in: "# only a comment\n", empty: true},
		{in: "a: 1\n"},
		{in: "[1, 2]"},
		{in: "a: 1\n---\nb: 2\n", err: "line 2: only one YAML document is allowed"},
		{in: "a: [1\n", err: "line "},
	} {
		n, err := yamldoc.Decode([]byte(tc.in))
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.HasPrefix(err.Error(), "yaml: ") {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.err)
			}
		case err != nil || (n == nil) != tc.empty:
			t.Errorf("%q: node %v, err %v", tc.in, n, err)
		}
	}
}
