package api

import (
	"errors"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// TestMemberIDCanonical: the member id of a group path follows the rule of every other path
// id. The gate's pattern already refuses most of these spellings; memberID no longer relies on
// it, so "01" (once parsed as member 1) is refused like "01" as an agent or task id.
func TestMemberIDCanonical(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"01", "+1", "0", "-1", "9223372036854775808", "abc"} {
		if id, err := memberID(s); !errors.Is(err, svcerr.ErrNotFound) {
			t.Errorf("memberID(%q) = %d, %v; want ErrNotFound", s, id, err)
		}
	}
	if id, err := memberID("42"); err != nil || id != 42 {
		t.Fatalf("memberID(42) = %d, %v", id, err)
	}
}
