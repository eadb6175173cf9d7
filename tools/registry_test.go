package tools_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/tools"
)

// fake is a Tool whose declaration is given as data.
type fake struct{ spec tools.Spec }

func (f fake) Spec() tools.Spec { return f.spec }

var _ tools.Tool = fake{}

// valid returns a declaration that passes every rule; tests break one rule at a time.
func valid() tools.Spec {
	return tools.Spec{
		Class:       "core.WidgetTool",
		Name:        "widget",
		Description: "Makes widgets.",
		Operations: []tools.Operation{
			{Name: "make", Description: "Make one.", EnabledByDefault: true},
			{Name: "list", Description: "List them.", EnabledByDefault: true},
		},
		Params: []tools.Param{
			{Name: "size", Type: tools.TypeInteger, Description: "Size.", Required: tools.RequiredFor("make")},
		},
		Settings: []tools.Setting{
			{Key: "api_key", Label: "API key", Type: tools.SettingPassword},
		},
	}
}

func TestRegisterRefusals(t *testing.T) {
	t.Parallel()
	loop := &tools.Spec{}
	loop.Base = loop
	tests := []struct {
		name   string
		mutate func(*tools.Spec)
		want   string // substring of the message
	}{
		{"name empty", func(s *tools.Spec) { s.Name = "" }, "invalid name"},
		{"name uppercase", func(s *tools.Spec) { s.Name = "Widget" }, "invalid name"},
		{"name leading digit", func(s *tools.Spec) { s.Name = "1widget" }, "invalid name"},
		{"name with colon", func(s *tools.Spec) { s.Name = "x:widget" }, "invalid name"},
		{"name with hyphen", func(s *tools.Spec) { s.Name = "wid-get" }, "invalid name"},
		{"name too long", func(s *tools.Spec) { s.Name = strings.Repeat("a", 65) }, "invalid name"},
		{"class empty", func(s *tools.Spec) { s.Class = "" }, "invalid class"},
		{"class without source", func(s *tools.Spec) { s.Class = "WidgetTool" }, "invalid class"},
		{"class lowercase type", func(s *tools.Spec) { s.Class = "core.widgetTool" }, "invalid class"},
		{"class with two dots", func(s *tools.Spec) { s.Class = "core.x.WidgetTool" }, "invalid class"},
		{"class uppercase source", func(s *tools.Spec) { s.Class = "Core.WidgetTool" }, "invalid class"},
		{"core tool with other source", func(s *tools.Spec) { s.Class = "weather.WidgetTool" }, `must start with "core."`},
		{"plugin tool with core source", func(s *tools.Spec) { s.PluginSlug = "weather" }, `plugin slug "weather."`},
		{"plugin slug invalid", func(s *tools.Spec) { s.PluginSlug = "We"; s.Class = "We.WidgetTool" }, "invalid class"},
		{"plugin slug core", func(s *tools.Spec) { s.PluginSlug = "core" }, `invalid plugin slug "core"`},
		{"no operations", func(s *tools.Spec) { s.Operations = nil; s.Params = nil }, "no operations"},
		{"duplicate operation", func(s *tools.Spec) { s.Operations[1].Name = "make" }, `duplicate operation "make"`},
		{"operation name invalid", func(s *tools.Spec) { s.Operations[1].Name = "List" }, "invalid operation name"},
		{"duplicate param", func(s *tools.Spec) {
			s.Params = append(s.Params, tools.Param{Name: "size", Type: tools.TypeString})
		}, `duplicate parameter "size"`},
		{"duplicate param with base", func(s *tools.Spec) {
			s.Base = &tools.Spec{Params: []tools.Param{{Name: "size", Type: tools.TypeString}}}
		}, `duplicate parameter "size"`},
		{"param name invalid", func(s *tools.Spec) { s.Params[0].Name = "a b" }, "invalid parameter name"},
		{"param named like discriminator", func(s *tools.Spec) {
			s.Params = append(s.Params, tools.Param{Name: "action", Type: tools.TypeString})
		}, `parameter "action" is the discriminator`},
		{"inherited param named like discriminator", func(s *tools.Spec) {
			s.Base = &tools.Spec{Params: []tools.Param{{Name: "action", Type: tools.TypeString}}}
		}, `parameter "action" is the discriminator`},
		{"param named like custom discriminator", func(s *tools.Spec) {
			s.Operations[0].DiscriminatorKey, s.Operations[1].DiscriminatorKey = "mode", "mode"
			s.Params = append(s.Params, tools.Param{Name: "mode", Type: tools.TypeString})
		}, `parameter "mode" is the discriminator`},
		{"discriminator keys differ", func(s *tools.Spec) { s.Operations[1].DiscriminatorKey = "mode" }, "disagree on the discriminator"},
		{"discriminator key explicit and default differ", func(s *tools.Spec) { s.Operations[0].DiscriminatorKey = "op" }, "disagree on the discriminator"},
		{"discriminator key invalid", func(s *tools.Spec) {
			s.Operations[0].DiscriminatorKey, s.Operations[1].DiscriminatorKey = "a b", "a b"
		}, "invalid discriminator key"},
		{"required for unknown operation", func(s *tools.Spec) { s.Params[0].Required = tools.RequiredFor("build") }, `unknown operation "build"`},
		{"required optional and bound", func(s *tools.Spec) {
			s.Params[0].Required = &tools.RequiredRule{Optional: true, Operations: []string{"make"}}
		}, "both optional and bound"},
		{"required lists operation twice", func(s *tools.Spec) { s.Params[0].Required = tools.RequiredFor("make", "make") }, "listed twice"},
		{"bad skill slug uppercase", func(s *tools.Spec) { s.RecommendsSkills = []string{"Web"} }, "invalid recommended skill"},
		{"bad skill slug leading hyphen", func(s *tools.Spec) { s.RecommendsSkills = []string{"-web"} }, "invalid recommended skill"},
		{"bad skill slug trailing hyphen", func(s *tools.Spec) { s.RecommendsSkills = []string{"web-"} }, "invalid recommended skill"},
		{"bad skill slug double hyphen", func(s *tools.Spec) { s.RecommendsSkills = []string{"web--research"} }, "invalid recommended skill"},
		{"bad skill slug empty", func(s *tools.Spec) { s.RecommendsSkills = []string{""} }, "invalid recommended skill"},
		{"bad skill slug too long", func(s *tools.Spec) { s.RecommendsSkills = []string{strings.Repeat("a", 65)} }, "invalid recommended skill"},
		{"bad skill slug underscore", func(s *tools.Spec) { s.RecommendsSkills = []string{"web_research"} }, "invalid recommended skill"},
		{"skill recommended twice", func(s *tools.Spec) { s.RecommendsSkills = []string{"web", "web"} }, "recommended twice"},
		{"unknown category", func(s *tools.Spec) { s.Category = "media" }, `unknown category "media"`},
		{"unknown param type", func(s *tools.Spec) { s.Params[0].Type = "int" }, `unknown type "int"`},
		{"empty param type", func(s *tools.Spec) { s.Params[0].Type = "" }, `unknown type ""`},
		{"enum on integer", func(s *tools.Spec) { s.Params[0].Enum = []string{"1"} }, "enum is allowed on string"},
		{"duplicate enum value", func(s *tools.Spec) {
			s.Params[0].Type, s.Params[0].Enum = tools.TypeString, []string{"a", "a"}
		}, "duplicate enum value"},
		{"minimum on string", func(s *tools.Spec) {
			s.Params[0].Type, s.Params[0].Minimum = tools.TypeString, tools.Float(1)
		}, "minimum and maximum"},
		{"minimum above maximum", func(s *tools.Spec) {
			s.Params[0].Minimum, s.Params[0].Maximum = tools.Float(5), tools.Float(1)
		}, "minimum is greater"},
		{"items on string", func(s *tools.Spec) {
			s.Params[0].Type, s.Params[0].Items = tools.TypeString, map[string]any{"type": "string"}
		}, "items is allowed on array"},
		{"default of wrong type", func(s *tools.Spec) { s.Params[0].Default = "big" }, "is not of type integer"},
		{"default not whole", func(s *tools.Spec) { s.Params[0].Default = 1.5 }, "is not of type integer"},
		{"default outside enum", func(s *tools.Spec) {
			s.Params[0].Type, s.Params[0].Enum, s.Params[0].Default = tools.TypeString, []string{"a"}, "b"
		}, "not one of the enum"},
		{"default out of bounds", func(s *tools.Spec) { s.Params[0].Default, s.Params[0].Maximum = 9, tools.Float(5) }, "out of bounds"},
		{"items not encodable", func(s *tools.Spec) {
			s.Params[0].Type, s.Params[0].Items = tools.TypeArray, map[string]any{"x": func() {}}
		}, "schema cannot be generated"},
		{"base loops", func(s *tools.Spec) { s.Base = loop }, "Base chain loops"},
		{"duplicate setting", func(s *tools.Spec) {
			s.Settings = append(s.Settings, tools.Setting{Key: "api_key", Type: tools.SettingString})
		}, `duplicate setting "api_key"`},
		{"setting key invalid", func(s *tools.Spec) { s.Settings[0].Key = "ApiKey" }, "invalid setting key"},
		{"unknown setting type", func(s *tools.Spec) { s.Settings[0].Type = "secret" }, `unknown type "secret"`},
		{"select without options", func(s *tools.Spec) { s.Settings[0].Type = tools.SettingSelect }, "needs options"},
		{"select with duplicate option", func(s *tools.Spec) {
			s.Settings[0].Type, s.Settings[0].Options = tools.SettingSelect, []string{"a", "a"}
		}, "duplicate option"},
		{"options on string setting", func(s *tools.Spec) {
			s.Settings[0].Type, s.Settings[0].Options = tools.SettingString, []string{"a"}
		}, "options are allowed on select"},
		{"password default", func(s *tools.Spec) { s.Settings[0].Default = "hunter2" }, "cannot have a default"},
		{"setting default of wrong type", func(s *tools.Spec) {
			s.Settings[0].Type, s.Settings[0].Default = tools.SettingInteger, "ten"
		}, "must be an integer"},
		{"select default not an option", func(s *tools.Spec) {
			s.Settings[0].Type, s.Settings[0].Options, s.Settings[0].Default = tools.SettingSelect, []string{"a"}, "b"
		}, "must be one of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := valid()
			tt.mutate(&spec)
			reg := tools.NewRegistry()
			err := reg.Register(fake{spec})
			if err == nil {
				t.Fatalf("Register accepted the declaration")
			}
			if !errors.Is(err, svcerr.ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
			if len(reg.All()) != 0 {
				t.Errorf("a refused tool was registered")
			}
		})
	}
}

func TestRegisterAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*tools.Spec)
	}{
		{"as declared", func(*tools.Spec) {}},
		{"single operation may declare a param named action", func(s *tools.Spec) {
			s.Operations = s.Operations[:1]
			s.Params = append(s.Params, tools.Param{Name: "action", Type: tools.TypeString})
		}},
		{"single operation with its own discriminator key", func(s *tools.Spec) {
			s.Operations = s.Operations[:1]
			s.Operations[0].DiscriminatorKey = "mode"
		}},
		{"explicit default discriminator agrees with the implicit one", func(s *tools.Spec) { s.Operations[0].DiscriminatorKey = "action" }},
		{"custom discriminator on every operation", func(s *tools.Spec) {
			s.Operations[0].DiscriminatorKey, s.Operations[1].DiscriminatorKey = "mode", "mode"
			s.Params = append(s.Params, tools.Param{Name: "action", Type: tools.TypeString})
		}},
		{"empty required list", func(s *tools.Spec) { s.Params[0].Required = tools.RequiredFor() }},
		{"every category", func(s *tools.Spec) { s.Category = tools.CategorySystem }},
		{"plugin tool", func(s *tools.Spec) { s.PluginSlug, s.Class = "weather", "weather.ForecastTool" }},
		{"plugin slug with digits and hyphen", func(s *tools.Spec) { s.PluginSlug, s.Class = "7-up_x", "7-up_x.ForecastTool" }},
		{"skill slugs", func(s *tools.Spec) {
			s.RecommendsSkills = []string{"a", "web-research", "x1-2y", strings.Repeat("a", 64)}
		}},
		{"camelCase params", func(s *tools.Spec) {
			s.Params = append(s.Params, tools.Param{Name: "allowFreeText", Type: tools.TypeBoolean, Default: false})
		}},
		{"every setting type", func(s *tools.Spec) {
			s.Settings = []tools.Setting{
				{Key: "a", Type: tools.SettingString, Default: "x"},
				{Key: "b", Type: tools.SettingText, Default: "x\ny"},
				{Key: "c", Type: tools.SettingPassword},
				{Key: "d", Type: tools.SettingURL, Default: "https://example.com/x"},
				{Key: "e", Type: tools.SettingInteger, Default: 3},
				{Key: "f", Type: tools.SettingNumber, Default: 0.5},
				{Key: "g", Type: tools.SettingBoolean, Default: true},
				{Key: "h", Type: tools.SettingSelect, Options: []string{"x", "y"}, Default: "y"},
				{Key: "i", Type: tools.SettingStringList, Default: []string{"x"}},
				{Key: "j", Type: tools.SettingIntegerList, Default: []int{1, 2}},
			}
		}},
		{"every param type with a default", func(s *tools.Spec) {
			s.Params = []tools.Param{
				{Name: "a", Type: tools.TypeString, Default: "x"},
				{Name: "b", Type: tools.TypeNumber, Default: 1.5},
				{Name: "c", Type: tools.TypeInteger, Default: 2.0},
				{Name: "d", Type: tools.TypeBoolean, Default: false},
				{Name: "e", Type: tools.TypeArray, Default: []string{}},
				{Name: "f", Type: tools.TypeObject, Default: map[string]any{}},
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := valid()
			tt.mutate(&spec)
			if err := tools.NewRegistry().Register(fake{spec}); err != nil {
				t.Fatalf("Register: %v", err)
			}
		})
	}
}

