package group_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/domain/group"
	"github.com/agentsvc/svc/internal/platform/secret"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func ptr[T any](v T) *T { return &v }

func wantInvalid(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, svcerr.ErrInvalid) {
		t.Errorf("%s: %v, want ErrInvalid", what, err)
	}
}

// TestGroupFieldRules holds the group field rules the store applied before they moved here.
func TestGroupFieldRules(t *testing.T) {
	t.Parallel()
	if n, err := group.NormName("  Research  "); err != nil || n != "Research" {
		t.Fatalf("NormName = %q, %v", n, err)
	}
	if _, err := group.NormName(strings.Repeat("ü", limits.GroupNameLen)); err != nil {
		t.Fatalf("longest name: %v", err)
	}
	for _, n := range []string{"", "   ", strings.Repeat("n", limits.GroupNameLen+1), "\xff", "a\x00"} {
		_, err := group.NormName(n)
		wantInvalid(t, "name "+n, err)
	}
	if err := group.CheckDescription(strings.Repeat("ü", limits.GroupDescriptionLen)); err != nil {
		t.Fatalf("longest description: %v", err)
	}
	wantInvalid(t, "long description", group.CheckDescription(strings.Repeat("d", limits.GroupDescriptionLen+1)))
	for _, r := range []string{store.GroupRoleOwner, store.GroupRoleAdmin, store.GroupRoleMember} {
		if !group.ValidRole(r) {
			t.Errorf("ValidRole(%q) = false", r)
		}
	}
	for _, r := range []string{"", "boss", "Owner"} {
		if group.ValidRole(r) {
			t.Errorf("ValidRole(%q) = true", r)
		}
	}
	// The serialised size limit: {"k":"…"} is 8 bytes plus the value.
	if err := group.CheckPreferences(map[string]any{"k": strings.Repeat("x", store.MaxGroupPreferencesLen-8)}); err != nil {
		t.Fatalf("preferences at the limit: %v", err)
	}
	wantInvalid(t, "oversize preferences", group.CheckPreferences(map[string]any{"k": strings.Repeat("x", store.MaxGroupPreferencesLen-7)}))
	wantInvalid(t, "unencodable preferences", group.CheckPreferences(map[string]any{"bad": func() {}}))
}

