package api

import (
	"encoding/csv"
	"strings"
	"testing"

	"github.com/agentsvc/svc/store"
)

// TestUsageCSV: the header names the grouping keys as ids, absent keys are empty cells, and a
// model name a spreadsheet would run as a formula is written as text.
func TestUsageCSV(t *testing.T) {
	t.Parallel()
	agent, day := int64(7), "2026-11-02"
	rows := []store.UsageRow{{AgentID: &agent, Day: &day, Calls: 2, InputTokens: 10, OutputTokens: 3, Cost: 42}}
	for _, name := range []string{"=HYPERLINK(\"x\")", "+1", "-1", "@SUM(A1)", "\tcmd", "\rcmd", "gpt-4o"} {
		m := name
		rows = append(rows, store.UsageRow{Model: &m, Calls: 1})
	}
	got, err := csv.NewReader(strings.NewReader(string(usageCSV([]string{store.UsageByAgent, store.UsageByDay, store.UsageByModel}, rows)))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got[0], ",") != "agent_id,day,model,calls,input_tokens,cached_input_tokens,output_tokens,cost" ||
		strings.Join(got[1], ",") != "7,2026-11-02,,2,10,0,3,42" {
		t.Fatalf("head and first row: %q", got[:2])
	}
	for _, line := range got[2 : len(got)-1] {
		if !strings.HasPrefix(line[2], "'") {
			t.Errorf("model %q is not escaped", line[2])
		}
	}
	if last := got[len(got)-1][2]; last != "gpt-4o" {
		t.Errorf("a plain model name changed: %q", last)
	}
}
