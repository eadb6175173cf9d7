package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

func tplPath(agent int64, rest string) string {
	return fmt.Sprintf("/agents/%d/templates%s", agent, rest)
}
func runPath(agent int64, rest string) string {
	return fmt.Sprintf("/agents/%d/scheduled-runs%s", agent, rest)
}

func TestPromptTemplates(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	a := mkAgent(t, w.owner, map[string]any{"name": "Team agent", "principal_id": w.teamP})
	body := map[string]any{"name": "Digest", "template": "News about {{topic}} in {{length}} points",
		"variables": []map[string]any{{"key": "topic"}, {"key": "length", "default_value": "5"}}, "max_steps": 15}
	var r gen.PromptTemplateResponse
	w.gadmin.Post(tplPath(a.Id, ""), body).Expect(t, 201).Decode(t, &r)
	tp := r.Data.Template
	if tp.Name != "Digest" || len(tp.Variables) != 2 || !tp.IsActive || tp.MaxSteps == nil || *tp.MaxSteps != 15 {
		t.Fatalf("created %+v", tp)
	}
	// Rules.
	w.owner.Post(tplPath(a.Id, ""), body).Expect(t, 409, "CONFLICT")
	w.owner.Post(tplPath(a.Id, ""), map[string]any{"name": "X", "template": "Hi {{who}}"}).Expect(t, 422, "VALIDATION_ERROR")
	w.owner.Post(tplPath(a.Id, ""), map[string]any{"name": "X", "template": "t", "variables": []map[string]any{{"key": "a"}, {"key": "a"}}}).Expect(t, 422)
	w.owner.Post(tplPath(a.Id, ""), map[string]any{"name": "X"}).Expect(t, 422)
	w.owner.Post(tplPath(a.Id, ""), map[string]any{"name": fmt.Sprintf("%0101d", 0), "template": "t"}).Expect(t, 422)
	w.member.Post(tplPath(a.Id, ""), map[string]any{"name": "M", "template": "t"}).Expect(t, 403, "FORBIDDEN")
	w.stranger.Post(tplPath(a.Id, ""), map[string]any{"name": "S", "template": "t"}).Expect(t, 404, "NOT_FOUND")
	// Reads: visibility.
	var l gen.PromptTemplateListResponse
	w.member.Get(tplPath(a.Id, "")).Expect(t, 200).Decode(t, &l)
	if len(l.Data.Templates) != 1 {
		t.Fatalf("list = %+v (a refused request wrote something?)", l.Data.Templates)
	}
	w.member.Get(tplPath(a.Id, fmt.Sprintf("/%d", tp.Id))).Expect(t, 200)
	w.stranger.Get(tplPath(a.Id, "")).Expect(t, 404)
	w.stranger.Get(tplPath(a.Id, fmt.Sprintf("/%d", tp.Id))).Expect(t, 404)
	w.owner.Get(tplPath(a.Id, "/999999")).Expect(t, 404)
	w.owner.Get(tplPath(a.Id, "/abc")).Expect(t, 404)
	other := mkAgent(t, w.owner, map[string]any{"name": "Mine"})
	w.owner.Get(tplPath(other.Id, fmt.Sprintf("/%d", tp.Id))).Expect(t, 404)
	// Update.
	upd := map[string]any{"name": "Digest 2", "template": "About {{topic}}", "variables": []map[string]any{{"key": "topic"}}, "is_active": false}
	w.member.Put(tplPath(a.Id, fmt.Sprintf("/%d", tp.Id)), upd).Expect(t, 403)
	w.owner.Put(tplPath(a.Id, fmt.Sprintf("/%d", tp.Id)), upd).Expect(t, 200).Decode(t, &r)
	if r.Data.Template.Name != "Digest 2" || r.Data.Template.IsActive || r.Data.Template.MaxSteps != nil || r.Data.Template.Description != "" {
		t.Fatalf("updated %+v", r.Data.Template)
	}
	w.owner.Post(tplPath(a.Id, ""), map[string]any{"name": "Second", "template": "t"}).Expect(t, 201)
	w.owner.Put(tplPath(a.Id, fmt.Sprintf("/%d", tp.Id)), map[string]any{"name": "Second", "template": "t"}).Expect(t, 409)
	// A run uses it: delete refused, an update dropping the run's value refused.
	w.owner.Post(runPath(a.Id, ""), map[string]any{"name": "r", "template_id": tp.Id, "variables": map[string]string{"topic": "ai"}, "cron_expression": "0 7 * * *"}).Expect(t, 201)
	w.owner.Delete(tplPath(a.Id, fmt.Sprintf("/%d", tp.Id))).Expect(t, 409, "INVALID_STATE")
	w.owner.Put(tplPath(a.Id, fmt.Sprintf("/%d", tp.Id)), map[string]any{"name": "Digest 2", "template": "{{topic}} {{more}}",
		"variables": []map[string]any{{"key": "topic"}, {"key": "more"}}}).Expect(t, 422)
	w.member.Delete(tplPath(a.Id, fmt.Sprintf("/%d", tp.Id))).Expect(t, 403)
	second := mkTemplate(t, w.owner, a.Id, "Third")
	w.owner.Delete(tplPath(a.Id, fmt.Sprintf("/%d", second))).Expect(t, 200)
	w.owner.Delete(tplPath(a.Id, fmt.Sprintf("/%d", second))).Expect(t, 404)
}