// TestCheckLLMConfig holds the field rules of model configurations the store applied before
// they moved here.
func TestCheckLLMConfig(t *testing.T) {
	t.Parallel()
	c := store.LLMConfig{Name: "  Local Llama ", Driver: store.LLMDriverOpenAI, Model: " llama3.1:8b "}
	if err := group.CheckLLMConfig(&c); err != nil || c.Name != "Local Llama" || c.Model != "llama3.1:8b" {
		t.Fatalf("CheckLLMConfig = %v, trimmed to %q, %q", err, c.Name, c.Model)
	}
	edge := store.LLMConfig{
		Name: strings.Repeat("ü", limits.LLMConfigNameLen), Driver: "openai", Model: strings.Repeat("m", limits.LLMModelLen),
		BaseURL:     ptr("https://example.com/" + strings.Repeat("p", limits.URLLen-len("https://example.com/"))),
		Temperature: ptr(2.0), MaxTokensOutput: ptr(limits.MaxLLMTokensOutput), ContextWindow: ptr(limits.MaxLLMContextWindow),
		Timeout: ptr(limits.MaxLLMTimeoutSeconds), APIKeySealed: strings.Repeat("k", store.MaxLLMSealedKeyLen),
	}
	if err := group.CheckLLMConfig(&edge); err != nil {
		t.Fatalf("the limits: %v", err)
	}
	if err := group.CheckLLMConfig(&store.LLMConfig{Name: "s", Driver: "scripted", Model: "m", BaseURL: ptr("testdata/scripts/demo.yaml")}); err != nil {
		t.Fatalf("scripted: %v", err)
	}
	base := func(mod func(c *store.LLMConfig)) store.LLMConfig {
		c := store.LLMConfig{Name: "new", Driver: "openai", Model: "m"}
		mod(&c)
		return c
	}
	for name, c := range map[string]store.LLMConfig{
		"empty name":            base(func(c *store.LLMConfig) { c.Name = "  " }),
		"long name":             base(func(c *store.LLMConfig) { c.Name = strings.Repeat("n", limits.LLMConfigNameLen+1) }),
		"bad driver":            base(func(c *store.LLMConfig) { c.Driver = "gemini" }),
		"empty model":           base(func(c *store.LLMConfig) { c.Model = "" }),
		"long model":            base(func(c *store.LLMConfig) { c.Model = strings.Repeat("m", limits.LLMModelLen+1) }),
		"base_url: empty":       base(func(c *store.LLMConfig) { c.BaseURL = ptr("") }),
		"base_url: relative":    base(func(c *store.LLMConfig) { c.BaseURL = ptr("api.openai.com/v1") }),
		"base_url: ftp":         base(func(c *store.LLMConfig) { c.BaseURL = ptr("ftp://example.com") }),
		"base_url: no host":     base(func(c *store.LLMConfig) { c.BaseURL = ptr("https:///v1") }),
		"base_url: credentials": base(func(c *store.LLMConfig) { c.BaseURL = ptr("https://user:pw@example.com/v1") }),
		"base_url: fragment":    base(func(c *store.LLMConfig) { c.BaseURL = ptr("https://example.com/v1#x") }),
		"base_url: too long": base(func(c *store.LLMConfig) {
			c.BaseURL = ptr("https://example.com/" + strings.Repeat("p", limits.URLLen))
		}),
		"scripted without a path": base(func(c *store.LLMConfig) { c.Driver = "scripted" }),
		"scripted absolute path":  base(func(c *store.LLMConfig) { c.Driver, c.BaseURL = "scripted", ptr("/etc/passwd") }),
		"scripted path outside":   base(func(c *store.LLMConfig) { c.Driver, c.BaseURL = "scripted", ptr("../secret.yaml") }),
		"scripted URL":            base(func(c *store.LLMConfig) { c.Driver, c.BaseURL = "scripted", ptr("https://example.com/s.yaml") }),
		"temperature below 0":     base(func(c *store.LLMConfig) { c.Temperature = ptr(-0.1) }),
		"temperature above 2":     base(func(c *store.LLMConfig) { c.Temperature = ptr(2.01) }),
		"temperature NaN":         base(func(c *store.LLMConfig) { c.Temperature = ptr(math.NaN()) }),
		"max tokens 0":            base(func(c *store.LLMConfig) { c.MaxTokensOutput = ptr(0) }),
		"max tokens too many":     base(func(c *store.LLMConfig) { c.MaxTokensOutput = ptr(limits.MaxLLMTokensOutput + 1) }),
		"context window 0":        base(func(c *store.LLMConfig) { c.ContextWindow = ptr(0) }),
		"timeout too long":        base(func(c *store.LLMConfig) { c.Timeout = ptr(limits.MaxLLMTimeoutSeconds + 1) }),
		"sealed key too long":     base(func(c *store.LLMConfig) { c.APIKeySealed = strings.Repeat("k", store.MaxLLMSealedKeyLen+1) }),
	} {
		wantInvalid(t, name, group.CheckLLMConfig(&c))
	}
}

// TestCheckLLMSeed holds the seed refusals the store made before they moved here.
func TestCheckLLMSeed(t *testing.T) {
	t.Parallel()
	ok := store.LLMSeed{GroupName: " g ", Name: " n ", Driver: store.LLMDriverOpenAI, Model: " m "}
	if err := group.CheckLLMSeed(&ok); err != nil || ok.GroupName != "g" || ok.Name != "n" || ok.Model != "m" {
		t.Fatalf("CheckLLMSeed = %v, %+v", err, ok)
	}
	for name, seed := range map[string]store.LLMSeed{
		"driver":   {GroupName: "g", Name: "n", Driver: "gemini", Model: "m"},
		"model":    {GroupName: "g", Name: "n", Driver: store.LLMDriverOpenAI},
		"group":    {Name: "n", Driver: store.LLMDriverOpenAI, Model: "m"},
		"scripted": {GroupName: "g", Name: "n", Driver: store.LLMDriverScripted, Model: "m"},
	} {
		wantInvalid(t, name, group.CheckLLMSeed(&seed))
	}
}

