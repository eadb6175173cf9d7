package schedule_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/domain/schedule"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

func ptr[T any](v T) *T { return &v }

// TestCheckTemplateFields holds the field rules of prompt templates, which the store applied
// before they moved here.
func TestCheckTemplateFields(t *testing.T) {
	t.Parallel()
	ok := store.PromptTemplateFields{Name: "Digest", Template: "About {{topic}}", Variables: []store.PromptVariable{{Key: "topic"}}}
	with := func(change func(f *store.PromptTemplateFields)) store.PromptTemplateFields {
		f := ok
		f.Variables = append([]store.PromptVariable(nil), ok.Variables...)
		change(&f)
		return f
	}
	if err := schedule.CheckTemplateFields(ok); err != nil {
		t.Fatalf("valid fields: %v", err)
	}
	if err := schedule.CheckTemplateFields(with(func(f *store.PromptTemplateFields) { f.Name = strings.Repeat("é", limits.PromptTemplateNameLen) })); err != nil {
		t.Fatalf("longest name: %v", err)
	}
	for name, f := range map[string]store.PromptTemplateFields{
		"blank name": with(func(f *store.PromptTemplateFields) { f.Name = " " }),
		"long name":  with(func(f *store.PromptTemplateFields) { f.Name = strings.Repeat("é", 101) }),
		"long description": with(func(f *store.PromptTemplateFields) {
			f.Description = strings.Repeat("d", limits.PromptTemplateDescriptionLen+1)
		}),
		"no template": with(func(f *store.PromptTemplateFields) { f.Template = "" }),
		"long template": with(func(f *store.PromptTemplateFields) {
			f.Template = strings.Repeat("t", limits.PromptTemplateTextLen+1)
		}),
		"duplicate key": with(func(f *store.PromptTemplateFields) { f.Variables = []store.PromptVariable{{Key: "a"}, {Key: "a"}} }),
		"empty key":     with(func(f *store.PromptTemplateFields) { f.Variables = []store.PromptVariable{{Key: ""}} }),
		"long default value": with(func(f *store.PromptTemplateFields) {
			f.Variables[0].DefaultValue = ptr(strings.Repeat("v", limits.PromptVariableValueLen+1))
		}),
		"too many variables": with(func(f *store.PromptTemplateFields) {
			f.Variables = nil
			for i := 0; i <= limits.PromptVariables; i++ {
				f.Variables = append(f.Variables, store.PromptVariable{Key: strings.Repeat("k", i+1)})
			}
		}),
		"max_steps 0":   with(func(f *store.PromptTemplateFields) { f.MaxSteps = ptr(0) }),
		"max_steps 101": with(func(f *store.PromptTemplateFields) { f.MaxSteps = ptr(101) }),
	} {
		if err := schedule.CheckTemplateFields(f); !errors.Is(err, svcerr.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// TestCheckRunFields holds the field rules of scheduled runs, which the store applied before
// they moved here.
func TestCheckRunFields(t *testing.T) {
	t.Parallel()
	ok := store.ScheduledRunFields{Name: "r", Prompt: ptr("Go"), CronExpression: ptr("* * * * *"), Timezone: "UTC"}
	if err := schedule.CheckRunFields(ok); err != nil {
		t.Fatalf("valid fields: %v", err)
	}
	with := func(change func(f *store.ScheduledRunFields)) store.ScheduledRunFields {
		f := ok
		change(&f)
		return f
	}
	for name, f := range map[string]store.ScheduledRunFields{
		"blank name":      with(func(f *store.ScheduledRunFields) { f.Name = "\t" }),
		"long name":       with(func(f *store.ScheduledRunFields) { f.Name = strings.Repeat("n", limits.ScheduleNameLen+1) }),
		"prompt with NUL": with(func(f *store.ScheduledRunFields) { f.Prompt = ptr("a\x00") }),
		"long cron": with(func(f *store.ScheduledRunFields) {
			f.CronExpression = ptr(strings.Repeat("*", limits.CronLen+1))
		}),
		"long timezone": with(func(f *store.ScheduledRunFields) { f.Timezone = strings.Repeat("z", limits.TimezoneLen+1) }),
		"long variable key": with(func(f *store.ScheduledRunFields) {
			f.Variables = map[string]string{strings.Repeat("k", limits.PromptVariableKeyLen+1): "v"}
		}),
		"long value": with(func(f *store.ScheduledRunFields) {
			f.Variables = map[string]string{"k": strings.Repeat("v", limits.PromptVariableValueLen+1)}
		}),
		"override 0":   with(func(f *store.ScheduledRunFields) { f.MaxStepsOverride = ptr(0) }),
		"override 101": with(func(f *store.ScheduledRunFields) { f.MaxStepsOverride = ptr(101) }),
	} {
		if err := schedule.CheckRunFields(f); !errors.Is(err, svcerr.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// refusingStore serves one agent of the caller's and fails the test when a write reaches it.
type refusingStore struct {
	schedule.Store
	t *testing.T
}

func (r refusingStore) Memberships(context.Context, int64) (map[int64]string, error) {
	return map[int64]string{1: store.RoleSelf}, nil
}

func (r refusingStore) Agent(_ context.Context, id, _ int64) (*store.Agent, error) {
	return &store.Agent{ID: id, PrincipalID: 1}, nil
}

func (r refusingStore) ScheduledRun(_ context.Context, agentID, id int64) (*store.ScheduledRun, error) {
	return &store.ScheduledRun{ID: id, AgentID: agentID}, nil
}

func (r refusingStore) CreatePromptTemplate(context.Context, int64, store.PromptTemplateFields, store.AgentCheck) (*store.PromptTemplate, error) {
	r.t.Fatal("CreatePromptTemplate called with invalid fields")
	return nil, nil
}

func (r refusingStore) UpdateScheduledRun(context.Context, int64, int64, store.ScheduledRunFields, store.RunCheck) (*store.ScheduledRun, error) {
	r.t.Fatal("UpdateScheduledRun called with invalid fields")
	return nil, nil
}

func TestServiceRefusesBeforeTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := schedule.New(refusingStore{t: t})
	u := &store.User{ID: 1, PrincipalID: 1}
	_, err := svc.CreateTemplate(ctx, u, "1", store.PromptTemplateFields{Name: "n", Template: "t", Variables: []store.PromptVariable{{Key: "a"}, {Key: "a"}}})
	if !errors.Is(err, svcerr.ErrInvalid) {
		t.Errorf("CreateTemplate = %v, want ErrInvalid", err)
	}
	_, err = svc.UpdateRun(ctx, u, "1", "2", store.ScheduledRunFields{Name: strings.Repeat("n", limits.ScheduleNameLen+1), Prompt: ptr("Go"), CronExpression: ptr("* * * * *")})
	if !errors.Is(err, svcerr.ErrInvalid) {
		t.Errorf("UpdateRun = %v, want ErrInvalid", err)
	}
}
