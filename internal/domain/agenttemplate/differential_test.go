package agenttemplate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentsvc/svc/internal/domain/agenttemplate"
)

const testSchemaURL = "https://svc.example.com/svc/schemas/agent-template.schema.json"

func compileSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(agenttemplate.SchemaJSON(testSchemaURL)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(testSchemaURL, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(testSchemaURL)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// schemaBlind reports whether an error is one of the rules the schema cannot express: a
// duplicate tool class, and the checks of settings values against the tool's declared
// settings (the schema only says settings is an object), and the rules of an approval policy
// (the schema only says it is an object).
func schemaBlind(f agenttemplate.Finding) bool {
	switch f.Code {
	case agenttemplate.CodeToolClassDuplicate, agenttemplate.CodeSettingsUnknownKey, agenttemplate.CodeSettingsPasswordKeyForbidden:
		return true
	case agenttemplate.CodeSettingsInvalidValueType:
		return strings.Count(f.Path, "/") > 3 // a value inside settings, not settings itself
	case agenttemplate.CodeApprovalPolicyInvalid:
		return !strings.Contains(f.Message, "approval_policy must be an object") // the rules inside, not their type
	}
	return false
}

// agree checks one JSON document: the schema accepts it exactly when the validator reports no
// error the schema could have seen.
func agree(t *testing.T, sch *jsonschema.Schema, cat agenttemplate.Catalog, raw []byte) (valid bool) {
	t.Helper()
	rep := agenttemplate.Validate(agenttemplate.Input{Raw: raw, ContentType: "application/json"}, cat)
	visible := 0
	for _, f := range rep.Errors {
		if !schemaBlind(f) {
			visible++
		}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("generated document is not JSON: %v\n%s", err, raw)
	}
	schemaErr := sch.Validate(inst)
	if (schemaErr == nil) != (visible == 0) {
		t.Errorf("schema and validator disagree on\n%s\nschema: %v\nvalidator errors: %v", raw, schemaErr, rep.Errors)
	}
	return rep.Valid
}

// TestSchemaAgreesWithValidator is the differential test: thousands of generated templates,
// valid ones and mutated ones, get the same verdict from the JSON schema (compiled by
// santhosh-tekuri/jsonschema) and from Validate. The catalog knows every tool class and every
// generated setting, so catalog rules do not decide anything.
func TestSchemaAgreesWithValidator(t *testing.T) {
	t.Parallel()
	sch := compileSchema(t)
	cat := testCatalog()
	cat.anyTool = true
	g := &generator{r: rand.New(rand.NewPCG(20240611, 42))}
	valid, invalid := 0, 0
	for i := range 6000 {
		doc := g.template()
		for range g.r.IntN(4) {
			g.mutate(doc)
		}
		raw, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if agree(t, sch, cat, raw) {
			valid++
		} else {
			invalid++
		}
		if t.Failed() {
			t.Fatalf("case %d failed", i)
		}
	}
	// The generator must exercise both outcomes substantially.
	if valid < 1200 || invalid < 1200 {
		t.Errorf("poor mix: %d valid, %d invalid", valid, invalid)
	}
	t.Logf("%d valid, %d invalid", valid, invalid)
}

// TestSchemaAgreesOnTable runs the hand-made cases of TestValidateCodes through the schema.
func TestSchemaAgreesOnTable(t *testing.T) {
	t.Parallel()
	sch := compileSchema(t)
	cat := testCatalog()
	cat.anyTool = true
	for _, tc := range codeCases {
		in := tc.input(t)
		rep := agenttemplate.Validate(in, cat)
		if len(rep.Errors) > 0 && (rep.Errors[0].Code == agenttemplate.CodeParseError || rep.Errors[0].Code == agenttemplate.CodeEmptyPayload) {
			continue // not a JSON document the schema could judge
		}
		t.Run(tc.name, func(t *testing.T) { agree(t, sch, cat, in.Raw) })
	}
}

// generator produces random templates: template() a valid one, mutate() a random change that
// may or may not break it.
type generator struct{ r *rand.Rand }

func (g *generator) chance(p float64) bool { return g.r.Float64() < p }

func (g *generator) pick(options ...any) any { return options[g.r.IntN(len(options))] }

// text returns a string of exactly n characters, sometimes multi-byte.
func (g *generator) text(n int) string {
	alphabets := []string{"abcdefghij klmnop", "éßж漢😀 x", "a\"\\\n\t/~"}
	al := []rune(alphabets[g.r.IntN(len(alphabets))])
	var b strings.Builder
	for range n {
		b.WriteRune(al[g.r.IntN(len(al))])
	}
	return b.String()
}

func (g *generator) slug(maxLen int) string {
	const first, rest = "abcdefghijklmnopqrstuvwxyz0123456789", "abcdefghijklmnopqrstuvwxyz0123456789_-"
	n := 1 + g.r.IntN(maxLen)
	b := []byte{first[g.r.IntN(len(first))]}
	for len(b) < n {
		b = append(b, rest[g.r.IntN(len(rest))])
	}
	return string(b)
}

func (g *generator) plugin() string {
	part := func() string {
		const edge, mid = "abcdefghijklmnopqrstuvwxyz0123456789", "abcdefghijklmnopqrstuvwxyz0123456789._-"
		s := string(edge[g.r.IntN(len(edge))])
		if g.chance(0.5) {
			for range g.r.IntN(6) {
				s += string(mid[g.r.IntN(len(mid))])
			}
			s += string(edge[g.r.IntN(len(edge))])
		}
		return s
	}
	return part() + "/" + part()
}

func (g *generator) template() map[string]any {
	m := map[string]any{
		"id":      g.slug(64),
		"name":    g.text(1 + g.r.IntN(200)),
		"version": g.pick("1.0.0", "0.0.1", "10.20.30", "1.0.0-beta.1", "2.1.3+build.5", "1.2.3-x y"),
		"agent":   g.agent(),
	}
	if g.chance(0.5) {
		m["id"] = g.slug(64) + "/" + g.slug(64)
	}
	if g.chance(0.3) {
		m["$schema"] = testSchemaURL
	}
	if g.chance(0.5) {
		m["description"] = g.text(g.r.IntN(1001))
	}
	if g.chance(0.8) {
		var tools []any
		used := map[string]bool{}
		for range g.r.IntN(4) {
			tl := g.tool()
			if c := tl["tool_class"].(string); !used[c] {
				used[c] = true
				tools = append(tools, tl)
			}
		}
		m["tools"] = append([]any{}, tools...)
	}
	if g.chance(0.4) {
		var plugins []any
		for range g.r.IntN(3) {
			plugins = append(plugins, g.plugin())
		}
		m["required_plugins"] = append([]any{}, plugins...)
	}
	if g.chance(0.6) {
		m["metadata"] = g.metadata()
	}
	return m
}

func (g *generator) agent() map[string]any {
	a := map[string]any{}
	if g.chance(0.5) {
		a["description"] = g.text(g.r.IntN(2001))
	}
	if g.chance(0.8) {
		a["system_prompt"] = g.text(g.r.IntN(300))
	}
	if g.chance(0.3) {
		a["notes"] = g.text(g.r.IntN(3000))
	}
	if g.chance(0.6) {
		a["max_steps"] = g.pick(1, 10, 100, 1+g.r.IntN(100), json.Number("10.0"), json.Number("1e1"), json.Number("1E2"))
	}
	if g.chance(0.5) {
		a["allow_followup"] = g.chance(0.5)
	}
	for _, k := range []string{"retry_after_minutes", "max_retries"} {
		if g.chance(0.4) {
			a[k] = g.pick(0, 3, 2147483647, json.Number("-0"), json.Number("5.00"))
		}
	}
	return a
}

func (g *generator) tool() map[string]any {
	tl := map[string]any{
		"tool_class": g.pick("core.TimeTool", "core.ReadURLTool", "acme.WeatherTool", g.text(1+g.r.IntN(200))).(string),
		"enabled":    g.chance(0.7),
	}
	var ops []any
	for range g.r.IntN(4) {
		op := map[string]any{"name": g.pick("now", "format", "fetch", g.text(1+g.r.IntN(100)))}
		if g.chance(0.5) {
			op["enabled"] = g.chance(0.5)
		}
		if g.chance(0.5) {
			op["auto_approve"] = g.chance(0.5)
		}
		ops = append(ops, op)
	}
	tl["operations"] = append([]any{}, ops...)
	if g.chance(0.4) {
		s := map[string]any{}
		for _, kv := range []struct {
			k string
			v func() any
		}{
			{"endpoint", func() any { return "https://x.example" }},
			{"region", func() any { return g.text(5) }},
			{"days", func() any { return g.pick(0, 7, json.Number("3.0")) }},
			{"ratio", func() any { return g.pick(0.5, 2, json.Number("1e-3")) }},
			{"verbose", func() any { return g.chance(0.5) }},
			{"cities", func() any { return []any{"Oslo", g.text(3)} }},
			{"ids", func() any { return []any{1, 2} }},
			{"extra", func() any { return map[string]any{"x": []any{nil, 1.5}} }},
		} {
			if g.chance(0.4) {
				s[kv.k] = kv.v()
			}
		}
		tl["settings"] = s
	}
	return tl
}

func (g *generator) metadata() map[string]any {
	md := map[string]any{}
	if g.chance(0.5) {
		md["category"] = g.pick("research", "general", "fun", "", g.text(g.r.IntN(65))).(string)
	}
	if g.chance(0.5) {
		md["icon"] = g.pick("puzzle", "book", "", g.text(g.r.IntN(65))).(string)
	}
	if g.chance(0.5) {
		md["archetype"] = g.pick("assistant", "researcher", "analyst", "writer", "coder", "explorer", "advisor", "creative")
	}
	if g.chance(0.5) {
		md["variant_key"] = g.pick("v0", "v1", "v2")
	}
	if g.chance(0.5) {
		md["palette_key"] = g.pick("slate", "red", "orange", "amber", "green", "teal", "blue", "indigo", "violet", "pink")
	}
	return md
}

// interesting returns a value near some rule's boundary, of any JSON type.
func (g *generator) interesting() any {
	switch g.r.IntN(5) {
	case 0:
		return g.pick(nil, true, false, map[string]any{}, []any{}, []any{"x"}, []any{1},
			[]any{"acme/weather", "Bad/Name"}, map[string]any{"name": "now"},
			map[string]any{"tool_class": "core.TimeTool", "enabled": true, "operations": []any{}},
			map[string]any{"system_prompt": "p"}, map[string]any{"x": 1})
	case 1:
		return g.pick(0, 1, -1, 2, 64, 100, 101, 1.5, 2147483647, 2147483648, json.Number("10.0"),
			json.Number("1e1"), json.Number("1e400"), json.Number("-0"), json.Number("100.000"), json.Number("1e-400"))
	case 2:
		return g.pick("", "x", "core/x", "a/b/c", "Core", "-a", "a_", "a/", "/a", "core.TimeTool",
			"1.0.0", "1.0", "v1.0.0", "1.0.0-", "1.0.0+", "1.0.0-rc.1", "01.2.3", "1.2.3\n", "1.2.3-a\nb",
			"acme/weather", "a./b", "a/b.", "a//b", "ab", "A/b", "research", "fun", "assistant", "wizard",
			"v0", "v2", "v3", "teal", "beige", "puzzle", "now", "true", "null")
	case 3:
		n := g.pick(63, 64, 65, 99, 100, 101, 129, 130, 131, 199, 200, 201, 999, 1000, 1001, 1999, 2000, 2001, 2048, 2049).(int)
		return g.text(n)
	default:
		id := g.slug(64)
		if g.chance(0.5) {
			id = strings.Repeat("a", 64) + "/" + g.slug(65)
		}
		return id
	}
}

var levelKeys = map[string][]string{
	"root":      {"$schema", "id", "name", "description", "version", "agent", "tools", "required_plugins", "metadata"},
	"agent":     {"description", "system_prompt", "notes", "max_steps", "allow_followup", "retry_after_minutes", "max_retries"},
	"tool":      {"tool_class", "enabled", "operations", "settings"},
	"operation": {"name", "enabled", "auto_approve"},
	"metadata":  {"category", "icon", "archetype", "variant_key", "palette_key"},
	"settings":  {"endpoint", "region", "days", "ratio", "verbose", "cities", "ids", "extra", "api_key", "unknown"},
}

// mutate changes one random place of doc: deletes a key, sets a known or unknown key to an
// interesting value, or replaces, appends or duplicates a list element.
func (g *generator) mutate(doc map[string]any) {
	type place struct {
		level string
		obj   map[string]any
		list  []any
		set   func([]any) // stores a changed list back
	}
	places := []place{{level: "root", obj: doc}}
	if a, ok := doc["agent"].(map[string]any); ok {
		places = append(places, place{level: "agent", obj: a})
	}
	if md, ok := doc["metadata"].(map[string]any); ok {
		places = append(places, place{level: "metadata", obj: md})
	}
	if rp, ok := doc["required_plugins"].([]any); ok {
		places = append(places, place{level: "plugins", list: rp, set: func(l []any) { doc["required_plugins"] = l }})
	}
	if tools, ok := doc["tools"].([]any); ok {
		places = append(places, place{level: "tools", list: tools, set: func(l []any) { doc["tools"] = l }})
		for _, e := range tools {
			tl, ok := e.(map[string]any)
			if !ok {
				continue
			}
			places = append(places, place{level: "tool", obj: tl})
			if s, ok := tl["settings"].(map[string]any); ok {
				places = append(places, place{level: "settings", obj: s})
			}
			if ops, ok := tl["operations"].([]any); ok {
				places = append(places, place{level: "operations", list: ops, set: func(l []any) { tl["operations"] = l }})
				for _, o := range ops {
					if op, ok := o.(map[string]any); ok {
						places = append(places, place{level: "operation", obj: op})
					}
				}
			}
		}
	}
	p := places[g.r.IntN(len(places))]
	if p.obj != nil {
		keys := levelKeys[p.level]
		key := keys[g.r.IntN(len(keys))]
		switch g.r.IntN(10) {
		case 0, 1:
			delete(p.obj, key)
		case 2:
			p.obj[g.pick("extra", "Name", "tool_class", "settings", "x-"+g.slug(5)).(string)] = g.interesting()
		case 3, 4:
			p.obj[key] = g.interesting()
		default:
			p.obj[key] = g.boundary(p.level, key)
		}
		return
	}
	l := p.list
	elem := func() any {
		if g.chance(0.4) {
			return g.interesting()
		}
		return g.boundary(p.level, "")
	}
	switch {
	case len(l) > 0 && g.chance(0.3): // duplicate an element (a duplicate tool class)
		l = append(l, deepCopy(l[g.r.IntN(len(l))]))
	case len(l) > 0 && g.chance(0.5):
		l[g.r.IntN(len(l))] = elem()
	default:
		l = append(l, elem())
	}
	p.set(l)
}

// boundary returns a value aimed at the rules of one key (or of the elements of a list): just
// inside and just outside its limits, and of neighbouring wrong types.
func (g *generator) boundary(level, key string) any {
	lengths := func(ns ...int) any { return g.text(ns[g.r.IntN(len(ns))]) }
	wrong := func() any { return g.pick(nil, 1, "1", true, []any{}, map[string]any{}) }
	if g.chance(0.15) {
		return wrong()
	}
	switch level + "." + key {
	case "root.$schema":
		return lengths(0, 2048, 2049)
	case "root.id":
		return g.pick(strings.Repeat("a", 64), strings.Repeat("b", 65), strings.Repeat("a", 64)+"/"+strings.Repeat("b", 64),
			strings.Repeat("a", 65)+"/b", "a/"+strings.Repeat("b", 65), strings.Repeat("c", 130), strings.Repeat("c", 131),
			"", "A", "a-", "_a", "a/b/c", "a/", g.slug(64)+"/"+g.slug(64), "9", "é")
	case "root.name":
		return lengths(0, 1, 200, 201)
	case "root.description":
		return lengths(0, 1000, 1001)
	case "root.version":
		return g.pick("1.0.0", "1.0", "1.0.0-", "1.0.0+b", "1.0.0-é", "1.0.0\n", "1.0.0-a\nb", "v1.0.0", "1.0.0.0", "1..0", "")
	case "root.agent":
		return g.pick(map[string]any{}, g.agent(), "x", []any{})
	case "root.tools":
		return g.pick([]any{}, []any{g.tool()}, []any{g.tool(), g.tool()}, map[string]any{})
	case "root.required_plugins":
		return g.pick([]any{}, []any{g.plugin()}, []any{"a/b", "Ab/c"}, "a/b")
	case "root.metadata":
		return g.pick(map[string]any{}, g.metadata(), []any{})
	case "agent.description":
		return lengths(0, 2000, 2001)
	case "agent.system_prompt":
		return lengths(0, 1, 50)
	case "agent.notes":
		if g.chance(0.1) {
			return lengths(200000, 200001)
		}
		return lengths(0, 10)
	case "agent.max_steps":
		return g.pick(0, 1, 2, 99, 100, 101, -1, 1.5, json.Number("100.0"), json.Number("1e2"), json.Number("1.01e2"),
			json.Number("0.1e1"), json.Number("1e400"), json.Number("-0"), json.Number("1e-400"))
	case "agent.allow_followup":
		return g.pick(true, false)
	case "agent.retry_after_minutes", "agent.max_retries":
		return g.pick(-1, 0, 1, 2147483647, 2147483648, 1.5, json.Number("2147483647.0"), json.Number("2.147483647e9"),
			json.Number("2.147483648e9"), json.Number("-0.0"), json.Number("1e400"))
	case "tools.":
		return g.pick(g.tool(), "core.TimeTool", map[string]any{})
	case "tool.tool_class":
		return g.pick(lengths(0, 1, 200, 201), "core.TimeTool", "acme.WeatherTool")
	case "tool.enabled", "operation.enabled", "operation.auto_approve":
		return g.pick(true, false)
	case "tool.operations":
		return g.pick([]any{}, []any{map[string]any{"name": "now"}}, map[string]any{"name": "now"})
	case "tool.settings":
		return g.pick(map[string]any{}, map[string]any{"days": 1}, []any{}, "x")
	case "operations.":
		return g.pick(map[string]any{"name": lengths(1, 100)}, "now", map[string]any{}, map[string]any{"name": "now", "enabled": 1})
	case "operation.name":
		return lengths(0, 1, 100, 101)
	case "metadata.category", "metadata.icon":
		return g.pick(lengths(0, 1, 64, 65), "research", "puzzle")
	case "metadata.archetype":
		return g.pick("assistant", "creative", "Assistant", "wizard", "")
	case "metadata.variant_key":
		return g.pick("v0", "v2", "v3", "V1", "")
	case "metadata.palette_key":
		return g.pick("slate", "pink", "beige", "Teal", "")
	case "plugins.":
		return g.pick(g.plugin(), "a/b", "a.b/c_d-e", "a-/b", "-a/b", "a/b.", "a//b", "a/b/c", "A/b", "ab", "é/b", "")
	}
	return g.interesting() // settings values and anything else
}

func deepCopy(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprint(err))
	}
	return out
}
