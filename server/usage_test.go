package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// spend records one model call of a new task of agent agentID for user userID (started with
// key apiKeyID when not nil) straight in the store, as a step would.
func spend(t *testing.T, st *store.Store, agentID, userID int64, apiKeyID *int64, in, out int64) {
	t.Helper()
	ctx := context.Background()
	a, err := st.Agent(ctx, agentID, userID)
	if err != nil {
		t.Fatal(err)
	}
	tk := storetest.Task(t, st, a, userID, func(nt *store.NewTask) {
		if apiKeyID != nil {
			nt.Source, nt.APIKeyID = store.TaskSourceAgentAPI, apiKeyID
		}
	})
	if got, err := st.ClaimQueued(ctx, "w", time.Minute, 1); err != nil || len(got) != 1 || got[0].ID != tk.ID {
		t.Fatalf("claim = %v, %v", got, err)
	}
	price := int64(1_000_000) // 1.00 per million tokens: one micro-unit a token
	answer := "ok"
	if _, err := st.FinishStep(ctx, tk.ID, "w", store.StepOutcome{Status: taskstate.Completed, Answer: &answer, Steps: 1,
		Call: &store.ModelCall{Model: "m", InputTokens: in, OutputTokens: out, Prices: store.LLMPrices{Input: &price, Output: &price}}}); err != nil {
		t.Fatal(err)
	}
}

func usageRows(t *testing.T, c *apitest.Client, query string) []gen.UsageRow {
	t.Helper()
	var r gen.UsageResponse
	c.Get("/usage?from=2026-11-01&to=2026-11-30&"+query).Expect(t, http.StatusOK).Decode(t, &r)
	if r.Data.Currency != "USD" || r.Data.TimeZone != "UTC" {
		t.Fatalf("usage currency %q zone %q", r.Data.Currency, r.Data.TimeZone)
	}
	return r.Data.Rows
}

// TestUsageAPI: who sees which usage, grouping, CSV, and the period's rules.
func TestUsageAPI(t *testing.T) {
	t.Parallel()
	c := newGroupCast(t)
	st := c.env.App.Store
	team := mkAgent(t, c.owner, map[string]any{"name": "Team bot", "principal_id": c.group.PrincipalId})
	own := mkAgent(t, c.stranger, map[string]any{"name": "Own bot"})
	spend(t, st, team.Id, c.memberU.Id, nil, 100, 10)
	spend(t, st, team.Id, c.ownerU.Id, nil, 200, 20)
	spend(t, st, own.Id, c.strU.Id, nil, 1000, 100)

	// The administrator sees everything.
	rows := usageRows(t, c.root, "group_by=agent")
	if len(rows) != 2 || *rows[0].AgentId != team.Id || rows[0].Calls != 2 || rows[0].InputTokens != 300 || rows[0].Cost != 330 ||
		*rows[1].AgentId != own.Id || rows[1].Cost != 1100 {
		t.Fatalf("administrator's usage by agent = %+v", rows)
	}
	// The group's owner and admin see the group's agents; not the stranger's.
	for _, cl := range []*apitest.Client{c.owner, c.gadmin} {
		rows = usageRows(t, cl, "group_by=user")
		if len(rows) != 2 || rows[0].InputTokens+rows[1].InputTokens != 300 {
			t.Fatalf("group manager's usage by user = %+v", rows)
		}
	}
	// A member sees their own tasks only; the stranger theirs.
	rows = usageRows(t, c.member, "")
	if len(rows) != 1 || rows[0].InputTokens != 100 || rows[0].Calls != 1 {
		t.Fatalf("member's usage = %+v", rows)
	}
	rows = usageRows(t, c.stranger, "group_by=agent,day")
	if len(rows) != 1 || rows[0].AgentId == nil || *rows[0].AgentId != own.Id || rows[0].Day == nil || rows[0].Day.String() != "2026-11-22" {
		t.Fatalf("stranger's usage = %+v", rows)
	}
	c.stranger.Get("/usage?from=2026-11-01&to=2026-11-30&group_by=agent&group_by=day").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	// By group: the team's calls name the group; a personal agent's none.
	rows = usageRows(t, c.root, "group_by=group")
	if len(rows) != 2 {
		t.Fatalf("usage by group = %+v", rows)
	}
	for _, r := range rows {
		if (r.InputTokens == 300) != (r.GroupId != nil && *r.GroupId == c.group.Id) {
			t.Fatalf("usage by group = %+v", rows)
		}
	}
	rows = usageRows(t, c.root, fmt.Sprintf("group_id=%d", c.group.Id))
	if len(rows) != 1 || rows[0].InputTokens != 300 {
		t.Fatalf("usage of the group = %+v", rows)
	}
	c.stranger.Get(fmt.Sprintf("/usage?from=2026-11-01&to=2026-11-30&group_id=%d", c.group.Id)).Expect(t, http.StatusNotFound, "NOT_FOUND")
	// Another month has nothing.
	var r gen.UsageResponse
	c.root.Get("/usage?from=2026-10-01&to=2026-10-31").Expect(t, http.StatusOK).Decode(t, &r)
	if len(r.Data.Rows) != 0 {
		t.Fatalf("October usage = %+v", r.Data.Rows)
	}
	// CSV.
	res := c.root.Get("/usage?from=2026-11-01&to=2026-11-30&group_by=agent&format=csv").Expect(t, http.StatusOK)
	lines := strings.Split(strings.TrimSpace(string(res.Body)), "\n")
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") || len(lines) != 3 ||
		lines[0] != "agent_id,calls,input_tokens,cached_input_tokens,output_tokens,cost" ||
		lines[1] != fmt.Sprintf("%d,2,300,0,30,330", team.Id) {
		t.Fatalf("CSV = %s %q", res.Header.Get("Content-Type"), res.Body)
	}
	// The period's rules.
	c.root.Get("/usage?from=2026-11-30&to=2026-11-01").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	c.root.Get("/usage?from=2025-01-01&to=2026-11-01").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	c.root.Get("/usage?from=2026-11-01&to=2026-11-30&group_by=agent,agent").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	c.root.Get("/usage?from=2026-11-01&to=2026-11-30&group_by=planet").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	c.root.Get("/usage?from=2026-11-01").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
}

