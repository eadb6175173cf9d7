package agenttemplate_test

import (
	"encoding/json"
	"testing"

	"github.com/agentsvc/svc/internal/domain/agenttemplate"
	"github.com/agentsvc/svc/store"
)

// TestCompactionSettingsTravel: an agent's compaction settings that differ from the defaults are
// exported, parse back to the same values and reach the import's plan; absent ones stay nil (the
// agent's defaults); out-of-range values are refused at their path.
func TestCompactionSettingsTravel(t *testing.T) {
	t.Parallel()
	tpl := agenttemplate.Export(agenttemplate.ExportInput{Name: "Long talker", SystemPrompt: "Talk.", MaxSteps: 10, AllowFollowup: true,
		Compaction: &store.AgentCompaction{Enabled: false, ThresholdPercent: 60, AnswerReserve: 2048, ToolResultMaxChars: 20000}}, nil)
	raw, err := json.Marshal(tpl)
	if err != nil {
		t.Fatal(err)
	}
	back, rep := agenttemplate.Parse(agenttemplate.Input{Raw: raw, ContentType: "application/json"})
	if !rep.Valid {
		t.Fatalf("%s: %v", raw, rep.Errors)
	}
	plan, _ := agenttemplate.Plan(back, nil)
	a := plan.Agent
	if a.CompactionEnabled == nil || *a.CompactionEnabled || *a.CompactionThresholdPercent != 60 || *a.CompactionAnswerReserve != 2048 || *a.ToolResultMaxChars != 20000 {
		t.Fatalf("plan = %+v", a)
	}
	plain := agenttemplate.Export(agenttemplate.ExportInput{Name: "Plain", SystemPrompt: "x", MaxSteps: 10,
		Compaction: &store.AgentCompaction{Enabled: true, ThresholdPercent: store.DefaultCompactionThreshold}}, nil)
	if p := plain.Agent; p.CompactionEnabled != nil || p.CompactionThresholdPercent != nil || p.CompactionAnswerReserve != nil || p.ToolResultMaxChars != nil {
		t.Fatalf("defaults exported: %+v", p)
	}
	for key, v := range map[string]any{"compaction_threshold_percent": 5, "compaction_answer_reserve": -1, "tool_result_max_chars": 1.5, "compaction_enabled": "yes"} {
		doc, _ := json.Marshal(map[string]any{"id": "x", "name": "X", "version": "1.0.0", "agent": map[string]any{"system_prompt": "x", key: v}})
		if _, rep := agenttemplate.Parse(agenttemplate.Input{Raw: doc, ContentType: "application/json"}); rep.Valid || rep.Errors[0].Path != "/agent/"+key {
			t.Fatalf("%s = %v: %+v", key, v, rep.Errors)
		}
	}
}