func mkTemplate(t *testing.T, c *apitest.Client, agent int64, name string) int64 {
	t.Helper()
	var r gen.PromptTemplateResponse
	c.Post(tplPath(agent, ""), map[string]any{"name": name, "template": "t"}).Expect(t, 201).Decode(t, &r)
	return r.Data.Template.Id
}

func TestScheduledRuns(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	a := mkAgent(t, w.owner, map[string]any{"name": "Team agent", "principal_id": w.teamP, "max_steps": 7})
	var tr gen.PromptTemplateResponse
	w.owner.Post(tplPath(a.Id, ""), map[string]any{"name": "Digest", "template": "News about {{topic}} in {{n}}",
		"variables": []map[string]any{{"key": "topic"}, {"key": "n", "default_value": "5"}}, "max_steps": 12}).Expect(t, 201).Decode(t, &tr)
	tp := tr.Data.Template.Id
	future := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)

	var rr gen.ScheduledRunResponse
	w.gadmin.Post(runPath(a.Id, ""), map[string]any{"name": "Morning", "template_id": tp, "variables": map[string]string{"topic": "AI"},
		"cron_expression": "0 7 * * mon-fri", "timezone": "Europe/Berlin"}).Expect(t, 201).Decode(t, &rr)
	run := rr.Data.ScheduledRun
	if run.CreatedBy != w.gadminU.Id || !run.IsActive || run.NextRunAt == nil || run.Timezone != "Europe/Berlin" || run.LastRunAt != nil {
		t.Fatalf("created %+v", run)
	}
	if h := run.NextRunAt.In(mustLoc(t, "Europe/Berlin")).Hour(); h != 7 {
		t.Fatalf("next run hour %d in Berlin, want 7", h)
	}
	// Validation: 422.
	for _, b := range []map[string]any{
		{"name": "x", "prompt": "p"},                                                    // no timing
		{"name": "x", "cron_expression": "* * * * *"},                                   // no prompt
		{"name": "x", "prompt": "p", "template_id": tp, "cron_expression": "* * * * *"}, // both
		{"name": "x", "prompt": "p", "cron_expression": "* * * * *", "run_at": future},  // both timings
		{"name": "x", "prompt": "p", "cron_expression": "61 * * * *"},
		{"name": "x", "prompt": "p", "cron_expression": "* * 31 2 *"},
		{"name": "x", "prompt": "p", "cron_expression": "* * * *"},
		{"name": "x", "prompt": "p", "run_at": past},
		{"name": "x", "prompt": "p", "cron_expression": "* * * * *", "timezone": "Mars/Olympus"},
		{"name": "x", "prompt": "p", "cron_expression": "* * * * *", "variables": map[string]string{"a": "b"}},
		{"name": "x", "template_id": tp, "cron_expression": "* * * * *"},                                                          // topic missing
		{"name": "x", "template_id": tp, "cron_expression": "* * * * *", "variables": map[string]string{"topic": "a", "zz": "b"}}, // unknown key
		{"name": "x", "template_id": 999999, "cron_expression": "* * * * *"},
		{"name": "x", "prompt": "p", "cron_expression": "* * * * *", "max_steps_override": 101},
		{"name": 5, "prompt": "p", "cron_expression": "* * * * *"},
	} {
		w.owner.Post(runPath(a.Id, ""), b).Expect(t, 422)
	}
	w.owner.Post(runPath(a.Id, ""), map[string]any{"name": "x", "prompt": "p", "run_at": past, "is_active": false}).Expect(t, 201)
	w.member.Post(runPath(a.Id, ""), map[string]any{"name": "m", "prompt": "p", "cron_expression": "* * * * *"}).Expect(t, 403)
	w.stranger.Post(runPath(a.Id, ""), map[string]any{"name": "s", "prompt": "p", "cron_expression": "* * * * *"}).Expect(t, 404)
	var l gen.ScheduledRunListResponse
	w.member.Get(runPath(a.Id, "")).Expect(t, 200).Decode(t, &l)
	if len(l.Data.ScheduledRuns) != 2 || l.Data.ScheduledRuns[0].Id != run.Id {
		t.Fatalf("list = %+v", l.Data.ScheduledRuns)
	}
	w.stranger.Get(runPath(a.Id, "")).Expect(t, 404)
	one := fmt.Sprintf("/%d", run.Id)
	w.member.Get(runPath(a.Id, one)).Expect(t, 200)
	w.stranger.Get(runPath(a.Id, one)).Expect(t, 404)
	w.owner.Get(runPath(a.Id, "/999999")).Expect(t, 404)
	mine := mkAgent(t, w.owner, map[string]any{"name": "Mine"})
	w.owner.Get(runPath(mine.Id, one)).Expect(t, 404)

	// Update: replace; created_by kept.
	w.member.Put(runPath(a.Id, one), map[string]any{"name": "u", "prompt": "p", "run_at": future}).Expect(t, 403)
	w.owner.Put(runPath(a.Id, one), map[string]any{"name": "u", "prompt": "p", "cron_expression": "* * 31 2 *"}).Expect(t, 422)
	w.owner.Put(runPath(a.Id, one), map[string]any{"name": "u", "prompt": "Do it", "run_at": future, "max_steps_override": 3}).Expect(t, 200).Decode(t, &rr)
	u := rr.Data.ScheduledRun
	if u.CronExpression != nil || u.RunAt == nil || u.NextRunAt == nil || !u.NextRunAt.Equal(*u.RunAt) || u.CreatedBy != w.gadminU.Id || u.Timezone != "UTC" || u.TemplateId != nil {
		t.Fatalf("updated %+v", u)
	}

	// Trigger: any viewer; task owned by the caller, QUEUED, budget = override.
	w.stranger.Post(runPath(a.Id, one+"/trigger"), nil).Expect(t, 404)
	var tk gen.ScheduledRunTriggerResponse
	w.member.Post(runPath(a.Id, one+"/trigger"), nil).Expect(t, 201).Decode(t, &tk)
	if tk.Data.Task.Status != "QUEUED" || tk.Data.Task.MaxSteps != 3 {
		t.Fatalf("triggered task %+v", tk.Data.Task)
	}
	w.member.Get(fmt.Sprintf("/tasks/%d", tk.Data.Task.Id)).Expect(t, 200)
	w.owner.Get(runPath(a.Id, one)).Expect(t, 200).Decode(t, &rr)
	if rr.Data.ScheduledRun.LastTaskId == nil || *rr.Data.ScheduledRun.LastTaskId != tk.Data.Task.Id || rr.Data.ScheduledRun.LastRunAt == nil ||
		!rr.Data.ScheduledRun.NextRunAt.Equal(*u.NextRunAt) {
		t.Fatalf("after trigger %+v", rr.Data.ScheduledRun)
	}
	// Template run: rendered prompt and the template's budget.
	w.owner.Put(runPath(a.Id, one), map[string]any{"name": "u", "template_id": tp, "variables": map[string]string{"topic": "AI"}, "run_at": future}).Expect(t, 200)
	w.owner.Post(runPath(a.Id, one+"/trigger"), nil).Expect(t, 201).Decode(t, &tk)
	if tk.Data.Task.MaxSteps != 12 {
		t.Fatalf("template run budget %d", tk.Data.Task.MaxSteps)
	}

	// Delete.
	w.member.Delete(runPath(a.Id, one)).Expect(t, 403)
	w.owner.Delete(runPath(a.Id, one)).Expect(t, 200)
	w.owner.Delete(runPath(a.Id, one)).Expect(t, 404)
	w.owner.Get(fmt.Sprintf("/tasks/%d", tk.Data.Task.Id)).Expect(t, 200) // tasks it started are kept
}

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Skip("no tzdata")
	}
	return l
}
