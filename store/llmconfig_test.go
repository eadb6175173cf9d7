package store_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func newLLMConfig(t *testing.T, s *store.Store, groupID int64, c store.LLMConfig) *store.LLMConfig {
	t.Helper()
	if c.Driver == "" {
		c.Driver = store.LLMDriverOpenAI
	}
	if c.Model == "" {
		c.Model = "gpt-4.1-mini"
	}
	out, err := s.CreateLLMConfig(context.Background(), groupID, c)
	if err != nil {
		t.Fatalf("CreateLLMConfig(%s): %v", c.Name, err)
	}
	return out
}

func llmConfig(t *testing.T, s *store.Store, groupID, id int64) *store.LLMConfig {
	t.Helper()
	c, err := s.LLMConfig(context.Background(), groupID, id)
	if err != nil {
		t.Fatalf("LLMConfig(%d): %v", id, err)
	}
	return c
}

func defaults(t *testing.T, s *store.Store) map[int64]bool {
	t.Helper()
	var ids []int64
	if err := s.GormDBForTest().Table("llm_configs").Where("is_default = ?", true).Order("id").Pluck("id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	out := map[int64]bool{}
	for _, id := range ids {
		out[id] = true
	}
	return out
}

func TestCreateLLMConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	g := storetest.Group(t, s, u)
	other := storetest.Group(t, s, u)

	in := store.LLMConfig{
		ID: 777, GroupID: other.ID, PrincipalID: 1, Name: "Local Llama", Driver: store.LLMDriverOpenAI, Model: "llama3.1:8b",
		BaseURL: ptr("http://127.0.0.1:11434/v1"), APIKeySealed: "v1:c2VhbGVk", Temperature: ptr(0.3), MaxTokensOutput: ptr(4096),
		ContextWindow: ptr(131072), Timeout: ptr(120), IsDefault: true,
	}
	got, err := s.CreateLLMConfig(ctx, g.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	at := t0.Truncate(time.Microsecond)
	want := &store.LLMConfig{
		ID: got.ID, GroupID: g.ID, PrincipalID: g.PrincipalID, Name: "Local Llama", Driver: "openai", Model: "llama3.1:8b",
		BaseURL: ptr("http://127.0.0.1:11434/v1"), APIKeySealed: "v1:c2VhbGVk", Temperature: ptr(0.3), MaxTokensOutput: ptr(4096),
		ContextWindow: ptr(131072), Timeout: ptr(120), IsDefault: true, CreatedAt: at, UpdatedAt: at,
	}
	if got.ID == 777 {
		t.Fatal("the given id was used")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("created (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, llmConfig(t, s, g.ID, got.ID)); diff != "" {
		t.Fatalf("read back (-want +got):\n%s", diff)
	}
	if !got.APIKeySet() {
		t.Fatal("APIKeySet = false")
	}
	// The store keeps the sealed value as given; the column holds exactly that.
	var raw string
	if err := s.GormDBForTest().Raw("SELECT api_key_sealed FROM llm_configs WHERE id = ?", got.ID).Scan(&raw).Error; err != nil || raw != "v1:c2VhbGVk" {
		t.Fatalf("raw api_key_sealed = %q, %v", raw, err)
	}
	// The sealed key stays out of logs.
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "c", *got)
	if strings.Contains(logged.String(), "c2VhbGVk") || !strings.Contains(logged.String(), "api_key_set=true") {
		t.Fatalf("logged: %s", logged.String())
	}

	minimal := newLLMConfig(t, s, g.ID, store.LLMConfig{Name: "Claude", Driver: store.LLMDriverAnthropic, Model: "claude-sonnet"})
	if minimal.BaseURL != nil || minimal.APIKeySet() || minimal.Temperature != nil || minimal.Timeout != nil || minimal.IsDefault || minimal.IsGlobal {
		t.Fatalf("minimal config = %+v", minimal)
	}
	// Names are unique per group, compared byte for byte; other groups may reuse them.
	newLLMConfig(t, s, g.ID, store.LLMConfig{Name: "claude"})
	newLLMConfig(t, s, other.ID, store.LLMConfig{Name: "Claude"})
	newLLMConfig(t, s, g.ID, store.LLMConfig{Name: "Script", Driver: store.LLMDriverScripted, Model: "demo", BaseURL: ptr("testdata/scripts/demo.yaml")})
	before := tableRows(t, s, "llm_configs", "1 = 1")

	base := func(mod func(c *store.LLMConfig)) store.LLMConfig {
		c := store.LLMConfig{Name: "new", Driver: "openai", Model: "m"}
		mod(&c)
		return c
	}
	tests := []struct {
		name  string
		group int64
		in    store.LLMConfig
		want  error
	}{
		{"name taken", g.ID, base(func(c *store.LLMConfig) { c.Name = "Claude" }), svcerr.ErrConflict},
		{"unknown group", 999999, base(func(*store.LLMConfig) {}), svcerr.ErrNotFound},
		// The field rules are package group's (group.CheckLLMConfig, tested there).
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.CreateLLMConfig(ctx, tc.group, tc.in)
			wantErr(t, err, tc.want)
		})
	}
	if after := tableRows(t, s, "llm_configs", "1 = 1"); after != before {
		t.Fatalf("refused creations wrote rows: %d → %d", before, after)
	}
	// The limits themselves are accepted.
	edge := newLLMConfig(t, s, g.ID, store.LLMConfig{
		Name: strings.Repeat("ü", limits.LLMConfigNameLen), Model: strings.Repeat("m", limits.LLMModelLen),
		BaseURL:     ptr("https://example.com/" + strings.Repeat("p", limits.URLLen-len("https://example.com/"))),
		Temperature: ptr(2.0), MaxTokensOutput: ptr(limits.MaxLLMTokensOutput), ContextWindow: ptr(limits.MaxLLMContextWindow),
		Timeout: ptr(limits.MaxLLMTimeoutSeconds), APIKeySealed: strings.Repeat("k", store.MaxLLMSealedKeyLen),
	})
	if len(edge.APIKeySealed) != store.MaxLLMSealedKeyLen || *edge.Temperature != 2 {
		t.Fatalf("edge config = %+v", edge)
	}
}

func TestLLMConfigDefaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s)
	g1 := storetest.Group(t, s, u, storetest.GroupNamed("one"))
	g2 := storetest.Group(t, s, u)

	a := newLLMConfig(t, s, g1.ID, store.LLMConfig{Name: "a", IsDefault: true})
	b := newLLMConfig(t, s, g1.ID, store.LLMConfig{Name: "b", IsDefault: true}) // takes over in g1
	c := newLLMConfig(t, s, g2.ID, store.LLMConfig{Name: "c", IsDefault: true}) // g2 has its own
	ga := newLLMConfig(t, s, g1.ID, store.LLMConfig{Name: "global a", IsGlobal: true, IsDefault: true})
	if want := map[int64]bool{b.ID: true, c.ID: true, ga.ID: true}; !cmp.Equal(defaults(t, s), want) {
		t.Fatalf("defaults = %v, want %v", defaults(t, s), want)
	}
	// A global default in another group takes over the global scope only.
	gb := newLLMConfig(t, s, g2.ID, store.LLMConfig{Name: "global b", IsGlobal: true, IsDefault: true})
	if want := map[int64]bool{b.ID: true, c.ID: true, gb.ID: true}; !cmp.Equal(defaults(t, s), want) {
		t.Fatalf("defaults after a second global default = %v, want %v", defaults(t, s), want)
	}

	// SetDefault: the group scope, then the global scope; idempotent.
	got, err := s.SetDefaultLLMConfig(ctx, g1.ID, a.ID, nil)
	if err != nil || !got.IsDefault {
		t.Fatalf("SetDefault = %+v, %v", got, err)
	}
	if _, err := s.SetDefaultLLMConfig(ctx, g1.ID, a.ID, nil); err != nil {
		t.Fatalf("SetDefault again: %v", err)
	}
	if _, err := s.SetDefaultLLMConfig(ctx, g1.ID, ga.ID, nil); err != nil {
		t.Fatal(err)
	}
	if want := map[int64]bool{a.ID: true, c.ID: true, ga.ID: true}; !cmp.Equal(defaults(t, s), want) {
		t.Fatalf("defaults after SetDefault = %v, want %v", defaults(t, s), want)
	}
	refuse := errors.New("refused")
	var seenCur, seenNext *store.LLMConfig
	_, err = s.SetDefaultLLMConfig(ctx, g1.ID, b.ID, func(cur, next *store.LLMConfig) error { seenCur, seenNext = cur, next; return refuse })
	if !errors.Is(err, refuse) || seenCur.ID != b.ID || seenCur.IsDefault || !seenNext.IsDefault {
		t.Fatalf("refused SetDefault: %v, cur %+v, next %+v", err, seenCur, seenNext)
	}
	if want := map[int64]bool{a.ID: true, c.ID: true, ga.ID: true}; !cmp.Equal(defaults(t, s), want) {
		t.Fatal("a refused SetDefault changed the defaults")
	}
	if _, err := s.SetDefaultLLMConfig(ctx, g2.ID, a.ID, nil); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("SetDefault through another group: %v", err)
	}
	if _, err := s.SetDefaultLLMConfig(ctx, g1.ID, 999999, nil); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("SetDefault of an unknown configuration: %v", err)
	}

	// The database itself refuses a second default in one scope.
	db := s.GormDBForTest()
	if err := db.Exec("UPDATE llm_configs SET is_default = ? WHERE id = ?", true, b.ID).Error; err == nil {
		t.Fatal("a second group default was accepted by the database")
	}
	if err := db.Exec("UPDATE llm_configs SET is_default = ? WHERE id = ?", true, gb.ID).Error; err == nil {
		t.Fatal("a second global default was accepted by the database")
	}
}

func TestUpdateLLMConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	g := storetest.Group(t, s, u, storetest.GroupNamed("upd"))
	other := storetest.Group(t, s, u, storetest.GroupNamed("other"))
	full := newLLMConfig(t, s, g.ID, store.LLMConfig{
		Name: "full", BaseURL: ptr("https://llm.example.com/v1"), APIKeySealed: "v1:a2V5", Temperature: ptr(0.5),
		MaxTokensOutput: ptr(100), ContextWindow: ptr(1000), Timeout: ptr(30), IsDefault: true,
	})
	taken := newLLMConfig(t, s, g.ID, store.LLMConfig{Name: "taken"})
	elsewhere := newLLMConfig(t, s, other.ID, store.LLMConfig{Name: "elsewhere", IsDefault: true})

	// Omitted fields keep their value.
	clock.Advance(time.Minute)
	got, err := s.UpdateLLMConfig(ctx, g.ID, full.ID, store.LLMConfigUpdate{Model: ptr("gpt-4.1"), Temperature: ptr(0.1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := *full
	want.Model, want.Temperature, want.UpdatedAt = "gpt-4.1", ptr(0.1), clock.Now().Truncate(time.Microsecond)
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Fatalf("partial update (-want +got):\n%s", diff)
	}

	// clear resets optional fields; a new key replaces the old.
	got, err = s.UpdateLLMConfig(ctx, g.ID, full.ID, store.LLMConfigUpdate{
		APIKeySealed: ptr("v1:bmV3"),
		Clear:        []string{store.LLMFieldBaseURL, store.LLMFieldTemperature, store.LLMFieldMaxTokensOutput, store.LLMFieldContextWindow, store.LLMFieldTimeout},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.BaseURL != nil || got.Temperature != nil || got.MaxTokensOutput != nil || got.ContextWindow != nil || got.Timeout != nil || got.APIKeySealed != "v1:bmV3" || !got.IsDefault {
		t.Fatalf("after clear = %+v", got)
	}
	if got, err = s.UpdateLLMConfig(ctx, g.ID, full.ID, store.LLMConfigUpdate{Clear: []string{store.LLMFieldAPIKey}}, nil); err != nil || got.APIKeySet() {
		t.Fatalf("after clearing the key = %+v, %v", got, err)
	}
	var raw *string
	if err := s.GormDBForTest().Raw("SELECT api_key_sealed FROM llm_configs WHERE id = ?", full.ID).Scan(&raw).Error; err != nil || raw != nil {
		t.Fatalf("cleared key column = %v, %v", raw, err)
	}

	// Changing is_global drops the scoped default flag, unless the update asks for it.
	got, err = s.UpdateLLMConfig(ctx, g.ID, full.ID, store.LLMConfigUpdate{IsGlobal: ptr(true)}, nil)
	if err != nil || !got.IsGlobal || got.IsDefault {
		t.Fatalf("made global = %+v, %v", got, err)
	}
	got, err = s.UpdateLLMConfig(ctx, g.ID, full.ID, store.LLMConfigUpdate{IsGlobal: ptr(false), IsDefault: ptr(true)}, nil)
	if err != nil || got.IsGlobal || !got.IsDefault {
		t.Fatalf("back to the group as its default = %+v, %v", got, err)
	}
	got, err = s.UpdateLLMConfig(ctx, g.ID, taken.ID, store.LLMConfigUpdate{IsDefault: ptr(true)}, nil)
	if err != nil || !got.IsDefault {
		t.Fatalf("new group default = %+v, %v", got, err)
	}
	if want := map[int64]bool{taken.ID: true, elsewhere.ID: true}; !cmp.Equal(defaults(t, s), want) {
		t.Fatalf("defaults = %v, want %v", defaults(t, s), want)
	}
	if got, err = s.UpdateLLMConfig(ctx, g.ID, taken.ID, store.LLMConfigUpdate{IsDefault: ptr(false)}, nil); err != nil || got.IsDefault {
		t.Fatalf("default removed = %+v, %v", got, err)
	}
	// Renaming to its own name is fine.
	if _, err := s.UpdateLLMConfig(ctx, g.ID, taken.ID, store.LLMConfigUpdate{Name: ptr("taken")}, nil); err != nil {
		t.Fatalf("rename to the same name: %v", err)
	}

	snapshot := llmConfig(t, s, g.ID, full.ID)
	refuse := errors.New("refused")
	var seenCur, seenNext *store.LLMConfig
	tests := []struct {
		name  string
		group int64
		id    int64
		upd   store.LLMConfigUpdate
		check store.LLMConfigCheck
		want  error
	}{
		{"name taken", g.ID, full.ID, store.LLMConfigUpdate{Name: ptr("taken")}, nil, svcerr.ErrConflict},
		{"another group's configuration", g.ID, elsewhere.ID, store.LLMConfigUpdate{Model: ptr("x")}, nil, svcerr.ErrNotFound},
		{"unknown configuration", g.ID, 999999, store.LLMConfigUpdate{Model: ptr("x")}, nil, svcerr.ErrNotFound},
		{"unknown group", 999999, full.ID, store.LLMConfigUpdate{Model: ptr("x")}, nil, svcerr.ErrNotFound},
		{"check refuses", g.ID, full.ID, store.LLMConfigUpdate{Model: ptr("checked"), IsGlobal: ptr(true)}, func(cur, next *store.LLMConfig) error {
			seenCur, seenNext = cur, next
			return refuse
		}, refuse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.UpdateLLMConfig(ctx, tc.group, tc.id, tc.upd, tc.check)
			wantErr(t, err, tc.want)
		})
	}
	if seenCur.Model != "gpt-4.1" || seenCur.IsGlobal || seenNext.Model != "checked" || !seenNext.IsGlobal || seenNext.IsDefault {
		t.Fatalf("check saw cur %+v next %+v", seenCur, seenNext)
	}
	if diff := cmp.Diff(snapshot, llmConfig(t, s, g.ID, full.ID)); diff != "" {
		t.Fatalf("refused updates changed the configuration:\n%s", diff)
	}

	// Switching to the scripted driver with a script path is a valid result.
	got, err = s.UpdateLLMConfig(ctx, g.ID, full.ID, store.LLMConfigUpdate{Driver: ptr("scripted"), BaseURL: ptr("scripts/demo.json")}, nil)
	if err != nil || got.Driver != "scripted" || *got.BaseURL != "scripts/demo.json" {
		t.Fatalf("to scripted = %+v, %v", got, err)
	}
}

func TestListAndDeleteLLMConfigs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s)
	g := storetest.Group(t, s, u)
	other := storetest.Group(t, s, u)
	third := storetest.Group(t, s, u, storetest.GroupNamed("third"))
	newLLMConfig(t, s, g.ID, store.LLMConfig{Name: "zeta"})
	newLLMConfig(t, s, g.ID, store.LLMConfig{Name: "Alpha", IsGlobal: true})
	newLLMConfig(t, s, g.ID, store.LLMConfig{Name: "beta"})
	newLLMConfig(t, s, other.ID, store.LLMConfig{Name: "shared", IsGlobal: true})
	newLLMConfig(t, s, other.ID, store.LLMConfig{Name: "private"})
	newLLMConfig(t, s, third.ID, store.LLMConfig{Name: "also shared", IsGlobal: true})

	names := func(cs []store.LLMConfig) string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return strings.Join(out, ",")
	}
	cs, err := s.ListLLMConfigs(ctx, g.ID, false)
	if err != nil || names(cs) != "Alpha,beta,zeta" {
		t.Fatalf("own configs = %q, %v", names(cs), err)
	}
	cs, err = s.ListLLMConfigs(ctx, g.ID, true)
	if err != nil || names(cs) != "Alpha,beta,zeta,also shared,shared" {
		t.Fatalf("with global = %q, %v", names(cs), err)
	}
	if cs[3].GroupID != third.ID || cs[3].PrincipalID != third.PrincipalID {
		t.Fatalf("global config of another group = %+v", cs[3])
	}
	if cs, err := s.ListLLMConfigs(ctx, third.ID, false); err != nil || names(cs) != "also shared" {
		t.Fatalf("third's configs = %q, %v", names(cs), err)
	}
	if _, err := s.ListLLMConfigs(ctx, 999999, true); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("configs of an unknown group: %v", err)
	}

	zeta := cs[2]
	refuse := errors.New("refused")
	var seen *store.LLMConfig
	wantErr(t, s.DeleteLLMConfig(ctx, g.ID, zeta.ID, func(cur, next *store.LLMConfig) error {
		if next != nil {
			t.Error("delete check got a next configuration")
		}
		seen = cur
		return refuse
	}), refuse)
	if seen == nil || seen.ID != zeta.ID {
		t.Fatalf("delete check saw %+v", seen)
	}
	llmConfig(t, s, g.ID, zeta.ID) // still there
	wantErr(t, s.DeleteLLMConfig(ctx, other.ID, zeta.ID, nil), svcerr.ErrNotFound)
	wantErr(t, s.DeleteLLMConfig(ctx, g.ID, zeta.ID, nil), nil)
	wantErr(t, s.DeleteLLMConfig(ctx, g.ID, zeta.ID, nil), svcerr.ErrNotFound)
	if _, err := s.LLMConfig(ctx, g.ID, zeta.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("deleted configuration still readable: %v", err)
	}
}

func TestResolveLLMConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s)
	g := storetest.Group(t, s, u, storetest.GroupNamed("team"))
	bare := storetest.Group(t, s, u, storetest.GroupNamed("bare"))
	ops := storetest.Group(t, s, u, storetest.GroupNamed("ops"))

	resolve := func(p *int64) (int64, error) {
		c, err := s.ResolveLLMConfig(ctx, p)
		if err != nil {
			return 0, err
		}
		return c.ID, nil
	}
	for _, p := range []*int64{nil, &g.PrincipalID, &u.PrincipalID} {
		if _, err := resolve(p); !errors.Is(err, svcerr.ErrNotFound) {
			t.Fatalf("nothing configured, principal %v: %v", p, err)
		}
	}
	// Non-default configurations are never picked.
	newLLMConfig(t, s, g.ID, store.LLMConfig{Name: "not default"})
	newLLMConfig(t, s, ops.ID, store.LLMConfig{Name: "global, not default", IsGlobal: true})
	if _, err := resolve(&g.PrincipalID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("only non-defaults: %v", err)
	}

	global := newLLMConfig(t, s, ops.ID, store.LLMConfig{Name: "global default", IsGlobal: true, IsDefault: true, APIKeySealed: "v1:Zw=="})
	tests := []struct {
		name string
		p    *int64
		want int64
	}{
		{"no group", nil, global.ID},
		{"group without a default", &bare.PrincipalID, global.ID},
		{"a user's principal", &u.PrincipalID, global.ID},
		{"unknown principal", ptr(int64(999999)), global.ID},
		{"the owning group of the global default", &ops.PrincipalID, global.ID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := resolve(tc.p); err != nil || got != tc.want {
				t.Fatalf("resolve = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	own := newLLMConfig(t, s, g.ID, store.LLMConfig{Name: "team default", IsDefault: true})
	c, err := s.ResolveLLMConfig(ctx, &g.PrincipalID)
	if err != nil || c.ID != own.ID || c.PrincipalID != g.PrincipalID {
		t.Fatalf("group default = %+v, %v", c, err)
	}
	if c, err := s.ResolveLLMConfig(ctx, nil); err != nil || c.APIKeySealed != "v1:Zw==" {
		t.Fatalf("resolved global default carries its sealed key: %+v, %v", c, err)
	}
	wantErr(t, s.DeleteLLMConfig(ctx, g.ID, own.ID, nil), nil)
	if got, err := resolve(&g.PrincipalID); err != nil || got != global.ID {
		t.Fatalf("after deleting the group default: %d, %v", got, err)
	}
}