// TestBudgetsAPI: who may set which budget, its use, its edits, and the per-agent API's 429
// with Retry-After at the reset once a key's budget is used up.
func TestBudgetsAPI(t *testing.T) {
	t.Parallel()
	c := groupCastOn(t, apitest.New(t, "SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000"))
	st := c.env.App.Store
	team := mkAgent(t, c.owner, map[string]any{"name": "Team bot", "principal_id": c.group.PrincipalId})
	key := mintKey(t, c.owner, team.Id, "integration")
	groupBudget := map[string]any{"scope_kind": "group", "scope_id": strconv.FormatInt(c.group.Id, 10), "period": "month",
		"limit_cost": 1000, "soft_percent": 80}

	c.member.Post("/budgets", groupBudget).Expect(t, http.StatusForbidden, "FORBIDDEN")
	c.stranger.Post("/budgets", groupBudget).Expect(t, http.StatusNotFound, "NOT_FOUND")
	c.owner.Post("/budgets", map[string]any{"scope_kind": "user", "scope_id": strconv.FormatInt(c.ownerU.Id, 10), "period": "day",
		"limit_tokens": 5}).Expect(t, http.StatusForbidden, "FORBIDDEN") // user budgets are the administrators'
	c.owner.Post("/budgets", map[string]any{"scope_kind": "group", "scope_id": "x", "period": "month", "limit_cost": 1}).
		Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	c.owner.Post("/budgets", map[string]any{"scope_kind": "group", "scope_id": "1", "period": "month"}).
		Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR") // no limit
	var gb gen.BudgetResponse
	c.owner.Post("/budgets", groupBudget).Expect(t, http.StatusCreated).Decode(t, &gb)
	if gb.Data.SpentCost != 0 || gb.Data.Exceeded || gb.Data.ResetsAt.Format(time.RFC3339) != "2026-12-01T00:00:00Z" ||
		gb.Data.PeriodStart.Format(time.RFC3339) != "2026-11-01T00:00:00Z" {
		t.Fatalf("created budget = %+v", gb.Data)
	}
	c.gadmin.Post("/budgets", groupBudget).Expect(t, http.StatusConflict, "CONFLICT")

	var kb gen.BudgetResponse
	c.owner.Post("/budgets", map[string]any{"scope_kind": "key", "scope_id": key.Id, "period": "day", "limit_tokens": 100}).
		Expect(t, http.StatusCreated).Decode(t, &kb)
	if kb.Data.ScopeId != key.Id {
		t.Fatalf("key budget scope = %q, want %q", kb.Data.ScopeId, key.Id)
	}

	k, err := st.APIKeyByKeyID(context.Background(), key.Id)
	if err != nil {
		t.Fatal(err)
	}
	spend(t, st, team.Id, c.ownerU.Id, &k.ID, 90, 10)

	var list gen.BudgetListResponse
	c.gadmin.Get("/budgets").Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.Data) != 2 || list.Data[0].SpentCost != 100 || list.Data[0].Exceeded || list.Data[1].SpentTokens != 100 || !list.Data[1].Exceeded {
		t.Fatalf("budgets = %+v", list.Data)
	}
	c.stranger.Get("/budgets").Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.Data) != 0 {
		t.Fatalf("stranger's budgets = %+v", list.Data)
	}
	c.owner.Get("/budgets?scope_kind=key&scope_id="+key.Id).Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.Data) != 1 || list.Data[0].Id != kb.Data.Id {
		t.Fatalf("key's budgets = %+v", list.Data)
	}

	// The key's budget is used up: a chat start answers 429 with Retry-After at midnight UTC
	// (15 hours after the harness clock's 09:00), and no chat is created.
	res := c.env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Body: map[string]any{"text": "hi"},
		Header: map[string]string{"Authorization": "Bearer " + key.Key}}).Expect(t, http.StatusTooManyRequests, "BUDGET_EXCEEDED")
	if ra, _ := strconv.Atoi(res.Header.Get("Retry-After")); ra < 14*3600 || ra > 15*3600 {
		t.Fatalf("Retry-After = %q, want about 15 hours", res.Header.Get("Retry-After"))
	}
	if !strings.Contains(string(res.Body), fmt.Sprintf("budget %d", kb.Data.Id)) || !strings.Contains(string(res.Body), "resets at 2026-11-23T00:00:00Z") {
		t.Fatalf("429 body = %s", res.Body)
	}
	// Raising the limit lets chats start again.
	c.member.Patch(fmt.Sprintf("/budgets/%d", kb.Data.Id), map[string]any{"limit_tokens": 1000}).Expect(t, http.StatusForbidden, "FORBIDDEN")
	c.owner.Patch(fmt.Sprintf("/budgets/%d", kb.Data.Id), map[string]any{"clear": []string{"limit_tokens"}}).
		Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR") // no limit left
	c.owner.Patch(fmt.Sprintf("/budgets/%d", kb.Data.Id), map[string]any{"limit_tokens": 1000, "clear": []string{"limit_tokens"}}).
		Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	var upd gen.BudgetResponse
	c.owner.Patch(fmt.Sprintf("/budgets/%d", kb.Data.Id), map[string]any{"limit_tokens": 1000}).Expect(t, http.StatusOK).Decode(t, &upd)
	if *upd.Data.LimitTokens != 1000 || upd.Data.Exceeded {
		t.Fatalf("raised budget = %+v", upd.Data)
	}
	c.env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Body: map[string]any{"text": "hi"},
		Header: map[string]string{"Authorization": "Bearer " + key.Key}}).Expect(t, http.StatusAccepted)

	c.stranger.Delete(fmt.Sprintf("/budgets/%d", gb.Data.Id)).Expect(t, http.StatusNotFound, "NOT_FOUND")
	c.gadmin.Delete(fmt.Sprintf("/budgets/%d", gb.Data.Id)).Expect(t, http.StatusOK)
	c.gadmin.Delete(fmt.Sprintf("/budgets/%d", gb.Data.Id)).Expect(t, http.StatusNotFound, "NOT_FOUND")
}