func TestRegisterConflicts(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	if err := reg.Register(fake{valid()}); err != nil {
		t.Fatal(err)
	}
	sameClass := valid()
	sameClass.Name = "other"
	sameName := valid()
	sameName.Class = "core.OtherTool"
	pluginSameName := valid()
	pluginSameName.Class, pluginSameName.PluginSlug = "acme.WidgetTool", "acme"
	pluginSameNameOtherPlugin := valid()
	pluginSameNameOtherPlugin.Class, pluginSameNameOtherPlugin.PluginSlug = "acme2.GadgetTool", "acme2"

	for _, tc := range []struct {
		name string
		spec tools.Spec
		want string
	}{
		{"duplicate class", sameClass, "class already registered"},
		{"duplicate model-facing name", sameName, `model-facing name "widget" already used by core.WidgetTool`},
	} {
		err := reg.Register(fake{tc.spec})
		if !errors.Is(err, svcerr.ErrConflict) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrConflict mentioning %q", tc.name, err, tc.want)
		}
	}
	// A plugin tool's name is prefixed with its slug, so it does not collide with a core name.
	if err := reg.Register(fake{pluginSameName}); err != nil {
		t.Fatalf("plugin tool with a core tool's name: %v", err)
	}
	if err := reg.Register(fake{pluginSameNameOtherPlugin}); err != nil {
		t.Fatalf("second plugin with the same name: %v", err)
	}
	dup := valid()
	dup.Class, dup.PluginSlug = "acme.OtherTool", "acme"
	if err := reg.Register(fake{dup}); !errors.Is(err, svcerr.ErrConflict) {
		t.Errorf("same plugin, same name: got %v, want ErrConflict", err)
	}
	if err := reg.Register(nil); !errors.Is(err, svcerr.ErrInvalid) {
		t.Errorf("nil tool: got %v", err)
	}
	if got := len(reg.All()); got != 3 {
		t.Errorf("registered %d tools, want 3", got)
	}
}

