package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/store"
)

func memPath(agent int64, rest string) string {
	return fmt.Sprintf("/agents/%d/memories%s", agent, rest)
}

// TestAgentMemoriesAPI: the agent's managers list (paged, searched with the recall ranking),
// edit and delete its memories, every user's; a member who only sees the agent is refused, a
// stranger does not see it; memories go with their agent.
func TestAgentMemoriesAPI(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	ctx := context.Background()
	a := mkAgent(t, w.owner, map[string]any{"name": "Team agent", "principal_id": w.teamP})
	st := w.env.App.Store
	var ids []int64
	for i, text := range []string{"Alice drinks tea.", "Bob drinks coffee black.", "The team meets on Mondays."} {
		var user *int64
		if i < 2 {
			uid := []int64{w.memberU.Id, w.gadminU.Id}[i]
			user = &uid
		}
		m, err := st.Remember(ctx, store.NewMemory{AgentID: a.Id, UserID: user, Text: text}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	var l gen.AgentMemoryListResponse
	w.gadmin.Get(memPath(a.Id, "?per_page=2")).Expect(t, 200).Decode(t, &l)
	if l.Data.Total != 3 || len(l.Data.Memories) != 2 || l.Data.Memories[0].Text != "The team meets on Mondays." {
		t.Fatalf("page 1 = %+v", l.Data)
	}
	w.owner.Get(memPath(a.Id, "?q=coffee+drinks")).Expect(t, 200).Decode(t, &l)
	if l.Data.Total != 2 || l.Data.Memories[0].Text != "Bob drinks coffee black." || l.Data.Memories[0].UserId == nil {
		t.Fatalf("search = %+v", l.Data)
	}
	w.owner.Get(memPath(a.Id, "?q="+strings.Repeat("x", 501))).Expect(t, 422, "VALIDATION_ERROR")
	w.member.Get(memPath(a.Id, "")).Expect(t, 403, "FORBIDDEN")
	w.stranger.Get(memPath(a.Id, "")).Expect(t, 404, "NOT_FOUND")

	var r gen.AgentMemoryResponse
	w.owner.Patch(memPath(a.Id, fmt.Sprintf("/%d", ids[0])), map[string]any{"text": " Alice drinks green tea. "}).Expect(t, 200).Decode(t, &r)
	if r.Data.Memory.Text != "Alice drinks green tea." || r.Data.Memory.UserId == nil || *r.Data.Memory.UserId != w.memberU.Id {
		t.Fatalf("edited = %+v", r.Data.Memory)
	}
	w.owner.Patch(memPath(a.Id, fmt.Sprintf("/%d", ids[0])), map[string]any{"text": "  "}).Expect(t, 422, "VALIDATION_ERROR")
	w.owner.Patch(memPath(a.Id, fmt.Sprintf("/%d", ids[0])), map[string]any{"text": strings.Repeat("x", 2001)}).Expect(t, 422)
	w.member.Patch(memPath(a.Id, fmt.Sprintf("/%d", ids[0])), map[string]any{"text": "x"}).Expect(t, 403)
	w.owner.Patch(memPath(a.Id, "/999999"), map[string]any{"text": "x"}).Expect(t, 404)
	mine := mkAgent(t, w.owner, map[string]any{"name": "Mine"})
	w.owner.Delete(memPath(mine.Id, fmt.Sprintf("/%d", ids[1]))).Expect(t, 404, "NOT_FOUND")
	w.member.Delete(memPath(a.Id, fmt.Sprintf("/%d", ids[1]))).Expect(t, 403)
	w.owner.Delete(memPath(a.Id, fmt.Sprintf("/%d", ids[1]))).Expect(t, 200)
	w.owner.Delete(memPath(a.Id, fmt.Sprintf("/%d", ids[1]))).Expect(t, 404)

	w.owner.Delete(agentPath(a.Id)).Expect(t, 200)
	if _, err := st.Memory(ctx, a.Id, ids[2]); err == nil {
		t.Fatal("a memory outlived its agent")
	}
}

// TestAgentTemplateCarriesMemories: an export by a manager carries the agent's agent-wide
// memories (oldest first), never a single user's; a viewer's export carries none; importing the
// export gives the new agent those memories, in the same order, without an origin.
func TestAgentTemplateCarriesMemories(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	ctx := context.Background()
	a := mkAgent(t, w.owner, map[string]any{"name": "Team agent", "principal_id": w.teamP, "system_prompt": "Help."})
	st := w.env.App.Store
	for _, m := range []store.NewMemory{
		{AgentID: a.Id, Text: "The team meets on Mondays."},
		{AgentID: a.Id, UserID: &w.memberU.Id, Text: "The member's private fact."},
		{AgentID: a.Id, Text: "Reports go out on Fridays."},
	} {
		if _, err := st.Remember(ctx, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	var r gen.AgentExportResponse
	res := w.owner.Get(agentPath(a.Id)+"/export").Expect(t, 200)
	res.Decode(t, &r)
	if got := r.Data.Template.Agent.Memories; got == nil || strings.Join(*got, "|") != "The team meets on Mondays.|Reports go out on Fridays." {
		t.Fatalf("exported memories = %v", got)
	}
	var viewer gen.AgentExportResponse
	w.member.Get(agentPath(a.Id)+"/export").Expect(t, 200).Decode(t, &viewer)
	if viewer.Data.Template.Agent.Memories != nil {
		t.Fatalf("a viewer's export carries memories: %v", *viewer.Data.Template.Agent.Memories)
	}
	var raw struct {
		Data struct {
			Template json.RawMessage `json:"template"`
		} `json:"data"`
	}
	res.Decode(t, &raw)
	imp := tplImport(t, w.owner, "", "application/json", string(raw.Data.Template))
	var l gen.AgentMemoryListResponse
	w.owner.Get(memPath(imp.Data.Agent.Id, "")).Expect(t, 200).Decode(t, &l)
	if l.Data.Total != 2 || l.Data.Memories[0].Text != "Reports go out on Fridays." || l.Data.Memories[1].Text != "The team meets on Mondays." ||
		l.Data.Memories[0].UserId != nil || l.Data.Memories[0].TaskId != nil {
		t.Fatalf("imported memories = %+v", l.Data)
	}
	bad := strings.Replace(string(raw.Data.Template), `"memories":[`, `"memories":["",`, 1)
	if v := tplValidate(t, w.owner, "application/json", bad); v.Data.Valid || tplFindings(v.Data.Errors)[0] != "AGENT_REQUIRED /agent/memories/0" {
		t.Fatalf("blank memory: %+v", v.Data.Errors)
	}
}