// TestLLMConfigPrices: a model configuration carries its prices; clear removes them.
func TestLLMConfigPrices(t *testing.T) {
	t.Parallel()
	c := newLLMCast(t)
	cfg := c.create(t, c.owner, map[string]any{"name": "Priced", "driver": "openai", "model": "gpt",
		"base_url": "https://llm.example.com/v1", "prices": map[string]any{"input": 3_000_000, "output": 15_000_000}})
	if cfg.Prices.Input == nil || *cfg.Prices.Input != 3_000_000 || *cfg.Prices.Output != 15_000_000 || cfg.Prices.CachedInput != nil {
		t.Fatalf("created prices = %+v", cfg.Prices)
	}
	path := fmt.Sprintf("%s/%d", c.base, cfg.Id)
	c.owner.Patch(path, map[string]any{"prices": map[string]any{"input": -1}}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	var r gen.LlmConfigResponse
	c.owner.Patch(path, map[string]any{"prices": map[string]any{"cached_input": 1}}).Expect(t, http.StatusOK).Decode(t, &r)
	if p := r.Data.LlmConfig.Prices; p.Input != nil || p.CachedInput == nil || *p.CachedInput != 1 {
		t.Fatalf("replaced prices = %+v", p)
	}
	var cleared gen.LlmConfigResponse // a fresh value: absent members would keep the old ones
	c.owner.Patch(path, map[string]any{"clear": []string{"prices"}}).Expect(t, http.StatusOK).Decode(t, &cleared)
	if p := cleared.Data.LlmConfig.Prices; p.Input != nil || p.CachedInput != nil || p.Output != nil {
		t.Fatalf("cleared prices = %+v", p)
	}
}
