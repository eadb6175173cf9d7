package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/domain/agent"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

func ptr[T any](v T) *T { return &v }

// TestCheckFields holds the field rules the store applied before they moved here.
func TestCheckFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     store.AgentFields
		create bool
		ok     bool
	}{
		{name: "minimal", in: store.AgentFields{Name: ptr("x")}, create: true, ok: true},
		{name: "update without name", in: store.AgentFields{Notes: ptr("n")}, ok: true},
		{name: "empty update", ok: true},
		{name: "max_steps 1", in: store.AgentFields{Name: ptr("x"), MaxSteps: ptr(1)}, create: true, ok: true},
		{name: "longest texts, multibyte", in: store.AgentFields{
			Name: ptr(strings.Repeat("é", limits.AgentNameLen)), Description: ptr(strings.Repeat("é", limits.AgentDescriptionLen)),
			Notes: ptr(strings.Repeat("€", limits.AgentNotesLen)),
		}, create: true, ok: true},
		{name: "missing name", in: store.AgentFields{}, create: true},
		{name: "blank name", in: store.AgentFields{Name: ptr(" \t")}, create: true},
		{name: "blank name on update", in: store.AgentFields{Name: ptr("  ")}},
		{name: "name too long", in: store.AgentFields{Name: ptr(strings.Repeat("x", limits.AgentNameLen+1))}, create: true},
		{name: "name with NUL", in: store.AgentFields{Name: ptr("a\x00b")}, create: true},
		{name: "invalid UTF-8", in: store.AgentFields{Description: ptr("\xff")}},
		{name: "description too long", in: store.AgentFields{Name: ptr("x"), Description: ptr(strings.Repeat("x", limits.AgentDescriptionLen+1))}, create: true},
		{name: "notes too long", in: store.AgentFields{Notes: ptr(strings.Repeat("x", limits.AgentNotesLen+1))}},
		{name: "max_steps 0", in: store.AgentFields{Name: ptr("x"), MaxSteps: ptr(0)}, create: true},
		{name: "max_steps 101", in: store.AgentFields{MaxSteps: ptr(101)}},
		{name: "negative retries", in: store.AgentFields{Name: ptr("x"), MaxRetries: ptr(-1)}, create: true},
		{name: "negative retry minutes", in: store.AgentFields{RetryAfterMinutes: ptr(-1)}},
		{name: "retry minutes beyond INT", in: store.AgentFields{Name: ptr("x"), RetryAfterMinutes: ptr(1 << 40)}, create: true},
		{name: "metadata too large", in: store.AgentFields{Name: ptr("x"), Metadata: &map[string]any{"k": strings.Repeat("x", store.MaxAgentMetadataLen)}}, create: true},
		{name: "metadata not encodable", in: store.AgentFields{Metadata: &map[string]any{"k": func() {}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := agent.CheckFields(tc.in, tc.create)
			if tc.ok {
				if err != nil {
					t.Fatalf("CheckFields = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, svcerr.ErrInvalid) {
				t.Fatalf("CheckFields = %v, want ErrInvalid", err)
			}
		})
	}
}

// refusingStore fails the test when a write reaches it: a refused request must write nothing.
type refusingStore struct {
	agent.Store
	t *testing.T
}

func (r refusingStore) Memberships(context.Context, int64) (map[int64]string, error) {
	return map[int64]string{1: store.RoleSelf}, nil
}

func (r refusingStore) CreateAgent(context.Context, int64, store.AgentFields) (*store.Agent, error) {
	r.t.Fatal("CreateAgent called with invalid fields")
	return nil, nil
}

func (r refusingStore) UpdateAgent(context.Context, int64, int64, store.AgentFields, store.AgentCheck) (*store.Agent, error) {
	r.t.Fatal("UpdateAgent called with invalid fields")
	return nil, nil
}

func TestServiceRefusesBeforeTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := agent.New(refusingStore{t: t})
	u := &store.User{ID: 1, PrincipalID: 1}
	if _, err := svc.Create(ctx, u, nil, store.AgentFields{Name: ptr(" ")}); !errors.Is(err, svcerr.ErrInvalid) {
		t.Errorf("Create = %v, want ErrInvalid", err)
	}
	if _, err := svc.Update(ctx, u, "1", store.AgentFields{MaxSteps: ptr(0)}); !errors.Is(err, svcerr.ErrInvalid) {
		t.Errorf("Update = %v, want ErrInvalid", err)
	}
}
