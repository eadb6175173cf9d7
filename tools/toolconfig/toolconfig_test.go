package toolconfig_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentsvc/svc/internal/platform/secret"
	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/toolconfig"
)

type specTool tools.Spec

func (t specTool) Spec() tools.Spec { return tools.Spec(t) }

func weather(recommends ...string) specTool {
	return specTool{
		Class: "weather.ForecastTool", Name: "forecast", PluginSlug: "weather", RecommendsSkills: recommends,
		Operations: []tools.Operation{
			{Name: "today", EnabledByDefault: true},
			{Name: "alert", RequiresApprovalByDefault: true},
		},
		Settings: []tools.Setting{
			{Key: "units", Type: tools.SettingSelect, Options: []string{"metric", "imperial"}, Default: "metric"},
			{Key: "api_key", Type: tools.SettingPassword, Required: true},
			{Key: "city", Type: tools.SettingString},
			{Key: "allowed_skills", Type: tools.SettingStringList},
			{Key: "allowed_target_agents", Type: tools.SettingIntegerList},
		},
	}
}

func index(t *testing.T, names ...string) *skill.Index {
	t.Helper()
	fsys := fstest.MapFS{}
	for _, n := range names {
		fsys[n+"/SKILL.md"] = &fstest.MapFile{Data: []byte(fmt.Sprintf("---\nname: %s\ndescription: d\n---\nbody\n", n))}
	}
	x, problems := skill.NewIndex(skill.Provider{Source: skill.CoreSource, FS: fsys})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	return x
}

func registry(t *testing.T, ts ...tools.Tool) *tools.Registry {
	t.Helper()
	reg := tools.NewRegistry()
	for _, tl := range ts {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func box(t *testing.T) *secret.Box {
	t.Helper()
	b, err := secret.NewBox([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRegisteredChecksRecommendedSkills(t *testing.T) {
	t.Parallel()
	reg := registry(t, weather("weather-briefing"))
	svc := toolconfig.New(nil, reg, index(t, "web-research"), box(t))
	_, err := svc.Registered()
	msg, kind, ok := svcerr.Public(err)
	if !ok || kind != svcerr.ErrSkillsMissing || !strings.Contains(msg, "weather.ForecastTool") || !strings.Contains(msg, `"weather-briefing"`) {
		t.Fatalf("Registered() error = %v (%q, %v)", err, msg, kind)
	}
	// No index at all: every recommendation is missing.
	if _, err := toolconfig.New(nil, reg, nil, box(t)).Registered(); !errors.Is(err, svcerr.ErrSkillsMissing) {
		t.Fatalf("without an index: %v", err)
	}

	svc = toolconfig.New(nil, reg, index(t, "weather-briefing"), box(t))
	specs, err := svc.Registered()
	if err != nil || len(specs) != 1 || specs[0].Class != "weather.ForecastTool" {
		t.Fatalf("Registered() = %v, %v", specs, err)
	}
}

func TestSecretsAndAgentToolStates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	b := box(t)
	svc := toolconfig.New(st, registry(t, weather()), index(t, "web-research", "scheduling"), b)
	admin := storetest.User(t, st, storetest.Admin)
	user := storetest.User(t, st)
	ag := storetest.Agent(t, st, user.PrincipalID)
	const class = "weather.ForecastTool"

	// Global: the secret is sealed in the store and masked in the answer.
	l, err := svc.PutGlobalSettings(ctx, admin, class, map[string]any{"api_key": "global-secret", "units": "imperial"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.Settings, map[string]any{"api_key": tools.Mask, "units": "imperial"}) || l.Scope != "global" {
		t.Fatalf("global layer = %+v", l)
	}
	raw, err := st.ToolSettings(ctx, store.GlobalToolScope(), class)
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := raw.Values["api_key"].(string)
	if !strings.HasPrefix(sealed, "v1:") || strings.Contains(sealed, "global-secret") {
		t.Fatalf("stored api_key = %q", sealed)
	}
	if plain, err := b.Open(sealed); err != nil || string(plain) != "global-secret" {
		t.Fatalf("open stored api_key: %q, %v", plain, err)
	}
	// The mask keeps the secret (the stored text does not even change).
	if _, err := svc.PutGlobalSettings(ctx, admin, class, map[string]any{"api_key": tools.Mask, "city": "Oslo"}); err != nil {
		t.Fatal(err)
	}
	raw, _ = st.ToolSettings(ctx, store.GlobalToolScope(), class)
	if raw.Values["api_key"] != sealed || raw.Values["city"] != "Oslo" {
		t.Fatalf("after the mask: %v", raw.Values)
	}
	// Non-administrators are refused even reading.
	if _, err := svc.GlobalSettings(ctx, user, class); !errors.Is(err, svcerr.ErrForbidden) {
		t.Fatalf("user reads global: %v", err)
	}

	// The owner's user layer and the agent layer.
	if _, err := svc.PutUserSettings(ctx, user, class, map[string]any{"api_key": "user-secret"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ReplaceOverride(ctx, user, fmt.Sprint(ag.ID), class, map[string]any{"city": "Bergen", "allowed_skills": []any{"scheduling"}}); err != nil {
		t.Fatal(err)
	}

	// A skill outside the index, or an agent of another principal, refuses the whole call.
	other := storetest.Agent(t, st, admin.PrincipalID)
	for _, bad := range []map[string]any{
		{"city": "X", "allowed_skills": []any{"scheduling", "nope"}},
		{"city": "X", "allowed_target_agents": []any{float64(other.ID)}},
		{"city": "X", "allowed_target_agents": []any{float64(999999)}},
		{"city": "X", "colour": "red"},
	} {
		if _, err := svc.ReplaceOverride(ctx, user, fmt.Sprint(ag.ID), class, bad); !errors.Is(err, svcerr.ErrInvalid) {
			t.Fatalf("ReplaceOverride(%v) = %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := svc.ReplaceOverride(ctx, user, fmt.Sprint(ag.ID), class, map[string]any{"city": "Bergen", "allowed_skills": []any{"scheduling"}, "allowed_target_agents": []any{float64(ag.ID)}}); err != nil {
		t.Fatal(err)
	}

	states, err := svc.AgentToolStates(ctx, ag.ID)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := states[class]
	if !ok || len(states) != 1 || s.Enabled || len(s.Layers) != 4 {
		t.Fatalf("states = %+v", states)
	}
	eff, missing := tools.Cascade(tools.Spec(weather()), s.Layers...)
	if eff["api_key"] != "user-secret" || eff["units"] != "imperial" || eff["city"] != "Bergen" || len(missing) != 0 {
		t.Fatalf("effective = %v, missing %v", eff, missing)
	}
	if s.Layers[0]["api_key"] != "global-secret" {
		t.Fatalf("global layer not opened: %v", s.Layers[0])
	}

	// A secret sealed under another key reads as unset.
	other32, _ := secret.NewBox([]byte(strings.Repeat("o", 32)))
	foreign := toolconfig.New(st, registry(t, weather()), index(t), other32)
	states, err = foreign.AgentToolStates(ctx, ag.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := states[class].Layers[0]["api_key"]; ok {
		t.Fatalf("foreign key opened %v", states[class].Layers[0])
	}
	if _, missing := tools.Cascade(tools.Spec(weather()), states[class].Layers...); !reflect.DeepEqual(missing, []string{"api_key"}) {
		t.Fatalf("missing = %v", missing)
	}

	if _, err := svc.AgentToolStates(ctx, 999999); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("unknown agent: %v", err)
	}
}
