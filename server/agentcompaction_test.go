package server_test

import (
	"fmt"
	"testing"

	"github.com/agentsvc/svc/gen"
)

// TestAgentCompactionSettings: an agent's compaction settings have their documented defaults,
// are set on create and update, refused out of range (422, nothing written), and its summary
// model must be one the agent's owner can use: its group's own or a global one, not another
// group's; 0 clears it; a transfer to an owner who cannot use it clears it.
func TestAgentCompactionSettings(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	cfg := func(group int64, body map[string]any) int64 {
		var r gen.LlmConfigResponse
		w.admin.Post(fmt.Sprintf("/groups/%d/llm-configs", group), body).Expect(t, 201).Decode(t, &r)
		return r.Data.LlmConfig.Id
	}
	teamCfg := cfg(w.team, map[string]any{"name": "small", "driver": "openai", "model": "small"})
	otherCfg := cfg(w.other, map[string]any{"name": "theirs", "driver": "openai", "model": "theirs"})
	globalCfg := cfg(w.other, map[string]any{"name": "shared", "driver": "openai", "model": "shared", "is_global": true})

	a := mkAgent(t, w.owner, map[string]any{"name": "Plain", "principal_id": w.teamP})
	if !a.CompactionEnabled || a.CompactionThresholdPercent != 80 || a.CompactionAnswerReserve != 0 || a.ToolResultMaxChars != 0 || a.SummaryLlmConfigId != nil {
		t.Fatalf("defaults = %+v", a)
	}
	b := mkAgent(t, w.owner, map[string]any{"name": "Set", "principal_id": w.teamP, "compaction_enabled": false,
		"compaction_threshold_percent": 60, "compaction_answer_reserve": 2048, "tool_result_max_chars": 20000, "summary_llm_config_id": teamCfg})
	if b.CompactionEnabled || b.CompactionThresholdPercent != 60 || b.CompactionAnswerReserve != 2048 || b.ToolResultMaxChars != 20000 ||
		b.SummaryLlmConfigId == nil || *b.SummaryLlmConfigId != teamCfg {
		t.Fatalf("set = %+v", b)
	}
	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"threshold too low", map[string]any{"compaction_threshold_percent": 5}},
		{"threshold too high", map[string]any{"compaction_threshold_percent": 101}},
		{"negative reserve", map[string]any{"compaction_answer_reserve": -1}},
		{"negative budget", map[string]any{"tool_result_max_chars": -1}},
		{"another group's configuration", map[string]any{"summary_llm_config_id": otherCfg}},
		{"no such configuration", map[string]any{"summary_llm_config_id": 99999}},
	} {
		w.owner.Patch(agentPath(b.Id), tc.body).Expect(t, 422, "VALIDATION_ERROR")
		body := map[string]any{"name": "x", "principal_id": w.teamP}
		for k, v := range tc.body {
			body[k] = v
		}
		w.owner.Post("/agents", body).Expect(t, 422, "VALIDATION_ERROR")
	}
	if got := getAgent(t, w.owner, b.Id); got.CompactionThresholdPercent != 60 || *got.SummaryLlmConfigId != teamCfg {
		t.Fatalf("a refused update wrote: %+v", got)
	}
	var r gen.AgentResponse
	w.owner.Patch(agentPath(b.Id), map[string]any{"summary_llm_config_id": globalCfg, "compaction_enabled": true}).Expect(t, 200).Decode(t, &r)
	if r.Data.Agent.SummaryLlmConfigId == nil || *r.Data.Agent.SummaryLlmConfigId != globalCfg || !r.Data.Agent.CompactionEnabled {
		t.Fatalf("global summary model: %+v", r.Data.Agent)
	}
	w.owner.Patch(agentPath(b.Id), map[string]any{"summary_llm_config_id": 0}).Expect(t, 200).Decode(t, &r)
	if r.Data.Agent.SummaryLlmConfigId != nil {
		t.Fatalf("0 did not clear the summary model: %v", *r.Data.Agent.SummaryLlmConfigId)
	}

	// A transfer to an owner who cannot use the team's configuration clears it.
	w.owner.Patch(agentPath(b.Id), map[string]any{"summary_llm_config_id": teamCfg}).Expect(t, 200)
	w.owner.Post(agentPath(b.Id)+"/transfer", map[string]any{"principal_id": w.ownerU.PrincipalId}).Expect(t, 200).Decode(t, &r)
	if r.Data.Agent.SummaryLlmConfigId != nil || getAgent(t, w.owner, b.Id).SummaryLlmConfigId != nil {
		t.Fatalf("the transfer kept a summary model the new owner cannot use")
	}
}
