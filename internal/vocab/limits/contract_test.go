package limits_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentsvc/svc/internal/vocab/limits"
)

// bound is what the contract must say of one schema: each non-nil field is compared with the
// keyword of the same name, and a keyword that is expected must be present.
type bound struct {
	Minimum, Maximum, Default, MinLength, MaxLength, MaxItems, MaxProperties *int
}

func (b bound) String() string {
	var parts []string
	for _, f := range b.fields() {
		if f.want != nil {
			parts = append(parts, fmt.Sprintf("%s %d", f.key, *f.want))
		}
	}
	return strings.Join(parts, ", ")
}

type field struct {
	key  string
	want *int
}

func (b bound) fields() []field {
	return []field{{"minimum", b.Minimum}, {"maximum", b.Maximum}, {"default", b.Default},
		{"minLength", b.MinLength}, {"maxLength", b.MaxLength}, {"maxItems", b.MaxItems},
		{"maxProperties", b.MaxProperties}}
}

func n(v int) *int { return &v }

// steps is the bound of every step budget; an agent's max_steps also states its default.
var steps = bound{Minimum: n(limits.MinSteps), Maximum: n(limits.MaxSteps)}

// byName holds the bounds that apply to every schema property, and every parameter, of that
// name wherever it appears in either document: the default is checked where the contract
// states one.
var byName = map[string]bound{
	"max_steps":          steps,
	"additional_steps":   steps,
	"max_steps_override": steps,
	"per_page":           {Minimum: n(1), Maximum: n(limits.MaxPerPage), Default: n(limits.DefaultPerPage)},
}

// optionalDefault lists the names of byName whose default the contract may leave out (a
// request's max_steps defaults to the agent's, not to a constant).
var optionalDefault = map[string]bool{"max_steps": true, "additional_steps": true, "max_steps_override": true}

// defaults are the defaults byName's optional ones must have where the contract states them.
var defaults = map[string]int{"max_steps": limits.DefaultSteps}

// clamped are the step budgets of the per-agent API, which are clamped to the bounds, never
// refused: their schemas carry no bound, their descriptions say "clamped to MinSteps..MaxSteps".
var clamped = []string{
	"StartAgentChatRequest/properties/max_steps",
	"StartAgentChatRequest/properties/additional_steps",
	"SendAgentChatMessageRequest/properties/additional_steps",
}

// unbounded are the sites of byName's names that carry none of its bounds, and why.
var unbounded = map[string]string{
	"Task/properties/max_steps": "a task's budget grows with each continuation (steps_used + additional_steps)",
}

// component returns the key of clamped or unbounded that names s, or "".
func component(s site, keys []string) string {
	for _, k := range keys {
		if strings.HasSuffix(s.where, "/schemas/"+k) {
			return k
		}
	}
	return ""
}

// site is one schema the walk found: the name it carries (property or parameter) and where.
type site struct {
	name, where string
	schema      map[string]any
}

// sites walks doc and returns every schema property (at any depth) and every parameter's
// schema, named by the property or parameter name.
func sites(doc any, where string) []site {
	var out []site
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				for name, p := range props {
					if s, ok := p.(map[string]any); ok {
						out = append(out, site{name, path + "/properties/" + name, s})
					}
				}
			}
			if name, ok := v["name"].(string); ok {
				if s, ok := v["schema"].(map[string]any); ok && v["in"] != nil {
					out = append(out, site{name, path + "/schema", s})
				}
			}
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if k != "example" && k != "examples" {
					walk(v[k], path+"/"+k)
				}
			}
		case []any:
			for i, e := range v {
				walk(e, fmt.Sprintf("%s/%d", path, i))
			}
		}
	}
	walk(doc, where)
	return out
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func load(t *testing.T, name string) any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(raw, &doc); err != nil { // JSON is YAML too
		t.Fatalf("%s: %v", name, err)
	}
	return doc
}

