package agenttemplate

import (
	"errors"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentsvc/svc/internal/domain/toolpolicy"
	"github.com/agentsvc/svc/internal/vocab/svcerr"

	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/store"
)

// Limits of the format (document 2 and openapi.yaml's AgentTemplateDocument) beyond the lengths
// and step budget of internal/vocab/limits. Lengths count characters (Unicode code points), as JSON
// Schema does.
const (
	maxCount           = math.MaxInt32 // retry_after_minutes, max_retries
	namespaceSeparator = "/"
)

var (
	idPattern      = regexp.MustCompile(`^([a-z0-9][a-z0-9_-]{0,63}/)?[a-z0-9][a-z0-9_-]{0,63}$`)
	versionPattern = regexp.MustCompile(`^[0-9]+[.][0-9]+[.][0-9]+([+-].+)?$`)
	pluginPattern  = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?/[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?$`)

	topKeys   = []string{"$schema", "id", "name", "description", "version", "agent", "tools", "required_plugins", "metadata"}
	agentKeys = []string{"description", "system_prompt", "notes", "max_steps", "allow_followup", "retry_after_minutes", "max_retries",
		"compaction_enabled", "compaction_threshold_percent", "compaction_answer_reserve", "tool_result_max_chars", "memories",
		"approvers", "approval_timeout_seconds", "approval_timeout_action"}
	toolKeys     = []string{"tool_class", "enabled", "operations", "settings", "approval_policy"}
	operationKey = []string{"name", "enabled", "auto_approve", "approval_timeout_seconds"}
	metadataKeys = []string{"category", "icon", "archetype", "variant_key", "palette_key"}
)

// Validate checks a template document and reports every error and warning of document 2 that
// applies, never stopping at the first (at most 500 of each are listed). With a nil catalog the
// catalog rules (tool classes, operations, settings, skills, plugins) are skipped. Validate
// never fails: unusable input is itself a finding (EMPTY_PAYLOAD, PARSE_ERROR).
func Validate(input Input, cat Catalog) Report {
	_, rep := validate(input, cat)
	return rep
}

func validate(input Input, cat Catalog) (*node, Report) {
	w := &walker{cat: cat, source: input.Source}
	root, err := parseDocument(input.Raw, syntaxOf(input.ContentType))
	switch {
	case errors.Is(err, errEmpty):
		w.c.add(CodeEmptyPayload, "", "the template is empty")
		return nil, w.c.report()
	case err != nil:
		w.c.add(CodeParseError, "", "the template cannot be parsed: %v", err)
		return nil, w.c.report()
	case root.kind != kindObject:
		w.c.add(CodeParseError, "", "the template must be an object (a mapping in YAML), not %s", root.kind)
		return nil, w.c.report()
	}
	w.root(root)
	return root, w.c.report()
}

type walker struct {
	c      collector
	cat    Catalog
	source string
}

func runes(s string) int { return utf8.RuneCountInString(s) }

func isNull(n *node, present bool) bool { return !present || n.kind == kindNull }

// isString reports whether n is a string of at most max characters (and at least min).
func isString(n *node, minLen, maxLen int) bool {
	if n.kind != kindString {
		return false
	}
	l := runes(n.s)
	return l >= minLen && l <= maxLen
}

// unknownKeys reports the keys of object n that are not in known.
func (w *walker) unknownKeys(n *node, base string, known []string, code, where string) {
	for _, k := range n.keys {
		if !slices.Contains(known, k) {
			w.c.add(code, pointer(base, k), "unknown key %s in %s", quote(k), where)
		}
	}
}

func (w *walker) root(n *node) {
	if v, ok := n.get("$schema"); ok && !isString(v, 0, limits.URLLen) {
		w.c.add(CodeUnknownTopLevelKey, "/$schema",
			"$schema must be the schema address, a string of at most %d characters", limits.URLLen)
	}
	w.id(n)

	v, ok := n.get("name")
	switch {
	case isNull(v, ok):
		w.c.add(CodeNameRequired, "/name", "name is required")
	case !isString(v, 1, limits.AgentNameLen):
		w.c.add(CodeNameInvalid, "/name", "name must be a string of 1 to %d characters", limits.AgentNameLen)
	}
	if v, ok := n.get("description"); ok && !isString(v, 0, limits.TemplateDescriptionLen) {
		w.c.add(CodeNameInvalid, "/description", "description must be a string of at most %d characters", limits.TemplateDescriptionLen)
	}

	v, ok = n.get("version")
	switch {
	case isNull(v, ok):
		w.c.add(CodeVersionRequired, "/version", "version is required")
	case v.kind != kindString:
		w.c.add(CodeVersionInvalid, "/version", "version must be a string, not %s", v.kind)
	case !versionPattern.MatchString(v.s):
		w.c.add(CodeVersionPattern, "/version", "version %s is not semver (MAJOR.MINOR.PATCH)", quote(v.s))
	}

	v, ok = n.get("agent")
	switch {
	case isNull(v, ok):
		w.c.add(CodeAgentRequired, "/agent", "agent is required")
	case v.kind != kindObject:
		w.c.add(CodeAgentRequired, "/agent", "agent must be an object, not %s", v.kind)
	default:
		w.agent(v)
	}

	if v, ok := n.get("tools"); ok {
		w.tools(v)
	}
	if v, ok := n.get("required_plugins"); ok {
		w.requiredPlugins(v)
	}
	if v, ok := n.get("metadata"); ok {
		w.metadata(v)
	}
	w.unknownKeys(n, "", topKeys, CodeUnknownTopLevelKey, "the template")
}

func (w *walker) id(n *node) {
	v, ok := n.get("id")
	switch {
	case isNull(v, ok):
		w.c.add(CodeIDRequired, "/id", "id is required")
	case v.kind != kindString:
		w.c.add(CodeIDInvalid, "/id", "id must be a string, not %s", v.kind)
	case runes(v.s) < 1 || runes(v.s) > limits.TemplateIDLen:
		w.c.add(CodeIDInvalid, "/id", "id must be 1 to %d characters long", limits.TemplateIDLen)
	case !idPattern.MatchString(v.s):
		w.c.add(CodeIDPattern, "/id",
			`id %s must be "<slug>" or "<source>/<slug>": each part lowercase letters, digits, "_" and "-", starting with a letter or digit, at most 64 characters`,
			quote(v.s))
	case w.source != "" && w.source != SourceCore && w.source != SourceUploaded &&
		!strings.HasPrefix(v.s, w.source+namespaceSeparator):
		w.c.add(CodeNamespaceMismatch, "/id", "templates of %s must have ids starting with %s", quote(w.source),
			quote(w.source+namespaceSeparator))
	}
}

func (w *walker) agent(n *node) {
	if v, ok := n.get("description"); ok && !isString(v, 0, limits.AgentDescriptionLen) {
		w.c.add(CodeAgentRequired, "/agent/description",
			"agent.description must be a string of at most %d characters", limits.AgentDescriptionLen)
	}
	v, ok := n.get("system_prompt")
	switch {
	case ok && v.kind != kindString:
		w.c.add(CodeAgentRequired, "/agent/system_prompt", "agent.system_prompt must be a string, not %s", v.kind)
	case !ok || strings.TrimSpace(v.s) == "":
		w.c.add(CodeSystemPromptMissing, "/agent/system_prompt", "agent.system_prompt is empty")
	}
	if v, ok := n.get("notes"); ok && !isString(v, 0, limits.AgentNotesLen) {
		w.c.add(CodeAgentRequired, "/agent/notes", "agent.notes must be a string of at most %d characters", limits.AgentNotesLen)
	}
	if v, ok := n.get("max_steps"); ok && !isIntIn(v, limits.MinSteps, limits.MaxSteps) {
		w.c.add(CodeMaxStepsRange, "/agent/max_steps", "agent.max_steps must be an integer from %d to %d",
			limits.MinSteps, limits.MaxSteps)
	}
	if v, ok := n.get("allow_followup"); ok && v.kind != kindBool {
		w.c.add(CodeAgentRequired, "/agent/allow_followup", "agent.allow_followup must be true or false, not %s", v.kind)
	}
	for _, key := range []string{"retry_after_minutes", "max_retries"} {
		if v, ok := n.get(key); ok && !isIntIn(v, 0, maxCount) {
			w.c.add(CodeMaxStepsRange, pointer("/agent", key), "agent.%s must be an integer from 0 to %d", key, maxCount)
		}
	}
	if v, ok := n.get("compaction_enabled"); ok && v.kind != kindBool {
		w.c.add(CodeAgentRequired, "/agent/compaction_enabled", "agent.compaction_enabled must be true or false, not %s", v.kind)
	}
	if v, ok := n.get("compaction_threshold_percent"); ok && !isIntIn(v, store.MinCompactionThreshold, store.MaxCompactionThreshold) {
		w.c.add(CodeMaxStepsRange, "/agent/compaction_threshold_percent", "agent.compaction_threshold_percent must be an integer from %d to %d",
			store.MinCompactionThreshold, store.MaxCompactionThreshold)
	}
	for _, key := range []string{"compaction_answer_reserve", "tool_result_max_chars"} {
		if v, ok := n.get(key); ok && !isIntIn(v, 0, maxCount) {
			w.c.add(CodeMaxStepsRange, pointer("/agent", key), "agent.%s must be an integer from 0 to %d", key, maxCount)
		}
	}
	if v, ok := n.get("memories"); ok {
		w.memories(v)
	}
	if v, ok := n.get("approvers"); ok {
		w.approvers(v)
	}
	if v, ok := n.get("approval_timeout_seconds"); ok && !isIntIn(v, 0, store.MaxApprovalTimeoutSeconds) {
		w.c.add(CodeMaxStepsRange, "/agent/approval_timeout_seconds", "agent.approval_timeout_seconds must be an integer from 0 to %d",
			store.MaxApprovalTimeoutSeconds)
	}
	if v, ok := n.get("approval_timeout_action"); ok && (v.kind != kindString || (v.s != store.ApprovalTimeoutReject && v.s != store.ApprovalTimeoutAbort)) {
		w.c.add(CodeAgentRequired, "/agent/approval_timeout_action", "agent.approval_timeout_action must be %q or %q",
			store.ApprovalTimeoutReject, store.ApprovalTimeoutAbort)
	}
	w.unknownKeys(n, "/agent", agentKeys, CodeUnknownAgentKey, "agent")
}

// approvers checks agent.approvers: an object of the booleans owner and managers, at least one
// true (a template cannot name users: their ids are the installation's).
func (w *walker) approvers(n *node) {
	if n.kind != kindObject {
		w.c.add(CodeAgentRequired, "/agent/approvers", "agent.approvers must be an object {owner, managers}, not %s", n.kind)
		return
	}
	some := false
	for _, key := range []string{"owner", "managers"} {
		if v, ok := n.get(key); ok {
			if v.kind != kindBool {
				w.c.add(CodeAgentRequired, pointer("/agent/approvers", key), "agent.approvers.%s must be true or false, not %s", key, v.kind)
			}
			some = some || v.b
		}
	}
	if !some {
		w.c.add(CodeAgentRequired, "/agent/approvers", "agent.approvers must name the owner, the managers or both")
	}
	w.unknownKeys(n, "/agent/approvers", []string{"owner", "managers"}, CodeUnknownAgentKey, "agent.approvers")
}

// memories checks agent.memories: a list of at most limits.TemplateMemories texts, each 1 to
// limits.MemoryTextLen characters.
func (w *walker) memories(n *node) {
	if n.kind != kindArray || len(n.arr) > limits.TemplateMemories {
		w.c.add(CodeAgentRequired, "/agent/memories", "agent.memories must be a list of at most %d texts", limits.TemplateMemories)
		return
	}
	for k, e := range n.arr {
		if !isString(e, 1, limits.MemoryTextLen) {
			w.c.add(CodeAgentRequired, pointer("/agent/memories", k),
				"agent.memories[%d] must be a string of 1 to %d characters", k, limits.MemoryTextLen)
		}
	}
}

func isIntIn(n *node, lo, hi int64) bool {
	if n.kind != kindNumber {
		return false
	}
	_, ok := intIn(n.s, lo, hi)
	return ok
}

func (w *walker) tools(n *node) {
	if n.kind != kindArray {
		w.c.add(CodeToolsNotList, "/tools", "tools must be a list, not %s", n.kind)
		return
	}
	first := map[string]int{}
	for i, e := range n.arr {
		w.tool(i, e, first)
	}
}

func (w *walker) tool(i int, n *node, first map[string]int) {
	base := pointer("", "tools", i)
	if n.kind != kindObject {
		w.c.add(CodeToolClassRequired, base, "tools[%d] must be an object with tool_class, enabled and operations, not %s", i, n.kind)
		return
	}
	ct := catalogTool{index: i}
	classOK := false
	v, ok := n.get("tool_class")
	switch {
	case isNull(v, ok):
		w.c.add(CodeToolClassRequired, pointer(base, "tool_class"), "tools[%d].tool_class is required", i)
	case !isString(v, 1, limits.ToolClassLen):
		w.c.add(CodeToolClassRequired, pointer(base, "tool_class"),
			"tools[%d].tool_class must be a string of 1 to %d characters", i, limits.ToolClassLen)
	default:
		classOK, ct.class = true, v.s
		if j, dup := first[v.s]; dup {
			w.c.add(CodeToolClassDuplicate, pointer(base, "tool_class"),
				"tool class %s is listed twice (first in tools[%d])", quote(v.s), j)
		} else {
			first[v.s] = i
		}
	}
	if v, ok := n.get("enabled"); !ok || v.kind != kindBool {
		w.c.add(CodeToolEnabledRequired, pointer(base, "enabled"), "tools[%d].enabled is required and must be true or false", i)
	} else {
		ct.enabled = v.b
	}
	v, ok = n.get("operations")
	if !ok || v.kind != kindArray {
		w.c.add(CodeOperationsNotList, pointer(base, "operations"), "tools[%d].operations is required and must be a list", i)
	} else {
		for j, o := range v.arr {
			if op, ok := w.operation(i, j, o); ok {
				ct.ops = append(ct.ops, indexedOp{index: j, op: op})
			}
		}
	}
	if v, ok := n.get("settings"); ok {
		if v.kind != kindObject {
			w.c.add(CodeSettingsInvalidValueType, pointer(base, "settings"), "tools[%d].settings must be an object, not %s", i, v.kind)
		} else {
			ct.settings = make(map[string]any, len(v.keys))
			for k, key := range v.keys {
				p, ok := plain(v.vals[k])
				if !ok {
					w.c.add(CodeSettingsInvalidValueType, pointer(base, "settings", key),
						"setting %s holds a number too large to represent", quote(key))
					continue
				}
				ct.settings[key] = p
			}
		}
	}
	if v, ok := n.get("approval_policy"); ok {
		p, fits := plain(v)
		if v.kind != kindObject || !fits {
			w.c.add(CodeApprovalPolicyInvalid, pointer(base, "approval_policy"), "tools[%d].approval_policy must be an object mapping operations to rules, not %s", i, v.kind)
		} else if _, err := toolpolicy.Parse(p, nil); err != nil {
			msg, _, _ := svcerr.Public(err)
			w.c.add(CodeApprovalPolicyInvalid, pointer(base, "approval_policy"), "tools[%d].%s", i, msg)
		} else {
			ct.policy = p.(map[string]any)
		}
	}
	w.unknownKeys(n, base, toolKeys, CodeUnknownAgentKey, "a tools entry")
	if classOK && w.cat != nil {
		applyCatalog(ct, w.cat, &w.c)
	}
}

// operation checks one operations entry and returns it when its name is usable.
func (w *walker) operation(i, j int, n *node) (Operation, bool) {
	base := pointer("", "tools", i, "operations", j)
	if n.kind != kindObject {
		w.c.add(CodeOperationNotObject, base, "tools[%d].operations[%d] must be an object with a name, not %s", i, j, n.kind)
		return Operation{}, false
	}
	var op Operation
	nameOK := false
	v, ok := n.get("name")
	switch {
	case isNull(v, ok):
		w.c.add(CodeOperationNameRequired, pointer(base, "name"), "tools[%d].operations[%d].name is required", i, j)
	case !isString(v, 1, limits.OperationNameLen):
		w.c.add(CodeOperationNameRequired, pointer(base, "name"),
			"tools[%d].operations[%d].name must be a string of 1 to %d characters", i, j, limits.OperationNameLen)
	default:
		op.Name, nameOK = v.s, true
	}
	if v, ok := n.get("enabled"); ok {
		if v.kind != kindBool {
			w.c.add(CodeOperationEnabledType, pointer(base, "enabled"), "tools[%d].operations[%d].enabled must be true or false, not %s", i, j, v.kind)
		} else {
			op.Enabled = ptr(v.b)
		}
	}
	if v, ok := n.get("auto_approve"); ok {
		if v.kind != kindBool {
			w.c.add(CodeAutoApproveType, pointer(base, "auto_approve"), "tools[%d].operations[%d].auto_approve must be true or false, not %s", i, j, v.kind)
		} else {
			op.AutoApprove = ptr(v.b)
		}
	}
	if v, ok := n.get("approval_timeout_seconds"); ok {
		if secs, ok := intIn(v.s, 0, store.MaxApprovalTimeoutSeconds); ok && v.kind == kindNumber {
			op.ApprovalTimeoutSeconds = ptr(int(secs))
		} else {
			w.c.add(CodeMaxStepsRange, pointer(base, "approval_timeout_seconds"),
				"tools[%d].operations[%d].approval_timeout_seconds must be an integer from 0 to %d", i, j, store.MaxApprovalTimeoutSeconds)
		}
	}
	w.unknownKeys(n, base, operationKey, CodeUnknownAgentKey, "an operations entry")
	return op, nameOK
}

func (w *walker) requiredPlugins(n *node) {
	if n.kind != kindArray {
		w.c.add(CodeRequiredPluginsNotList, "/required_plugins", "required_plugins must be a list, not %s", n.kind)
		return
	}
	for k, e := range n.arr {
		path := pointer("/required_plugins", k)
		switch {
		case e.kind != kindString || !pluginPattern.MatchString(e.s):
			w.c.add(CodeRequiredPluginsInvalid, path,
				"required_plugins[%d] must be a plugin package name vendor/name (lowercase letters, digits, \".\", \"_\", \"-\")", k)
		case w.cat != nil && !w.cat.PluginInstalled(e.s):
			w.c.add(CodePluginMissing, path, "required plugin %s is not installed (plugins are never installed automatically)", quote(e.s))
		}
	}
}

func (w *walker) metadata(n *node) {
	if n.kind != kindObject {
		w.c.add(CodeMetadataNotObject, "/metadata", "metadata must be an object, not %s", n.kind)
		return
	}
	if v, ok := n.get("category"); ok {
		switch {
		case !isString(v, 0, limits.TemplateMetadataLen):
			w.c.add(CodeMetadataNotObject, "/metadata/category", "metadata.category must be a string of at most %d characters", limits.TemplateMetadataLen)
		case v.s != "" && !slices.Contains(Categories, v.s):
			w.c.add(CodeMetadataCategoryUnknown, "/metadata/category", "unknown category %s (known: %s)", quote(v.s), strings.Join(Categories, ", "))
		}
	}
	if v, ok := n.get("icon"); ok {
		switch {
		case v.kind != kindString:
			w.c.add(CodeMetadataIconType, "/metadata/icon", "metadata.icon must be a string, not %s", v.kind)
		case runes(v.s) > limits.TemplateMetadataLen:
			w.c.add(CodeMetadataIconType, "/metadata/icon", "metadata.icon must be an icon name of at most %d characters", limits.TemplateMetadataLen)
		}
	}
	for _, f := range []struct {
		key     string
		allowed []string
	}{{"archetype", Archetypes}, {"variant_key", VariantKeys}, {"palette_key", PaletteKeys}} {
		if v, ok := n.get(f.key); ok && (v.kind != kindString || !slices.Contains(f.allowed, v.s)) {
			w.c.add(CodeMetadataNotObject, pointer("/metadata", f.key), "metadata.%s must be one of %s", f.key, strings.Join(f.allowed, ", "))
		}
	}
	w.unknownKeys(n, "/metadata", metadataKeys, CodeUnknownMetadataKey, "metadata")
}

// build converts a validated document into a Template. It relies on validation: call it only
// when the report has no errors.
func build(n *node) *Template {
	t := &Template{}
	str := func(n *node, key string) string {
		if v, ok := n.get(key); ok {
			return v.s
		}
		return ""
	}
	integer := func(n *node, key string) *int {
		if v, ok := n.get(key); ok {
			i, _ := intIn(v.s, math.MinInt64, math.MaxInt64)
			return ptr(int(i))
		}
		return nil
	}
	t.Schema, t.ID, t.Name, t.Description, t.Version = str(n, "$schema"), str(n, "id"), str(n, "name"), str(n, "description"), str(n, "version")
	a, _ := n.get("agent")
	t.Agent = Agent{
		Description:       str(a, "description"),
		SystemPrompt:      str(a, "system_prompt"),
		Notes:             str(a, "notes"),
		MaxSteps:          integer(a, "max_steps"),
		RetryAfterMinutes: integer(a, "retry_after_minutes"),
		MaxRetries:        integer(a, "max_retries"),

		CompactionThresholdPercent: integer(a, "compaction_threshold_percent"),
		CompactionAnswerReserve:    integer(a, "compaction_answer_reserve"),
		ToolResultMaxChars:         integer(a, "tool_result_max_chars"),
	}
	if v, ok := a.get("allow_followup"); ok {
		t.Agent.AllowFollowup = ptr(v.b)
	}
	if v, ok := a.get("compaction_enabled"); ok {
		t.Agent.CompactionEnabled = ptr(v.b)
	}
	if v, ok := a.get("memories"); ok {
		for _, e := range v.arr {
			t.Agent.Memories = append(t.Agent.Memories, e.s)
		}
	}
	if v, ok := a.get("approvers"); ok {
		o, _ := v.get("owner")
		m, _ := v.get("managers")
		t.Agent.Approvers = &Approvers{Owner: o != nil && o.b, Managers: m != nil && m.b}
	}
	t.Agent.ApprovalTimeoutSeconds = integer(a, "approval_timeout_seconds")
	t.Agent.ApprovalTimeoutAction = str(a, "approval_timeout_action")
	if tools, ok := n.get("tools"); ok {
		for _, e := range tools.arr {
			en, _ := e.get("enabled")
			tl := Tool{ToolClass: str(e, "tool_class"), Enabled: en.b, Operations: []Operation{}}
			ops, _ := e.get("operations")
			for _, o := range ops.arr {
				op := Operation{Name: str(o, "name")}
				if v, ok := o.get("enabled"); ok {
					op.Enabled = ptr(v.b)
				}
				if v, ok := o.get("auto_approve"); ok {
					op.AutoApprove = ptr(v.b)
				}
				op.ApprovalTimeoutSeconds = integer(o, "approval_timeout_seconds")
				tl.Operations = append(tl.Operations, op)
			}
			if s, ok := e.get("settings"); ok && len(s.keys) > 0 {
				p, _ := plain(s)
				tl.Settings = p.(map[string]any)
			}
			if s, ok := e.get("approval_policy"); ok && len(s.keys) > 0 {
				p, _ := plain(s)
				tl.ApprovalPolicy = p.(map[string]any)
			}
			t.Tools = append(t.Tools, tl)
		}
	}
	if rp, ok := n.get("required_plugins"); ok {
		for _, e := range rp.arr {
			t.RequiredPlugins = append(t.RequiredPlugins, e.s)
		}
	}
	if m, ok := n.get("metadata"); ok {
		t.Metadata = &Metadata{
			Category:   str(m, "category"),
			Icon:       str(m, "icon"),
			Archetype:  str(m, "archetype"),
			VariantKey: str(m, "variant_key"),
			PaletteKey: str(m, "palette_key"),
		}
	}
	return t
}
