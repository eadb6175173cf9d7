package tools_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/tools"
)

func TestSchemaGolden(t *testing.T) {
	t.Parallel()
	grandparent := &tools.Spec{Params: []tools.Param{
		{Name: "locale", Type: tools.TypeString, Description: "BCP 47 tag.", Required: tools.Optional()},
	}}
	parent := &tools.Spec{
		Base:   grandparent,
		Params: []tools.Param{{Name: "timezone", Type: tools.TypeString, Description: "IANA zone."}},
		// Operations and settings of a base are never inherited.
		Operations: []tools.Operation{{Name: "ignored"}},
		Settings:   []tools.Setting{{Key: "ignored", Type: tools.SettingString}},
	}
	tests := []struct {
		name string
		spec tools.Spec
		want string
	}{
		{
			name: "single operation: no discriminator, declaration order, every keyword",
			spec: tools.Spec{
				Class: "core.FetchTool", Name: "fetch",
				Operations: []tools.Operation{{Name: "fetch", Description: "Fetch."}},
				Params: []tools.Param{
					{Name: "url", Type: tools.TypeString, Description: "Address <a&b>.", Format: "uri"},
					{Name: "tries", Type: tools.TypeInteger, Minimum: tools.Float(1), Maximum: tools.Float(5.5)},
					{Name: "mode", Type: tools.TypeString, Enum: []string{"b", "a"}, Default: "b"},
					{Name: "tags", Type: tools.TypeArray, Items: map[string]any{"type": "string", "minLength": 1}, Required: tools.Optional()},
					{Name: "verbose", Type: tools.TypeBoolean},
					{Name: "extra", Type: tools.TypeObject, Required: tools.RequiredFor()},
					{Name: "ratio", Type: tools.TypeNumber, Required: tools.RequiredFor("fetch")},
				},
			},
			want: `{"type":"object","properties":{` +
				`"url":{"type":"string","description":"Address <a&b>.","format":"uri"},` +
				`"tries":{"type":"integer","minimum":1,"maximum":5.5},` +
				`"mode":{"type":"string","enum":["b","a"],"default":"b"},` +
				`"tags":{"type":"array","items":{"minLength":1,"type":"string"}},` +
				`"verbose":{"type":"boolean"},` +
				`"extra":{"type":"object"},` +
				`"ratio":{"type":"number"}},` +
				`"required":["url","tries","verbose","extra","ratio"]}`,
		},
		{
			name: "single operation without parameters",
			spec: tools.Spec{Class: "core.NowTool", Name: "now", Operations: []tools.Operation{{Name: "now"}}},
			want: `{"type":"object","properties":{}}`,
		},
		{
			name: "several operations: required discriminator first, enum in declaration order",
			spec: tools.Spec{
				Class: "core.TodoTool", Name: "todo",
				Operations: []tools.Operation{
					{Name: "write", Description: "Replace the list."},
					{Name: "read"},
					{Name: "add", Description: "Add one."},
				},
				Params: []tools.Param{
					{Name: "note", Type: tools.TypeString, Description: "A note.", Required: tools.Optional()},
				},
			},
			want: `{"type":"object","properties":{` +
				`"action":{"type":"string","description":"The operation to perform:\n- write: Replace the list.\n- read\n- add: Add one.","enum":["write","read","add"]},` +
				`"note":{"type":"string","description":"A note."}},` +
				`"required":["action"]}`,
		},
		{
			name: "custom discriminator key",
			spec: tools.Spec{
				Class: "core.ModeTool", Name: "mode",
				Operations: []tools.Operation{{Name: "on", DiscriminatorKey: "mode"}, {Name: "off", DiscriminatorKey: "mode"}},
				Params:     []tools.Param{{Name: "action", Type: tools.TypeString}},
			},
			want: `{"type":"object","properties":{` +
				`"mode":{"type":"string","description":"The operation to perform:\n- on\n- off","enum":["on","off"]},` +
				`"action":{"type":"string"}},` +
				`"required":["mode","action"]}`,
		},
		{
			name: "inherited parameters first, farthest ancestor first",
			spec: tools.Spec{
				Class: "core.ClockTool", Name: "clock", Base: parent,
				Operations: []tools.Operation{{Name: "now"}},
				Params:     []tools.Param{{Name: "layout", Type: tools.TypeString, Default: "rfc3339"}},
			},
			want: `{"type":"object","properties":{` +
				`"locale":{"type":"string","description":"BCP 47 tag."},` +
				`"timezone":{"type":"string","description":"IANA zone."},` +
				`"layout":{"type":"string","default":"rfc3339"}},` +
				`"required":["timezone"]}`,
		},
		{
			name: "requirements bound to operations become allOf if/then, in operation order",
			spec: tools.Spec{
				Class: "core.NotesTool", Name: "notes",
				Operations: []tools.Operation{{Name: "list"}, {Name: "read"}, {Name: "write"}, {Name: "delete"}},
				Params: []tools.Param{
					{Name: "id", Type: tools.TypeInteger, Required: tools.RequiredFor("write", "read", "delete")},
					{Name: "text", Type: tools.TypeString, Required: tools.RequiredFor("write")},
					{Name: "owner", Type: tools.TypeString},
				},
			},
			want: `{"type":"object","properties":{` +
				`"action":{"type":"string","description":"The operation to perform:\n- list\n- read\n- write\n- delete","enum":["list","read","write","delete"]},` +
				`"id":{"type":"integer"},"text":{"type":"string"},"owner":{"type":"string"}},` +
				`"required":["action","owner"],` +
				`"allOf":[` +
				`{"if":{"properties":{"action":{"const":"read"}}},"then":{"required":["id"]}},` +
				`{"if":{"properties":{"action":{"const":"write"}}},"then":{"required":["id","text"]}},` +
				`{"if":{"properties":{"action":{"const":"delete"}}},"then":{"required":["id"]}}]}`,
		},
		{
			name: "a default means not required, whatever the requirement says",
			spec: tools.Spec{
				Class: "core.PageTool", Name: "page",
				Operations: []tools.Operation{{Name: "a"}, {Name: "b"}},
				Params: []tools.Param{
					{Name: "page", Type: tools.TypeInteger, Default: 1},
					{Name: "size", Type: tools.TypeInteger, Default: 25, Required: tools.RequiredFor("a")},
					{Name: "flag", Type: tools.TypeBoolean, Default: false},
					{Name: "list", Type: tools.TypeArray, Default: []string{}},
					{Name: "q", Type: tools.TypeString, Required: tools.Optional()},
				},
			},
			want: `{"type":"object","properties":{` +
				`"action":{"type":"string","description":"The operation to perform:\n- a\n- b","enum":["a","b"]},` +
				`"page":{"type":"integer","default":1},"size":{"type":"integer","default":25},` +
				`"flag":{"type":"boolean","default":false},"list":{"type":"array","default":[]},` +
				`"q":{"type":"string"}},` +
				`"required":["action"]}`,
		},
		{
			name: "single operation: a requirement bound to it is a plain requirement",
			spec: tools.Spec{
				Class: "core.OneTool", Name: "one",
				Operations: []tools.Operation{{Name: "go"}},
				Params:     []tools.Param{{Name: "x", Type: tools.TypeString, Required: tools.RequiredFor("go")}},
			},
			want: `{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tools.Validate(tt.spec); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got := string(tools.Schema(tt.spec))
			if got != tt.want {
				t.Errorf("schema\n got %s\nwant %s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("schema is not valid JSON")
			}
			if again := string(tools.Schema(tt.spec)); again != got {
				t.Errorf("schema not deterministic")
			}
		})
	}
}

func TestSchemaPanicsOnUnencodable(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Errorf("Schema did not panic")
		}
	}()
	tools.Schema(tools.Spec{
		Class: "core.BadTool", Name: "bad", Operations: []tools.Operation{{Name: "x"}},
		Params: []tools.Param{{Name: "p", Type: tools.TypeObject, Default: map[string]any{"f": func() {}}}},
	})
}

func TestOperationFor(t *testing.T) {
	t.Parallel()
	single := tools.Spec{Operations: []tools.Operation{{Name: "fetch"}}}
	multi := tools.Spec{Operations: []tools.Operation{{Name: "read"}, {Name: "write"}}}
	custom := tools.Spec{Operations: []tools.Operation{{Name: "on", DiscriminatorKey: "mode"}, {Name: "off", DiscriminatorKey: "mode"}}}
	tests := []struct {
		name    string
		spec    tools.Spec
		args    map[string]any
		want    string
		wantErr bool
	}{
		{"single, absent", single, nil, "fetch", false},
		{"single, present anyway", single, map[string]any{"action": "other"}, "fetch", false},
		{"multi, named", multi, map[string]any{"action": "write"}, "write", false},
		{"multi, missing", multi, map[string]any{}, "", true},
		{"multi, null", multi, map[string]any{"action": nil}, "", true},
		{"multi, not a string", multi, map[string]any{"action": 1}, "", true},
		{"multi, unknown", multi, map[string]any{"action": "delete"}, "", true},
		{"multi, wrong key", multi, map[string]any{"mode": "read"}, "", true},
		{"custom key", custom, map[string]any{"mode": "off", "action": "on"}, "off", false},
		{"no operations", tools.Spec{}, nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tools.OperationFor(tt.spec, tt.args)
			if tt.wantErr {
				if !errors.Is(err, svcerr.ErrInvalid) {
					t.Errorf("got %q, %v; want ErrInvalid", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