// check compares the keywords of s with want and reports every difference.
func check(t *testing.T, s site, want bound, defaultOptional bool) {
	t.Helper()
	for _, f := range want.fields() {
		if f.want == nil {
			continue
		}
		got, ok := s.schema[f.key]
		if !ok {
			if f.key == "default" && defaultOptional {
				continue
			}
			t.Errorf("%s: no %s (the code uses %d)", s.where, f.key, *f.want)
			continue
		}
		if i, isInt := got.(int); !isInt || i != *f.want {
			t.Errorf("%s: %s is %v, the code uses %d", s.where, f.key, got, *f.want)
		}
	}
}

// TestContractSaysTheSame fails when openapi.yaml or agent-template.schema.json states a bound
// of byName differently from the constant the code uses, or no longer states it at all.
func TestContractSaysTheSame(t *testing.T) {
	found := map[string]int{}
	for _, name := range []string{"openapi.yaml", "agent-template.schema.json"} {
		for _, s := range sites(load(t, name), name+"#") {
			want, ok := byName[s.name]
			if !ok {
				continue
			}
			found[s.name]++
			if component(s, clamped) != "" {
				desc, _ := s.schema["description"].(string)
				if say := fmt.Sprintf("clamped to %d..%d", limits.MinSteps, limits.MaxSteps); !strings.Contains(desc, say) {
					t.Errorf("%s: the description does not say %q: %q", s.where, say, desc)
				}
				continue
			}
			if component(s, keysOf(unbounded)) != "" {
				continue
			}
			if d, ok := defaults[s.name]; ok {
				want.Default = n(d)
			}
			check(t, s, want, optionalDefault[s.name])
		}
	}
	for name := range byName {
		if found[name] == 0 {
			t.Errorf("the contract states no %s any more: update byName", name)
		}
	}
}

// maxLen is a bound on a string's length.
func maxLen(v int) bound { return bound{MaxLength: n(v)} }

// in is a bound on a number.
func in(lo, hi int) bound { return bound{Minimum: n(lo), Maximum: n(hi)} }

// oas names schema properties of openapi.yaml's components: "Schema.property" each.
func oas(props ...string) []string {
	out := make([]string, len(props))
	for i, p := range props {
		schema, prop, _ := strings.Cut(p, ".")
		out[i] = "openapi.yaml#/components/schemas/" + schema + "/properties/" + prop
	}
	return out
}

// tpl names schemas of agent-template.schema.json by their JSON pointer.
func tpl(pointers ...string) []string {
	out := make([]string, len(pointers))
	for i, p := range pointers {
		out[i] = "agent-template.schema.json#" + p
	}
	return out
}

