package agent_test

import (
	"errors"
	"testing"

	"github.com/agentsvc/svc/internal/domain/agent"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

func TestParseID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
	}{
		{"1", 1}, {"42", 42}, {"9223372036854775807", 9223372036854775807},
		{"", 0}, {"0", 0}, {"-1", 0}, {"+1", 0}, {"01", 0}, {" 1", 0}, {"1 ", 0}, {"1.0", 0},
		{"0x10", 0}, {"abc", 0}, {"9223372036854775808", 0}, {"１", 0},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := agent.ParseID(tc.in)
			if tc.want == 0 {
				if !errors.Is(err, svcerr.ErrNotFound) {
					t.Fatalf("ParseID(%q) = %d, %v; want ErrNotFound", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseID(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}
