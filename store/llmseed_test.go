package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func seedOf(model string) store.LLMSeed {
	base := "http://127.0.0.1:1/v1"
	return store.LLMSeed{GroupName: "Instance defaults", Name: "Default model", Driver: store.LLMDriverOpenAI,
		Model: model, BaseURL: &base, APIKeySealed: "sealed-" + model}
}

func mustSeed(t *testing.T, s *store.Store, seed store.LLMSeed) *store.LLMSeedResult {
	t.Helper()
	r, err := s.SeedGlobalLLMConfig(context.Background(), seed)
	if err != nil {
		t.Fatalf("SeedGlobalLLMConfig: %v", err)
	}
	return r
}

func TestSeedGlobalLLMConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name string
		// prepare runs after a first seed of model "m1" (first is its result) and returns the
		// seed of the second call.
		prepare func(t *testing.T, s *store.Store, first *store.LLMConfig) store.LLMSeed
		check   func(t *testing.T, s *store.Store, first *store.LLMConfig, r *store.LLMSeedResult)
	}{
		{
			name:    "same seed changes nothing",
			prepare: func(*testing.T, *store.Store, *store.LLMConfig) store.LLMSeed { return seedOf("m1") },
			check: func(t *testing.T, s *store.Store, first *store.LLMConfig, r *store.LLMSeedResult) {
				// The sealed forms differ ("sealed-m1" twice here): without SameKey they are compared.
				if r.Created || r.Updated || r.Config.ID != first.ID || !r.Config.UpdatedAt.Equal(first.UpdatedAt) {
					t.Errorf("second seed: %+v", r)
				}
			},
		},
		{
			name: "new model updates in place",
			prepare: func(*testing.T, *store.Store, *store.LLMConfig) store.LLMSeed {
				seed := seedOf("m2")
				seed.BaseURL = nil
				return seed
			},
			check: func(t *testing.T, s *store.Store, first *store.LLMConfig, r *store.LLMSeedResult) {
				if r.Created || !r.Updated || r.Config.ID != first.ID || r.Config.Model != "m2" || r.Config.BaseURL != nil ||
					r.Config.APIKeySealed != "sealed-m2" || !r.Config.IsDefault || !r.Config.IsGlobal {
					t.Errorf("update: %+v", r.Config)
				}
			},
		},
		{
			name: "SameKey keeps the stored sealed key",
			prepare: func(*testing.T, *store.Store, *store.LLMConfig) store.LLMSeed {
				seed := seedOf("m1")
				seed.APIKeySealed = "sealed-again"
				seed.SameKey = func(sealed string) bool { return sealed == "sealed-m1" }
				return seed
			},
			check: func(t *testing.T, s *store.Store, first *store.LLMConfig, r *store.LLMSeedResult) {
				if r.Updated || r.Config.APIKeySealed != "sealed-m1" {
					t.Errorf("key rewritten: %+v", r)
				}
			},
		},
		{
			name: "no key clears the stored one",
			prepare: func(*testing.T, *store.Store, *store.LLMConfig) store.LLMSeed {
				seed := seedOf("m1")
				seed.APIKeySealed = ""
				return seed
			},
			check: func(t *testing.T, s *store.Store, first *store.LLMConfig, r *store.LLMSeedResult) {
				if !r.Updated || r.Config.APIKeySet() {
					t.Errorf("key kept: %+v", r)
				}
			},
		},
		{
			name: "renamed group and configuration are still found",
			prepare: func(t *testing.T, s *store.Store, first *store.LLMConfig) store.LLMSeed {
				gname, cname := "Renamed group", "Renamed config"
				if _, err := s.UpdateGroup(ctx, first.GroupID, store.GroupUpdate{Name: &gname}); err != nil {
					t.Fatal(err)
				}
				if _, err := s.UpdateLLMConfig(ctx, first.GroupID, first.ID, store.LLMConfigUpdate{Name: &cname}, nil); err != nil {
					t.Fatal(err)
				}
				return seedOf("m3")
			},
			check: func(t *testing.T, s *store.Store, first *store.LLMConfig, r *store.LLMSeedResult) {
				if r.Created || r.Config.ID != first.ID || r.Config.Name != "Renamed config" || r.Config.Model != "m3" {
					t.Errorf("rename: %+v", r.Config)
				}
			},
		},
		{
			name: "deleted configuration is recreated in its group",
			prepare: func(t *testing.T, s *store.Store, first *store.LLMConfig) store.LLMSeed {
				if err := s.DeleteLLMConfig(ctx, first.GroupID, first.ID, nil); err != nil {
					t.Fatal(err)
				}
				return seedOf("m1")
			},
			check: func(t *testing.T, s *store.Store, first *store.LLMConfig, r *store.LLMSeedResult) {
				if !r.Created || r.Config.ID == first.ID || r.Config.GroupID != first.GroupID || !r.Config.IsDefault {
					t.Errorf("recreate: %+v", r.Config)
				}
			},
		},
		{
			name: "deleted group is recreated",
			prepare: func(t *testing.T, s *store.Store, first *store.LLMConfig) store.LLMSeed {
				if _, err := s.DeleteGroup(ctx, first.GroupID); err != nil {
					t.Fatal(err)
				}
				return seedOf("m1")
			},
			check: func(t *testing.T, s *store.Store, first *store.LLMConfig, r *store.LLMSeedResult) {
				if !r.Created || r.Config.GroupID == first.GroupID {
					t.Errorf("recreate group: %+v", r.Config)
				}
				if g, err := s.GroupByID(ctx, r.Config.GroupID); err != nil || g.Name != "Instance defaults" {
					t.Errorf("new group %+v, %v", g, err)
				}
			},
		},
		{
			name: "a default chosen meanwhile is kept",
			prepare: func(t *testing.T, s *store.Store, first *store.LLMConfig) store.LLMSeed {
				admin := storetest.User(t, s)
				g := storetest.Group(t, s, admin)
				other := newLLMConfig(t, s, g.ID, store.LLMConfig{Name: "Chosen", IsGlobal: true, IsDefault: true})
				if c := llmConfig(t, s, first.GroupID, first.ID); c.IsDefault {
					t.Fatal("the seed kept the default flag after the administrator's choice")
				}
				_ = other
				return seedOf("m4")
			},
			check: func(t *testing.T, s *store.Store, first *store.LLMConfig, r *store.LLMSeedResult) {
				if r.Config.IsDefault || !r.Updated || r.Config.Model != "m4" {
					t.Errorf("stole the default: %+v", r.Config)
				}
				c, err := s.ResolveLLMConfig(ctx, nil)
				if err != nil || c.Name != "Chosen" {
					t.Errorf("resolved %+v, %v", c, err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := storetest.New(t)
			r := mustSeed(t, s, seedOf("m1"))
			if !r.Created || r.Updated || !r.Config.IsGlobal || !r.Config.IsDefault || r.Config.Name != "Default model" ||
				r.Config.Model != "m1" || r.Config.APIKeySealed != "sealed-m1" {
				t.Fatalf("first seed: %+v / %+v", r, r.Config)
			}
			if c, err := s.ResolveLLMConfig(ctx, nil); err != nil || c.ID != r.Config.ID {
				t.Fatalf("global default %+v, %v", c, err)
			}
			settings, err := s.Settings(ctx)
			if err != nil || len(settings) != 0 {
				t.Fatalf("settings show the seed's bookkeeping: %v, %v", settings, err)
			}
			second := mustSeed(t, s, tt.prepare(t, s, r.Config))
			tt.check(t, s, r.Config, second)
			if n := tableRows(t, s, "llm_configs", "is_global = ?", true); n > 2 {
				t.Errorf("%d global configurations", n)
			}
		})
	}
}

func TestSeedGlobalLLMConfigTakesAFreeName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	first := mustSeed(t, s, seedOf("m1")).Config
	if err := s.DeleteLLMConfig(ctx, first.GroupID, first.ID, nil); err != nil {
		t.Fatal(err)
	}
	newLLMConfig(t, s, first.GroupID, store.LLMConfig{Name: "Default model"})
	r := mustSeed(t, s, seedOf("m1"))
	if !r.Created || r.Config.Name != "Default model (2)" {
		t.Errorf("name %q (created %v)", r.Config.Name, r.Created)
	}
}

// Two processes starting together seed one configuration.
func TestSeedGlobalLLMConfigConcurrent(t *testing.T) {
	t.Parallel()
	stores := storetest.NewShared(t, 2)
	var wg sync.WaitGroup
	errs := make([]error, len(stores))
	for i, s := range stores {
		wg.Go(func() {
			for range 5 {
				if _, err := s.SeedGlobalLLMConfig(context.Background(), seedOf("m1")); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
	}
	if n := tableRows(t, stores[0], "llm_configs", "1 = 1"); n != 1 {
		t.Errorf("%d configurations, want 1", n)
	}
	if n := tableRows(t, stores[0], "principal_groups", "1 = 1"); n != 1 {
		t.Errorf("%d groups, want 1", n)
	}
}
