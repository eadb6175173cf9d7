package store_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func TestConfigureAgentTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	u := storetest.User(t, st)
	a := storetest.Agent(t, st, u.PrincipalID)
	on, off := true, false
	set := func(v map[string]any) store.SettingsEdit {
		return func(stored map[string]any) (map[string]any, error) {
			out := map[string]any{}
			for k, x := range stored {
				out[k] = x
			}
			for k, x := range v {
				out[k] = x
			}
			return out, nil
		}
	}
	err := st.ConfigureAgentTools(ctx, a.ID, nil, []store.AgentToolChange{
		{ToolClass: "x.One", Enabled: &on, Settings: set(map[string]any{"k": "v"}),
			Operations: []store.AgentOperationChange{{Name: "op", Enabled: &on, AutoApprove: &off}}},
		{ToolClass: "x.Two", Enabled: &off},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A patch keeps the fields it does not set.
	if err := st.ConfigureAgentTools(ctx, a.ID, nil, []store.AgentToolChange{
		{ToolClass: "x.One", Enabled: &off, Operations: []store.AgentOperationChange{{Name: "op", Enabled: &off}}},
	}); err != nil {
		t.Fatal(err)
	}
	before, err := st.AgentToolConfig(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if before.Enabled["x.One"] || before.Enabled["x.Two"] || len(before.Enabled) != 2 || before.Agent["x.One"].Values["k"] != "v" {
		t.Fatalf("config = %+v", before)
	}
	if o := before.Operations["x.One"]["op"]; o.Enabled == nil || *o.Enabled || o.AutoApprove == nil || *o.AutoApprove {
		t.Fatalf("op = %+v", o)
	}

	// A failure in a later change, or a refusing check, writes nothing at all.
	boom := errors.New("boom")
	failing := func(map[string]any) (map[string]any, error) { return nil, boom }
	batch := []store.AgentToolChange{
		{ToolClass: "x.One", Enabled: &on, Settings: set(map[string]any{"k": "w"}), Operations: []store.AgentOperationChange{{Name: "op", Enabled: &on}}},
		{ToolClass: "x.Three", Enabled: &on},
		{ToolClass: "x.Two", Settings: failing},
	}
	if err := st.ConfigureAgentTools(ctx, a.ID, nil, batch); !errors.Is(err, boom) {
		t.Fatalf("failing edit: %v", err)
	}
	refuse := func(*store.Agent) error { return svcerr.New(svcerr.ErrForbidden, "no") }
	if err := st.ConfigureAgentTools(ctx, a.ID, refuse, batch[:2]); !errors.Is(err, svcerr.ErrForbidden) {
		t.Fatalf("refusing check: %v", err)
	}
	if err := st.ConfigureAgentTools(ctx, a.ID, nil, []store.AgentToolChange{{ToolClass: ""}}); !errors.Is(err, svcerr.ErrInvalid) {
		t.Fatalf("empty class: %v", err)
	}
	if err := st.ConfigureAgentTools(ctx, 999999, nil, batch[:1]); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("unknown agent: %v", err)
	}
	after, err := st.AgentToolConfig(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("a failed batch wrote:\nbefore %+v\nafter  %+v", before, after)
	}
}