// TestServiceRules checks that the service applies the moved rules before (or, for the result
// of a configuration update, inside) the store's write, so a refused request writes nothing.
func TestServiceRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	admin := storetest.User(t, s, storetest.Admin)
	box, err := secret.NewBox(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	svc := group.New(s, box)

	v, err := svc.Create(ctx, admin, "  Research  ", "")
	if err != nil || v.Name != "Research" {
		t.Fatalf("Create = %+v, %v", v, err)
	}
	_, err = svc.Create(ctx, admin, " ", "")
	wantInvalid(t, "create: blank name", err)
	_, err = svc.Create(ctx, admin, "x", strings.Repeat("d", limits.GroupDescriptionLen+1))
	wantInvalid(t, "create: long description", err)
	up, err := svc.Update(ctx, admin, v.ID, store.GroupUpdate{Name: ptr(" Research & pricing ")})
	if err != nil || up.Name != "Research & pricing" {
		t.Fatalf("Update = %+v, %v", up, err)
	}
	_, err = svc.Update(ctx, admin, v.ID, store.GroupUpdate{Name: ptr("")})
	wantInvalid(t, "update: empty name", err)
	_, err = svc.UpdateMember(ctx, admin, v.ID, admin.ID, "boss")
	wantInvalid(t, "update member: bad role", err)
	_, err = svc.ReplacePreferences(ctx, admin, v.ID, map[string]any{"k": strings.Repeat("x", store.MaxGroupPreferencesLen)})
	wantInvalid(t, "oversize preferences", err)

	c, err := svc.CreateLLMConfig(ctx, admin, v.ID, group.LLMConfigInput{Name: " Local ", Driver: "openai", Model: " m "})
	if err != nil || c.Name != "Local" || c.Model != "m" {
		t.Fatalf("CreateLLMConfig = %+v, %v", c, err)
	}
	_, err = svc.CreateLLMConfig(ctx, admin, v.ID, group.LLMConfigInput{Name: "x", Driver: "gemini", Model: "m"})
	wantInvalid(t, "create config: bad driver", err)
	for name, p := range map[string]group.LLMConfigPatch{
		"set and cleared":          {Timeout: ptr(5), Clear: []string{"timeout"}},
		"unknown clear field":      {Clear: []string{"name"}},
		"scripted without a path":  {Driver: ptr("scripted")},
		"bad base_url":             {BaseURL: ptr("not a url")},
		"empty name":               {Name: ptr(" ")},
		"temperature out of range": {Temperature: ptr(3.0)},
	} {
		_, err := svc.UpdateLLMConfig(ctx, admin, v.ID, c.ID, p)
		wantInvalid(t, "update config: "+name, err)
	}
	got, err := s.LLMConfig(ctx, v.ID, c.ID)
	if err != nil || got.Name != "Local" || got.Driver != "openai" || got.BaseURL != nil || got.Temperature != nil || !got.UpdatedAt.Equal(c.UpdatedAt) {
		t.Fatalf("refused updates changed the configuration: %+v, %v", got, err)
	}
	up2, err := svc.UpdateLLMConfig(ctx, admin, v.ID, c.ID, group.LLMConfigPatch{Model: ptr(" gpt-4.1 ")})
	if err != nil || up2.Model != "gpt-4.1" {
		t.Fatalf("update trims the model: %+v, %v", up2, err)
	}
	groups, err := s.ListGroups(ctx, 0, 1, 100)
	if err != nil || len(groups) != 1 {
		t.Fatalf("refused creations wrote groups: %+v, %v", groups, err)
	}
}