func TestRegistryLookups(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	for _, c := range []struct{ class, name, slug string }{
		{"core.ZedTool", "zed", ""},
		{"acme.AlphaTool", "alpha", "acme"},
		{"core.AlphaTool", "alpha", ""},
	} {
		s := valid()
		s.Class, s.Name, s.PluginSlug = c.class, c.name, c.slug
		if err := reg.Register(fake{s}); err != nil {
			t.Fatal(err)
		}
	}
	var classes []string
	for _, tool := range reg.All() {
		classes = append(classes, tool.Spec().Class)
	}
	if got, want := strings.Join(classes, ","), "acme.AlphaTool,core.AlphaTool,core.ZedTool"; got != want {
		t.Errorf("All order %s, want %s", got, want)
	}
	if tool, ok := reg.Lookup("core.ZedTool"); !ok || tool.Spec().Name != "zed" {
		t.Errorf("Lookup core.ZedTool = %v, %v", tool, ok)
	}
	if _, ok := reg.Lookup("core.Missing"); ok {
		t.Errorf("Lookup of an unknown class succeeded")
	}
	if tool, ok := reg.LookupModelName("acme:alpha"); !ok || tool.Spec().Class != "acme.AlphaTool" {
		t.Errorf("LookupModelName acme:alpha = %v, %v", tool, ok)
	}
	if tool, ok := reg.LookupModelName("alpha"); !ok || tool.Spec().Class != "core.AlphaTool" {
		t.Errorf("LookupModelName alpha = %v, %v", tool, ok)
	}
	if _, ok := reg.LookupModelName("acme.AlphaTool"); ok {
		t.Errorf("LookupModelName found a class")
	}
	if s, ok := reg.Spec("core.AlphaTool"); !ok || s.Name != "alpha" {
		t.Errorf("Spec = %v, %v", s, ok)
	}
	specs := reg.Specs()
	if len(specs) != 3 || specs[0].Class != "acme.AlphaTool" {
		t.Errorf("Specs = %v", specs)
	}
}

