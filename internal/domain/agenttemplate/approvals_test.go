package agenttemplate_test

import (
	"encoding/json"
	"testing"

	"github.com/agentsvc/svc/internal/domain/agenttemplate"
	"github.com/agentsvc/svc/store"
)

// TestApprovalSettingsTravel: an agent's approvers (the kinds, not named users) and approval
// timeout are exported, parse back and reach the import's plan; the defaults and named users
// are left out; bad values are refused at their path.
func TestApprovalSettingsTravel(t *testing.T) {
	t.Parallel()
	tpl := agenttemplate.Export(agenttemplate.ExportInput{Name: "Guarded", SystemPrompt: "x", MaxSteps: 10,
		Approvers: store.Approvers{Owner: true, Managers: true, Users: []int64{7}}, ApprovalTimeoutSeconds: 3600,
		ApprovalTimeoutAction: store.ApprovalTimeoutAbort}, nil)
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
	if a.Approvers == nil || !a.Approvers.Owner || !a.Approvers.Managers || a.ApprovalTimeoutSeconds == nil ||
		*a.ApprovalTimeoutSeconds != 3600 || a.ApprovalTimeoutAction == nil || *a.ApprovalTimeoutAction != store.ApprovalTimeoutAbort {
		t.Fatalf("plan = %+v (%s)", a, raw)
	}
	for name, ap := range map[string]store.Approvers{"owner": {Owner: true}, "owner and named": {Owner: true, Users: []int64{3}},
		"named only": {Users: []int64{3}}} {
		p := agenttemplate.Export(agenttemplate.ExportInput{Name: "Plain", SystemPrompt: "x", MaxSteps: 10, Approvers: ap,
			ApprovalTimeoutAction: store.ApprovalTimeoutAbort}, nil).Agent
		if p.Approvers != nil || p.ApprovalTimeoutSeconds != nil || p.ApprovalTimeoutAction != "" {
			t.Fatalf("%s: defaults exported: %+v", name, p)
		}
	}
	for key, v := range map[string]any{
		"approvers": map[string]any{"owner": false, "managers": false}, "approval_timeout_seconds": -1,
		"approval_timeout_action": "wait",
	} {
		doc, _ := json.Marshal(map[string]any{"id": "x", "name": "X", "version": "1.0.0", "agent": map[string]any{"system_prompt": "x", key: v}})
		if _, rep := agenttemplate.Parse(agenttemplate.Input{Raw: doc, ContentType: "application/json"}); rep.Valid || rep.Errors[0].Path != "/agent/"+key {
			t.Fatalf("%s = %v: %+v", key, v, rep.Errors)
		}
	}
	doc, _ := json.Marshal(map[string]any{"id": "x", "name": "X", "version": "1.0.0", "agent": map[string]any{"system_prompt": "x",
		"approvers": map[string]any{"managers": true, "user_ids": []int{1}}}})
	if _, rep := agenttemplate.Parse(agenttemplate.Input{Raw: doc, ContentType: "application/json"}); rep.Valid || rep.Errors[0].Path != "/agent/approvers/user_ids" {
		t.Fatalf("named users in a template: %+v", rep.Errors)
	}
}

// TestOperationApprovalTimeoutTravels: an operation's approval timeout parses (0 included) and
// a value outside 0..MaxApprovalTimeoutSeconds or of another type is refused at its path.
func TestOperationApprovalTimeoutTravels(t *testing.T) {
	t.Parallel()
	doc := func(v any) []byte {
		b, _ := json.Marshal(map[string]any{"id": "x", "name": "X", "version": "1.0.0", "agent": map[string]any{"system_prompt": "x"},
			"tools": []any{map[string]any{"tool_class": "core.TimeTool", "enabled": true,
				"operations": []any{map[string]any{"name": "now", "approval_timeout_seconds": v}}}}})
		return b
	}
	for _, v := range []int{0, 90, store.MaxApprovalTimeoutSeconds} {
		tpl, rep := agenttemplate.Parse(agenttemplate.Input{Raw: doc(v), ContentType: "application/json"})
		if !rep.Valid {
			t.Fatalf("%d: %v", v, rep.Errors)
		}
		if got := tpl.Tools[0].Operations[0].ApprovalTimeoutSeconds; got == nil || *got != v {
			t.Fatalf("%d parsed as %v", v, got)
		}
	}
	for _, v := range []any{-1, int64(store.MaxApprovalTimeoutSeconds) + 1, "90", 1.5} {
		_, rep := agenttemplate.Parse(agenttemplate.Input{Raw: doc(v), ContentType: "application/json"})
		if rep.Valid || rep.Errors[0].Path != "/tools/0/operations/0/approval_timeout_seconds" {
			t.Fatalf("%v: %+v", v, rep.Errors)
		}
	}
}