func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// exact are the other bounds the contract states and the code checks again, each with every
// schema that states it (a property of the same name elsewhere may mean something else: a
// group's name is not an agent's).
var exact = []struct {
	constant string
	b        bound
	at       []string
}{
	{"EmailLen", maxLen(limits.EmailLen), oas("AddGroupMemberRequest.email", "CreateUserRequest.email",
		"EmailChangeRequest.new_email", "ForgotPasswordRequest.email", "LoginRequest.email", "RegisterRequest.email",
		"ReplaceUserRequest.email", "UpdateUserRequest.email", "SendTestMailRequest.to", "UpdateMailConfigRequest.from_address")},
	{"DisplayNameLen", maxLen(limits.DisplayNameLen), oas("CreateUserRequest.display_name", "RegisterRequest.display_name",
		"ReplaceUserRequest.display_name", "UpdateAccountRequest.display_name", "UpdateUserRequest.display_name")},
	{"MinPasswordLen, MaxPasswordLen", bound{MinLength: n(limits.MinPasswordLen), MaxLength: n(limits.MaxPasswordLen)},
		oas("ChangePasswordRequest.new_password", "CreateUserRequest.password", "RegisterRequest.password",
			"ReplaceUserRequest.password", "ResetPasswordRequest.new_password", "UpdateUserRequest.password")},
	{"MaxPasswordLen", maxLen(limits.MaxPasswordLen), oas("ChangePasswordRequest.current_password",
		"EmailChangeRequest.password", "LoginRequest.password")},
	{"ProfileNameLen", maxLen(limits.ProfileNameLen), oas("ProfileInput.first_name", "ProfileInput.last_name", "LocationInput.name")},
	{"LocaleLen", maxLen(limits.LocaleLen), oas("ProfileInput.locale")},
	{"BioLen", maxLen(limits.BioLen), oas("ProfileInput.bio")},
	{"TimezoneLen", maxLen(limits.TimezoneLen), oas("ProfileInput.timezone", "ScheduledRunRequest.timezone")},
	{"AddressLen", maxLen(limits.AddressLen), oas("LocationInput.address")},

	{"AgentNameLen", maxLen(limits.AgentNameLen), join(oas("Agent.name", "CreateAgentRequest.name",
		"UpdateAgentRequest.name", "AgentTemplateDocument.name"), tpl("/properties/name"))},
	{"AgentDescriptionLen", maxLen(limits.AgentDescriptionLen), join(oas("Agent.description",
		"CreateAgentRequest.description", "UpdateAgentRequest.description", "AgentTemplateDocumentAgent.description"),
		tpl("/$defs/agent/properties/description"))},
	{"AgentNotesLen", maxLen(limits.AgentNotesLen), join(oas("Agent.notes", "CreateAgentRequest.notes",
		"UpdateAgentRequest.notes", "AgentTemplateDocumentAgent.notes"), tpl("/$defs/agent/properties/notes"))},
	{"TemplateIDLen", maxLen(limits.TemplateIDLen), join(oas("AgentTemplateDocument.id"), tpl("/properties/id"),
		[]string{"openapi.yaml#/components/parameters/AgentTemplatesIdPath/schema"})},
	{"TemplateDescriptionLen", maxLen(limits.TemplateDescriptionLen), join(oas("AgentTemplateDocument.description"),
		tpl("/properties/description"))},
	{"TemplateMetadataLen", maxLen(limits.TemplateMetadataLen), join(oas("AgentTemplateDocumentMetadata.category",
		"AgentTemplateDocumentMetadata.icon"), tpl("/$defs/metadata/properties/category", "/$defs/metadata/properties/icon"))},
	{"ToolClassLen", maxLen(limits.ToolClassLen), join(oas("AgentTemplateDocumentTool.tool_class"),
		tpl("/$defs/tool/properties/tool_class"))},
	{"OperationNameLen", maxLen(limits.OperationNameLen), join(oas("AgentTemplateDocumentOperation.name"),
		tpl("/$defs/operation/properties/name"))},
	{"URLLen", maxLen(limits.URLLen), join(oas("AgentTemplateDocument.$schema", "CreateLlmConfigRequest.base_url",
		"UpdateLlmConfigRequest.base_url", "StartAgentChatRequest.callback_url"), tpl("/properties/$schema"))},

	{"GroupNameLen", maxLen(limits.GroupNameLen), oas("CreateGroupRequest.name", "UpdateGroupRequest.name")},
	{"GroupDescriptionLen", maxLen(limits.GroupDescriptionLen), oas("CreateGroupRequest.description", "UpdateGroupRequest.description")},
	{"LLMConfigNameLen", maxLen(limits.LLMConfigNameLen), oas("CreateLlmConfigRequest.name", "UpdateLlmConfigRequest.name")},
	{"LLMModelLen", maxLen(limits.LLMModelLen), oas("CreateLlmConfigRequest.model", "UpdateLlmConfigRequest.model")},
	{"LLMAPIKeyLen", maxLen(limits.LLMAPIKeyLen), oas("CreateLlmConfigRequest.api_key", "UpdateLlmConfigRequest.api_key")},
	{"MaxLLMTemperature", in(0, limits.MaxLLMTemperature), oas("CreateLlmConfigRequest.temperature", "UpdateLlmConfigRequest.temperature")},
	{"MaxLLMTokensOutput", in(1, limits.MaxLLMTokensOutput), oas("CreateLlmConfigRequest.max_tokens_output", "UpdateLlmConfigRequest.max_tokens_output")},
	{"MaxLLMContextWindow", in(1, limits.MaxLLMContextWindow), oas("CreateLlmConfigRequest.context_window", "UpdateLlmConfigRequest.context_window")},
	{"MaxLLMTimeoutSeconds", in(1, limits.MaxLLMTimeoutSeconds), oas("CreateLlmConfigRequest.timeout", "UpdateLlmConfigRequest.timeout")},
	{"APIKeyNameLen", maxLen(limits.APIKeyNameLen), oas("CreateAgentApiKeyRequest.name")},

	{"PromptTemplateNameLen", maxLen(limits.PromptTemplateNameLen), oas("PromptTemplateRequest.name")},
	{"PromptTemplateDescriptionLen", maxLen(limits.PromptTemplateDescriptionLen), oas("PromptTemplateRequest.description")},
	{"PromptTemplateTextLen", maxLen(limits.PromptTemplateTextLen), oas("PromptTemplateRequest.template")},
	{"PromptVariables", bound{MaxItems: n(limits.PromptVariables)}, oas("PromptTemplateRequest.variables")},
	{"PromptVariables", bound{MaxProperties: n(limits.PromptVariables)}, oas("ScheduledRunRequest.variables")},
	{"PromptVariableKeyLen", maxLen(limits.PromptVariableKeyLen), oas("PromptTemplateVariable.key")},
	{"PromptVariableValueLen", maxLen(limits.PromptVariableValueLen), join(oas("PromptTemplateVariable.default_value"),
		[]string{"openapi.yaml#/components/schemas/ScheduledRunRequest/properties/variables/additionalProperties"})},
	{"ScheduleNameLen", maxLen(limits.ScheduleNameLen), oas("ScheduledRunRequest.name")},
	{"CronLen", maxLen(limits.CronLen), oas("ScheduledRunRequest.cron_expression")},

	{"SelectorLen", maxLen(limits.SelectorLen), join(oas("ResetPasswordRequest.selector", "TokenConfirmRequest.selector"),
		[]string{"openapi.yaml#/paths/~1auth~1verify~1{selector}/get/parameters/0/schema"})},
	{"FilenameLen", maxLen(limits.FilenameLen), oas("ChatInlineFile.filename")},
	{"DefaultSearchHits, MaxSearchHits", bound{Minimum: n(1), Maximum: n(limits.MaxSearchHits), Default: n(limits.DefaultSearchHits)},
		[]string{"openapi.yaml#/paths/~1search/get/parameters/1/schema"}},
	{"HostLen", maxLen(limits.HostLen), oas("UpdateMailConfigRequest.host")},
	{"MaxPort", in(1, limits.MaxPort), oas("UpdateMailConfigRequest.port")},
	{"MaxDerivativeSide", in(1, limits.MaxDerivativeSide), oas("CreateMediaDerivativeRequest.width", "CreateMediaDerivativeRequest.height")},
	{"MinQuality, MaxQuality", in(limits.MinQuality, limits.MaxQuality), oas("CreateMediaDerivativeRequest.quality")},
}

// pointer returns the schema at JSON pointer p of doc, or nil.
func pointer(doc any, p string) map[string]any {
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		switch v := cur.(type) {
		case map[string]any:
			cur = v[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			cur = v[i]
		default:
			return nil
		}
	}
	m, _ := cur.(map[string]any)
	return m
}

// TestContractStatesEachLimit fails when a schema of exact states its bound differently from
// the constant, or is gone (then the table names a schema the contract no longer has).
func TestContractStatesEachLimit(t *testing.T) {
	docs := map[string]any{}
	for _, name := range []string{"openapi.yaml", "agent-template.schema.json"} {
		docs[name] = load(t, name)
	}
	for _, e := range exact {
		for _, at := range e.at {
			name, p, _ := strings.Cut(at, "#")
			schema := pointer(docs[name], p)
			if schema == nil {
				t.Errorf("%s (%s): no such schema", at, e.constant)
				continue
			}
			check(t, site{where: at + " (limits." + e.constant + ")", schema: schema}, e.b, false)
		}
	}
}
