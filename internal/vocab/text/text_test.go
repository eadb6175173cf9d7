package text_test

import (
	"testing"

	"github.com/agentsvc/svc/internal/vocab/text"
)

func TestClip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"  many \n\t spaces  ", 20, "many spaces"},
		{"héllo wörld", 6, "héllo…"},
		{"exactly5", 8, "exactly5"},
	} {
		if got := text.Clip(tc.in, tc.n); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
