package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

var fixedNow = time.Date(2025, 3, 2, 16, 5, 12, 0, time.UTC)

func exec(t *testing.T, deps core.Deps, class string, call tools.Call) (tools.Result, error) {
	t.Helper()
	if deps.Clock == nil {
		deps.Clock = func() time.Time { return fixedNow }
	}
	e, ok := core.Executors(deps)[class]
	if !ok {
		t.Fatalf("no executor for %s", class)
	}
	if call.Args == nil {
		call.Args = map[string]any{}
	}
	return e.Execute(context.Background(), call)
}

// toolErr fails unless err is a *tools.ToolError containing want.
func wantToolErr(t *testing.T, err error, want string) {
	t.Helper()
	var te *tools.ToolError
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T), want a ToolError containing %q", err, err, want)
	}
	if !strings.Contains(te.Msg, want) {
		t.Errorf("ToolError %q, want it to contain %q", te.Msg, want)
	}
}

// TestExecutorsCoverDeclarations checks that every executor belongs to a core tool and handles
// every operation that tool declares (no "unknown operation"), and that every core tool has one.
func TestExecutorsCoverDeclarations(t *testing.T) {
	t.Parallel()
	execs := core.Executors(core.Deps{})
	specs := map[string]tools.Spec{}
	for _, tool := range core.All() {
		specs[tool.Spec().Class] = tool.Spec()
	}
	for class, e := range execs {
		spec, ok := specs[class]
		if !ok {
			t.Errorf("executor for unknown class %s", class)
			continue
		}
		for _, op := range spec.Operations {
			_, err := e.Execute(context.Background(), tools.Call{Operation: op.Name, Args: map[string]any{}, OwnerUserID: 1, TaskID: 1})
			var te *tools.ToolError
			if errors.As(err, &te) && strings.Contains(te.Msg, "unknown operation") {
				t.Errorf("%s does not handle %s", class, op.Name)
			}
		}
		if _, err := e.Execute(context.Background(), tools.Call{Operation: "nope", Args: map[string]any{}, OwnerUserID: 1, TaskID: 1}); err == nil {
			t.Errorf("%s accepted an unknown operation", class)
		}
	}
	for class := range specs {
		if _, ok := execs[class]; !ok {
			t.Errorf("%s has no executor", class)
		}
	}
}

type fakeUsers struct {
	tz      string
	missing bool
	fail    bool
}

func (f fakeUsers) UserByID(_ context.Context, id int64) (*store.User, error) {
	if f.fail {
		return nil, errors.New("database down")
	}
	if f.missing {
		return nil, svcerr.New(svcerr.ErrNotFound, "no user %d", id)
	}
	return &store.User{ID: id, Email: "ada@example.com", DisplayName: "ada"}, nil
}

func (f fakeUsers) Profile(_ context.Context, id int64) (*store.Profile, error) {
	if f.missing {
		return nil, svcerr.New(svcerr.ErrNotFound, "no user %d", id)
	}
	return &store.Profile{UserID: id, FirstName: "Ada", LastName: "Lovelace", Locale: "en-GB", Timezone: f.tz, Bio: "Mathematician"}, nil
}

func (f fakeUsers) ListLocations(_ context.Context, id int64) ([]store.Location, error) {
	if f.missing {
		return nil, svcerr.New(svcerr.ErrNotFound, "no user %d", id)
	}
	lat, lon := 51.5074, -0.1278
	return []store.Location{
		{ID: 1, UserID: id, Name: "Home", Address: "12 St James's Square, London", Latitude: &lat, Longitude: &lon, IsDefault: true},
		{ID: 2, UserID: id, Name: "Office"},
	}, nil
}