func TestRegistryConcurrent(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			s := valid()
			s.Class, s.Name = fmt.Sprintf("core.W%dTool", i), fmt.Sprintf("w%d", i)
			if err := reg.Register(fake{s}); err != nil {
				t.Error(err)
			}
			reg.All()
			reg.Lookup(s.Class)
		})
	}
	wg.Wait()
	if len(reg.All()) != 20 {
		t.Errorf("registered %d", len(reg.All()))
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	core := tools.Spec{Class: "core.ReadURLTool", Name: "read_url"}
	plugin := tools.Spec{Class: "weather.ForecastTool", Name: "forecast", PluginSlug: "weather", DisplayName: "Forecast", Icon: "sun", Category: tools.CategoryData}
	for _, tc := range []struct{ got, want string }{
		{tools.ModelName(core), "read_url"},
		{tools.ModelName(plugin), "weather:forecast"},
		{tools.DisplayName(core), "ReadURLTool"},
		{tools.DisplayName(plugin), "Forecast"},
		{tools.DisplayName(tools.Spec{Class: "nodot"}), "nodot"},
		{tools.Category(core), "general"},
		{tools.Category(plugin), "data"},
		{tools.Icon(core, ""), "puzzle"},
		{tools.Icon(core, "cloud"), "cloud"},
		{tools.Icon(plugin, "cloud"), "sun"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestCheckRecommendedSkills(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	a := valid()
	a.RecommendsSkills = []string{"web-research"}
	b := valid()
	b.Class, b.Name, b.RecommendsSkills = "core.BTool", "b", []string{"scheduling", "weather-briefing"}
	for _, s := range []tools.Spec{a, b} {
		if err := reg.Register(fake{s}); err != nil {
			t.Fatal(err)
		}
	}
	all := func(string) bool { return true }
	if err := tools.CheckRecommendedSkills(reg, all); err != nil {
		t.Errorf("all skills exist: %v", err)
	}
	known := map[string]bool{"web-research": true, "scheduling": true}
	err := tools.CheckRecommendedSkills(reg, func(s string) bool { return known[s] })
	if !errors.Is(err, svcerr.ErrSkillsMissing) {
		t.Fatalf("got %v, want ErrSkillsMissing", err)
	}
	msg, _, _ := svcerr.Public(err)
	if want := `tool core.BTool recommends skill "weather-briefing", which does not exist`; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	if err := tools.CheckRecommendedSkills(tools.NewRegistry(), func(string) bool { return false }); err != nil {
		t.Errorf("empty registry: %v", err)
	}
}
