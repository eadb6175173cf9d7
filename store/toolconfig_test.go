package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// setTo returns an edit that replaces the layer with next.
func setTo(next map[string]any) store.SettingsEdit {
	return func(map[string]any) (map[string]any, error) { return next, nil }
}

// merged returns an edit that sets (or, for nil, deletes) the keys of w.
func merged(w map[string]any) store.SettingsEdit {
	return func(stored map[string]any) (map[string]any, error) {
		out := map[string]any{}
		for k, v := range stored {
			out[k] = v
		}
		for k, v := range w {
			if v == nil {
				delete(out, k)
			} else {
				out[k] = v
			}
		}
		return out, nil
	}
}

// normJSON round-trips v through JSON with json.Number, for comparing decoded layers.
func normJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func wantValues(t *testing.T, got *store.ToolSettings, want map[string]any) {
	t.Helper()
	if got.Values == nil {
		t.Fatal("Values is nil")
	}
	if !reflect.DeepEqual(normJSON(t, got.Values), normJSON(t, want)) {
		t.Fatalf("values = %#v, want %#v", got.Values, want)
	}
}

func TestToolScopeKey(t *testing.T) {
	t.Parallel()
	for sc, want := range map[store.ToolScope]string{
		store.GlobalToolScope(): "global", store.UserToolScope(3): "user:3",
		store.GroupToolScope(2): "group:2", store.AgentToolScope(7): "agent:7",
	} {
		if got := sc.Key(); got != want {
			t.Errorf("%+v.Key() = %q, want %q", sc, got, want)
		}
	}
}

func TestEditToolSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	other := storetest.User(t, s, storetest.Email("other@example.com"))
	const class = "weather.ForecastTool"

	for _, sc := range []store.ToolScope{store.GlobalToolScope(), store.UserToolScope(u.ID)} {
		t.Run(sc.Key(), func(t *testing.T) {
			empty, err := s.ToolSettings(ctx, sc, class)
			wantErr(t, err, nil)
			wantValues(t, empty, map[string]any{})
			if empty.UpdatedAt != nil || empty.ToolClass != class {
				t.Fatalf("empty layer = %+v", empty)
			}

			got, err := s.EditToolSettings(ctx, sc, class, setTo(map[string]any{
				"units": "metric", "days": 7, "tags": []any{"a", "b"}, "api_key": "v1:sealed", "gone": nil,
			}))
			wantErr(t, err, nil)
			wantValues(t, got, map[string]any{"units": "metric", "days": 7, "tags": []any{"a", "b"}, "api_key": "v1:sealed"})
			first := clock.Now().Truncate(time.Microsecond)
			if got.UpdatedAt == nil || !got.UpdatedAt.Equal(first) {
				t.Fatalf("updated_at = %v, want %v", got.UpdatedAt, first)
			}
			if n := countRows(t, s, "tool_settings", "scope_key = ? AND tool_class = ?", sc.Key(), class); n != 4 {
				t.Fatalf("%d rows, want 4", n)
			}

			// The edit sees the stored values (numbers exact) and its result is what stays.
			clock.Advance(time.Minute)
			var seen map[string]any
			got, err = s.EditToolSettings(ctx, sc, class, func(stored map[string]any) (map[string]any, error) {
				seen = stored
				return merged(map[string]any{"units": "imperial", "tags": nil})(stored)
			})
			wantErr(t, err, nil)
			if seen["days"] != json.Number("7") {
				t.Fatalf("edit saw %#v", seen)
			}
			wantValues(t, got, map[string]any{"units": "imperial", "days": 7, "api_key": "v1:sealed"})
			second := clock.Now().Truncate(time.Microsecond)
			if !got.UpdatedAt.Equal(second) {
				t.Fatalf("updated_at = %v, want %v", got.UpdatedAt, second)
			}

			// A write that changes nothing leaves updated_at alone.
			clock.Advance(time.Minute)
			got, err = s.EditToolSettings(ctx, sc, class, merged(map[string]any{"units": "imperial"}))
			wantErr(t, err, nil)
			if !got.UpdatedAt.Equal(second) {
				t.Fatalf("no-op write moved updated_at to %v", got.UpdatedAt)
			}

			// Refused writes leave the layer as it was.
			boom := errors.New("boom")
			for name, tc := range map[string]struct {
				edit store.SettingsEdit
				want error
			}{
				"edit error": {func(map[string]any) (map[string]any, error) { return nil, boom }, boom},
				"long key":   {merged(map[string]any{"units": "x", strings.Repeat("k", 65): 1}), svcerr.ErrInvalid},
				"empty key":  {merged(map[string]any{"units": "x", "": 1}), svcerr.ErrInvalid},
				"huge value": {merged(map[string]any{"units": strings.Repeat("v", store.MaxToolSettingValueLen)}), svcerr.ErrInvalid},
				"bad value":  {merged(map[string]any{"units": func() {}}), svcerr.ErrInvalid},
			} {
				_, err := s.EditToolSettings(ctx, sc, class, tc.edit)
				if !errors.Is(err, tc.want) {
					t.Fatalf("%s: error %v, want %v", name, err, tc.want)
				}
			}
			after, err := s.ToolSettings(ctx, sc, class)
			wantErr(t, err, nil)
			wantValues(t, after, map[string]any{"units": "imperial", "days": 7, "api_key": "v1:sealed"})

			// Other tools and other layers are separate.
			if o, _ := s.ToolSettings(ctx, sc, "core.ReadURLTool"); len(o.Values) != 0 {
				t.Fatalf("other tool sees %v", o.Values)
			}
			if o, _ := s.ToolSettings(ctx, store.UserToolScope(other.ID), class); len(o.Values) != 0 {
				t.Fatalf("other user sees %v", o.Values)
			}

			wantErr(t, s.DeleteToolSettings(ctx, sc, class), nil)
			wantErr(t, s.DeleteToolSettings(ctx, sc, class), nil) // idempotent
			after, _ = s.ToolSettings(ctx, sc, class)
			if len(after.Values) != 0 || after.UpdatedAt != nil {
				t.Fatalf("after delete: %+v", after)
			}
		})
	}

	// Scopes and classes the method does not take.
	_, err := s.EditToolSettings(ctx, store.UserToolScope(999999), class, setTo(map[string]any{"a": 1}))
	wantErr(t, err, svcerr.ErrNotFound)
	for _, sc := range []store.ToolScope{store.GroupToolScope(1), store.AgentToolScope(1), {Kind: "user"}, {Kind: "global", ID: 3}, {Kind: "team", ID: 1}} {
		_, err := s.EditToolSettings(ctx, sc, class, setTo(nil))
		wantErr(t, err, svcerr.ErrInvalid)
		wantErr(t, s.DeleteToolSettings(ctx, sc, class), svcerr.ErrInvalid)
	}
	for _, c := range []string{"", strings.Repeat("c", store.MaxToolClassLen+1), "bad class"} {
		_, err := s.EditToolSettings(ctx, store.GlobalToolScope(), c, setTo(nil))
		wantErr(t, err, svcerr.ErrInvalid)
		_, err = s.ToolSettings(ctx, store.GlobalToolScope(), c)
		wantErr(t, err, svcerr.ErrInvalid)
	}
	if n := countRows(t, s, "tool_settings", "1 = 1"); n != 0 {
		t.Fatalf("%d rows left", n)
	}

	// A user's layer goes with the user.
	_, err = s.EditToolSettings(ctx, store.UserToolScope(other.ID), class, setTo(map[string]any{"units": "metric"}))
	wantErr(t, err, nil)
	wantErr(t, errOf(s.DeleteUser(ctx, other.ID)), nil)
	if n := countRows(t, s, "tool_settings", "scope_key = ?", store.UserToolScope(other.ID).Key()); n != 0 {
		t.Fatalf("%d rows of a deleted user", n)
	}
}

func TestEditToolSettingsConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s)
	for _, sc := range []store.ToolScope{store.GlobalToolScope(), store.UserToolScope(u.ID)} {
		var wg sync.WaitGroup
		keys := []string{"a", "b", "c", "d", "e", "f"}
		errs := make(chan error, len(keys))
		for _, k := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.EditToolSettings(ctx, sc, "core.X", merged(map[string]any{k: k}))
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			wantErr(t, err, nil)
		}
		got, err := s.ToolSettings(ctx, sc, "core.X")
		wantErr(t, err, nil)
		if len(got.Values) != len(keys) {
			t.Fatalf("%s: concurrent merges kept %v", sc.Key(), got.Values)
		}
	}
}

func TestAgentToolConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.NewWithClock(t, testkit.NewClock(t0).Now)
	owner := storetest.User(t, s, storetest.Email("owner@example.com"))
	member := storetest.User(t, s, storetest.Email("member@example.com"))
	gid, gp := mustGroup(t, s, "Team", map[int64]string{owner.ID: store.GroupRoleOwner, member.ID: store.GroupRoleMember})
	personal := storetest.Agent(t, s, owner.PrincipalID)
	shared := storetest.Agent(t, s, gp)
	sibling := storetest.Agent(t, s, gp, storetest.AgentNamed("Sibling"))
	const class = "core.ReadURLTool"

	cfg, err := s.AgentToolConfig(ctx, personal.ID)
	wantErr(t, err, nil)
	if cfg.OwnerUserID != owner.ID || cfg.OwnerGroupID != 0 || cfg.PrincipalID != owner.PrincipalID || len(cfg.Enabled) != 0 ||
		cfg.Global == nil || cfg.User == nil || cfg.Group == nil || cfg.Agent == nil {
		t.Fatalf("fresh personal config = %+v", cfg)
	}
	_, err = s.AgentToolConfig(ctx, 999999)
	wantErr(t, err, svcerr.ErrNotFound)

	allow := func(*store.Agent) error { return nil }
	refuse := func(*store.Agent) error { return svcerr.New(svcerr.ErrForbidden, "no") }

	// Enablement: idempotent, refusals write nothing.
	wantErr(t, s.SetAgentToolEnabled(ctx, personal.ID, class, true, allow), nil)
	wantErr(t, s.SetAgentToolEnabled(ctx, personal.ID, class, true, allow), nil)
	wantErr(t, s.SetAgentToolEnabled(ctx, personal.ID, "core.TimeTool", false, allow), nil)
	wantErr(t, s.SetAgentToolEnabled(ctx, personal.ID, "core.TodoTool", true, refuse), svcerr.ErrForbidden)
	wantErr(t, s.SetAgentToolEnabled(ctx, 999999, class, true, allow), svcerr.ErrNotFound)
	wantErr(t, s.SetAgentToolEnabled(ctx, personal.ID, "", true, allow), svcerr.ErrInvalid)

	// Operation overrides: set, change, remove with both nil.
	wantErr(t, s.SetAgentToolOperation(ctx, personal.ID, class, "fetch", store.ToolOperationOverride{AutoApprove: ptr(true)}, allow), nil)
	wantErr(t, s.SetAgentToolOperation(ctx, personal.ID, class, "fetch", store.ToolOperationOverride{Enabled: ptr(false), AutoApprove: ptr(true)}, allow), nil)
	wantErr(t, s.SetAgentToolOperation(ctx, personal.ID, class, "other", store.ToolOperationOverride{Enabled: ptr(true)}, allow), nil)
	wantErr(t, s.SetAgentToolOperation(ctx, personal.ID, class, "other", store.ToolOperationOverride{}, allow), nil)
	wantErr(t, s.SetAgentToolOperation(ctx, personal.ID, class, "x", store.ToolOperationOverride{Enabled: ptr(true)}, refuse), svcerr.ErrForbidden)
	wantErr(t, s.SetAgentToolOperation(ctx, personal.ID, class, strings.Repeat("o", 65), store.ToolOperationOverride{}, allow), svcerr.ErrInvalid)

	// Settings at every layer the personal agent reads, and one it does not (the group's).
	_, err = s.EditToolSettings(ctx, store.GlobalToolScope(), class, setTo(map[string]any{"max_bytes": 10}))
	wantErr(t, err, nil)
	_, err = s.EditToolSettings(ctx, store.UserToolScope(owner.ID), class, setTo(map[string]any{"user_agent": "owner"}))
	wantErr(t, err, nil)
	_, err = s.EditToolSettings(ctx, store.UserToolScope(member.ID), class, setTo(map[string]any{"user_agent": "member"}))
	wantErr(t, err, nil)
	_, err = s.ReplaceAgentToolSettings(ctx, personal.ID, class, allow, setTo(map[string]any{"allowed_domains": []any{"a.example"}}))
	wantErr(t, err, nil)
	_, err = s.ReplaceAgentToolSettings(ctx, personal.ID, class, refuse, setTo(map[string]any{"allowed_domains": []any{"evil"}}))
	wantErr(t, err, svcerr.ErrForbidden)
	_, err = s.UpsertGroupTool(ctx, gid, class, nil, nil, setTo(map[string]any{"user_agent": "group"}))
	wantErr(t, err, nil)

	cfg, err = s.AgentToolConfig(ctx, personal.ID)
	wantErr(t, err, nil)
	if !reflect.DeepEqual(cfg.Enabled, map[string]bool{class: true, "core.TimeTool": false}) || len(cfg.GroupEnabled) != 0 {
		t.Fatalf("enabled = %v, group %v", cfg.Enabled, cfg.GroupEnabled)
	}
	wantOps := map[string]map[string]store.ToolOperationOverride{class: {"fetch": {Enabled: ptr(false), AutoApprove: ptr(true)}}}
	if !reflect.DeepEqual(cfg.Operations, wantOps) {
		t.Fatalf("operations = %#v", cfg.Operations)
	}
	wantValues(t, cfg.Global[class], map[string]any{"max_bytes": 10})
	wantValues(t, cfg.User[class], map[string]any{"user_agent": "owner"})
	wantValues(t, cfg.Agent[class], map[string]any{"allowed_domains": []any{"a.example"}})
	if len(cfg.Group) != 0 {
		t.Fatalf("a personal agent reads a group layer: %v", cfg.Group)
	}

	// A group's agent reads the group layer and entries, and no user layer.
	wantErr(t, s.SetAgentToolEnabled(ctx, shared.ID, "core.TimeTool", false, allow), nil)
	_, err = s.UpsertGroupTool(ctx, gid, "core.TimeTool", ptr(true), nil, nil)
	wantErr(t, err, nil)
	cfg, err = s.AgentToolConfig(ctx, shared.ID)
	wantErr(t, err, nil)
	if cfg.OwnerUserID != 0 || cfg.OwnerGroupID != gid || len(cfg.User) != 0 {
		t.Fatalf("group agent config = %+v", cfg)
	}
	if !reflect.DeepEqual(cfg.GroupEnabled, map[string]bool{class: true, "core.TimeTool": true}) ||
		!reflect.DeepEqual(cfg.Enabled, map[string]bool{"core.TimeTool": false}) {
		t.Fatalf("group agent enabled = %v, group %v", cfg.Enabled, cfg.GroupEnabled)
	}
	wantValues(t, cfg.Group[class], map[string]any{"user_agent": "group"})

	// Same-principal lookup.
	ids, err := s.AgentsOfPrincipal(ctx, gp, []int64{sibling.ID, personal.ID, shared.ID, 999999})
	wantErr(t, err, nil)
	if !reflect.DeepEqual(ids, []int64{shared.ID, sibling.ID}) {
		t.Fatalf("AgentsOfPrincipal = %v", ids)
	}
	if ids, _ := s.AgentsOfPrincipal(ctx, gp, nil); ids == nil || len(ids) != 0 {
		t.Fatalf("AgentsOfPrincipal(nil) = %#v", ids)
	}

	// Deleting the agent layer keeps enablement and overrides; deleting the agent drops all.
	wantErr(t, s.DeleteAgentToolSettings(ctx, personal.ID, class, refuse), svcerr.ErrForbidden)
	wantErr(t, s.DeleteAgentToolSettings(ctx, personal.ID, class, allow), nil)
	wantErr(t, s.DeleteAgentToolSettings(ctx, personal.ID, class, allow), nil)
	cfg, _ = s.AgentToolConfig(ctx, personal.ID)
	if len(cfg.Agent) != 0 || !cfg.Enabled[class] || len(cfg.Operations[class]) != 1 {
		t.Fatalf("after deleting the agent layer: %+v", cfg)
	}
	_, err = s.ReplaceAgentToolSettings(ctx, personal.ID, class, allow, setTo(map[string]any{"max_bytes": 5}))
	wantErr(t, err, nil)
	wantErr(t, s.DeleteAgent(ctx, personal.ID, nil), nil)
	for _, table := range []string{"agent_tools", "agent_tool_operations"} {
		if n := countRows(t, s, table, "agent_id = ?", personal.ID); n != 0 {
			t.Fatalf("%d %s rows of a deleted agent", n, table)
		}
	}
	if n := countRows(t, s, "tool_settings", "agent_id = ?", personal.ID); n != 0 {
		t.Fatalf("%d settings rows of a deleted agent", n)
	}
}

func TestGroupTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	owner := storetest.User(t, s)
	gid, _ := mustGroup(t, s, "Team", map[int64]string{owner.ID: store.GroupRoleOwner})
	other, _ := mustGroup(t, s, "Other", nil)
	var seenRoles map[int64]string
	allow := func(roles map[int64]string) error { seenRoles = roles; return nil }
	refuse := func(map[int64]string) error { return svcerr.New(svcerr.ErrForbidden, "no") }

	list, err := s.GroupTools(ctx, gid)
	wantErr(t, err, nil)
	if list == nil || len(list) != 0 {
		t.Fatalf("fresh list = %#v", list)
	}

	// A new entry is enabled unless told otherwise; the roles reach the check.
	gt, err := s.UpsertGroupTool(ctx, gid, "weather.ForecastTool", nil, allow, nil)
	wantErr(t, err, nil)
	if !gt.Enabled || gt.ToolClass != "weather.ForecastTool" || gt.GroupID != gid || gt.Settings == nil || len(gt.Settings) != 0 ||
		!gt.UpdatedAt.Equal(clock.Now().Truncate(time.Microsecond)) {
		t.Fatalf("new entry = %+v", gt)
	}
	if seenRoles[owner.ID] != store.GroupRoleOwner {
		t.Fatalf("check saw roles %v", seenRoles)
	}
	clock.Advance(time.Minute)
	gt, err = s.UpsertGroupTool(ctx, gid, "weather.ForecastTool", ptr(false), allow, setTo(map[string]any{"units": "metric", "api_key": "v1:x"}))
	wantErr(t, err, nil)
	if gt.Enabled || !gt.UpdatedAt.Equal(clock.Now().Truncate(time.Microsecond)) || !gt.CreatedAt.Equal(t0.Truncate(time.Microsecond)) {
		t.Fatalf("updated entry = %+v", gt)
	}
	wantValues(t, &store.ToolSettings{Values: gt.Settings}, map[string]any{"units": "metric", "api_key": "v1:x"})
	// enabled nil keeps the value; no edit keeps the settings.
	gt, err = s.UpsertGroupTool(ctx, gid, "weather.ForecastTool", nil, allow, nil)
	wantErr(t, err, nil)
	if gt.Enabled || len(gt.Settings) != 2 {
		t.Fatalf("kept entry = %+v", gt)
	}
	_, err = s.UpsertGroupTool(ctx, gid, "core.AgentTool", ptr(false), allow, nil)
	wantErr(t, err, nil)

	// Refusals write nothing.
	_, err = s.UpsertGroupTool(ctx, gid, "core.TimeTool", nil, refuse, nil)
	wantErr(t, err, svcerr.ErrForbidden)
	_, err = s.UpsertGroupTool(ctx, gid, "core.TimeTool", nil, allow, func(map[string]any) (map[string]any, error) {
		return nil, svcerr.New(svcerr.ErrInvalid, "bad")
	})
	wantErr(t, err, svcerr.ErrInvalid)
	_, err = s.UpsertGroupTool(ctx, 999999, "core.TimeTool", nil, allow, nil)
	wantErr(t, err, svcerr.ErrNotFound)
	_, err = s.UpsertGroupTool(ctx, gid, "no class", nil, allow, nil)
	wantErr(t, err, svcerr.ErrInvalid)

	list, err = s.GroupTools(ctx, gid)
	wantErr(t, err, nil)
	if len(list) != 2 || list[0].ToolClass != "core.AgentTool" || list[1].ToolClass != "weather.ForecastTool" || len(list[1].Settings) != 2 || len(list[0].Settings) != 0 {
		t.Fatalf("list = %+v", list)
	}
	if l, _ := s.GroupTools(ctx, other); len(l) != 0 {
		t.Fatalf("other group lists %+v", l)
	}

	// Removal: refused, missing, done; the settings go with the entry.
	wantErr(t, s.RemoveGroupTool(ctx, gid, "weather.ForecastTool", refuse), svcerr.ErrForbidden)
	wantErr(t, s.RemoveGroupTool(ctx, gid, "core.TimeTool", allow), svcerr.ErrNotFound)
	wantErr(t, s.RemoveGroupTool(ctx, other, "weather.ForecastTool", allow), svcerr.ErrNotFound)
	wantErr(t, s.RemoveGroupTool(ctx, 999999, "weather.ForecastTool", allow), svcerr.ErrNotFound)
	wantErr(t, s.RemoveGroupTool(ctx, gid, "", allow), svcerr.ErrNotFound)
	wantErr(t, s.RemoveGroupTool(ctx, gid, "weather.ForecastTool", allow), nil)
	wantErr(t, s.RemoveGroupTool(ctx, gid, "weather.ForecastTool", allow), svcerr.ErrNotFound)
	if n := countRows(t, s, "tool_settings", "group_id = ?", gid); n != 0 {
		t.Fatalf("%d settings rows left after removal", n)
	}
	list, _ = s.GroupTools(ctx, gid)
	if len(list) != 1 {
		t.Fatalf("list after removal = %+v", list)
	}
}
