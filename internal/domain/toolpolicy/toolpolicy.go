// Package toolpolicy holds the approval policies of tool operations (issue 26): per operation,
// an ordered list of rules over a call's arguments that decides before a human is asked —
// allow, deny (with a reason the model is told) or ask. A rule's conditions must all match
// (AND); the first matching rule wins; when none matches, the operation's approval flag
// decides (the caller's business).
//
// A policy is stored as the value of the reserved settings key approval_policy of a tool's
// settings layer (group and agent; see package toolconfig): an object mapping operation names
// to rule lists. Its wire form:
//
//	{"write": [
//	  {"when": {"path": {"prefix": "/tmp/"}}, "action": "allow"},
//	  {"when": {"url": {"host_in": ["example.com"]}, "count": {"max": 10}}, "action": "deny", "reason": "…"},
//	  {"action": "ask"}
//	]}
//
// Conditions name an argument by its top-level name or a dotted path into nested objects
// ("options.mode") and give one or more of: equals (any JSON value; numbers compare by value),
// in (a list of such values), prefix (a string prefix), pattern (an RE2 regular expression
// matched anywhere in a string: anchor it with ^…$ for the whole value), min and max (numeric
// bounds, inclusive), host_in (the argument is an absolute URL whose host is one of the list;
// "*.example.com" matches example.com and every subdomain of it). An argument that is absent or of another type
// matches no operator. Input is untrusted (an administrator's or an imported template's): every
// size is bounded (the Max constants) and Parse refuses anything else with an ErrInvalid error
// naming the field path.
package toolpolicy

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Key is the reserved settings key a tool's policy is stored under, at any layer that holds it.
const Key = "approval_policy"

// Actions a rule takes.
const (
	Allow = "allow"
	Deny  = "deny"
	Ask   = "ask"
)

// Bounds of a policy: what Parse accepts.
const (
	MaxRules      = 50   // rules per operation
	MaxConditions = 20   // argument conditions per rule
	MaxListItems  = 200  // items of in and host_in
	MaxTextLen    = 2048 // bytes of a string operand (equals, in items, prefix, hosts)
	MaxPatternLen = 512  // bytes of a pattern
	MaxReasonLen  = 1000 // bytes of a deny reason
	MaxPathLen    = 128  // bytes of an argument path
	MaxPathDepth  = 8    // segments of a dotted argument path
)

// DefaultDenyReason is what the model is told for a deny rule without a reason.
const DefaultDenyReason = "the agent's approval policy does not allow this call"

// Policy is a parsed policy: the rules of each operation that has some.
type Policy map[string][]Rule

// Rule is one parsed rule.
type Rule struct {
	Action string
	Reason string
	conds  []condition
}

type condition struct {
	path    []string
	equals  *any
	in      []any
	prefix  *string
	pattern *regexp.Regexp
	min     *float64
	max     *float64
	hostIn  []string
}

// Decision is what a policy decided about a call.
type Decision struct {
	Action string // Allow, Deny or Ask
	Rule   int    // 1-based number of the rule that matched
	Reason string // Deny: what the model is told
}

func invalid(path, format string, args ...any) error {
	return svcerr.New(svcerr.ErrInvalid, "%s: %s", path, fmt.Sprintf(format, args...))
}

// Parse reads a policy as decoded from JSON (objects as map[string]any, numbers as float64 or
// json.Number). known reports whether an operation name is declared by the tool (nil accepts
// any). Errors: ErrInvalid naming the field path below Key ("approval_policy.write[0].when.url.host_in[1]: …").
func Parse(v any, known func(op string) bool) (Policy, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, invalid(Key, "must be an object mapping operation names to rule lists")
	}
	out := Policy{}
	for _, op := range sortedKeys(m) {
		path := Key + "." + op
		if known != nil && !known(op) {
			return nil, invalid(path, "the tool has no operation %q", op)
		}
		list, ok := m[op].([]any)
		if !ok {
			return nil, invalid(path, "must be a list of rules")
		}
		if len(list) > MaxRules {
			return nil, invalid(path, "at most %d rules", MaxRules)
		}
		rules := make([]Rule, 0, len(list))
		for i, item := range list {
			r, err := parseRule(item, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			rules = append(rules, r)
		}
		out[op] = rules
	}
	return out, nil
}

func parseRule(v any, path string) (Rule, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Rule{}, invalid(path, "must be an object with action, and when and reason if needed")
	}
	var r Rule
	for _, k := range sortedKeys(m) {
		switch k {
		case "action":
			s, _ := m[k].(string)
			if s != Allow && s != Deny && s != Ask {
				return Rule{}, invalid(path+".action", "must be allow, deny or ask")
			}
			r.Action = s
		case "reason":
			s, ok := m[k].(string)
			if !ok || len(s) > MaxReasonLen || !utf8.ValidString(s) {
				return Rule{}, invalid(path+".reason", "must be a text of at most %d bytes", MaxReasonLen)
			}
			r.Reason = strings.TrimSpace(s)
		case "when":
			if m[k] == nil {
				continue
			}
			when, ok := m[k].(map[string]any)
			if !ok {
				return Rule{}, invalid(path+".when", "must be an object mapping argument paths to conditions")
			}
			if len(when) > MaxConditions {
				return Rule{}, invalid(path+".when", "at most %d conditions", MaxConditions)
			}
			for _, arg := range sortedKeys(when) {
				c, err := parseCondition(arg, when[arg], path+".when."+arg)
				if err != nil {
					return Rule{}, err
				}
				r.conds = append(r.conds, c)
			}
		default:
			return Rule{}, invalid(path, "unknown key %q (action, when, reason)", k)
		}
	}
	if r.Action == "" {
		return Rule{}, invalid(path+".action", "is required: allow, deny or ask")
	}
	if r.Reason != "" && r.Action != Deny {
		return Rule{}, invalid(path+".reason", "is only for a deny rule")
	}
	return r, nil
}

func parseCondition(arg string, v any, path string) (condition, error) {
	segs := strings.Split(arg, ".")
	if arg == "" || len(arg) > MaxPathLen || len(segs) > MaxPathDepth || !utf8.ValidString(arg) {
		return condition{}, invalid(path, "an argument path is 1 to %d bytes of at most %d dotted names", MaxPathLen, MaxPathDepth)
	}
	for _, s := range segs {
		if s == "" {
			return condition{}, invalid(path, "an argument path has no empty names")
		}
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return condition{}, invalid(path, "must be an object of at least one of equals, in, prefix, pattern, min, max, host_in")
	}
	c := condition{path: segs}
	for _, k := range sortedKeys(m) {
		p := path + "." + k
		val := m[k]
		switch k {
		case "equals":
			n, err := operand(val, p)
			if err != nil {
				return condition{}, err
			}
			c.equals = &n
		case "in":
			list, ok := val.([]any)
			if !ok || len(list) == 0 || len(list) > MaxListItems {
				return condition{}, invalid(p, "must be a list of 1 to %d values", MaxListItems)
			}
			for i, item := range list {
				n, err := operand(item, fmt.Sprintf("%s[%d]", p, i))
				if err != nil {
					return condition{}, err
				}
				c.in = append(c.in, n)
			}
		case "prefix":
			s, ok := val.(string)
			if !ok || s == "" || len(s) > MaxTextLen || !utf8.ValidString(s) {
				return condition{}, invalid(p, "must be a text of 1 to %d bytes", MaxTextLen)
			}
			c.prefix = &s
		case "pattern":
			s, ok := val.(string)
			if !ok || s == "" || len(s) > MaxPatternLen {
				return condition{}, invalid(p, "must be a regular expression of 1 to %d bytes", MaxPatternLen)
			}
			re, err := regexp.Compile(s)
			if err != nil {
				return condition{}, invalid(p, "is not an RE2 regular expression: %s", err.Error())
			}
			c.pattern = re
		case "min", "max":
			f, ok := number(val)
			if !ok {
				return condition{}, invalid(p, "must be a number")
			}
			if k == "min" {
				c.min = &f
			} else {
				c.max = &f
			}
		case "host_in":
			list, ok := val.([]any)
			if !ok || len(list) == 0 || len(list) > MaxListItems {
				return condition{}, invalid(p, "must be a list of 1 to %d host names", MaxListItems)
			}
			for i, item := range list {
				h, ok := item.(string)
				h = strings.Trim(strings.TrimSuffix(strings.ToLower(h), "."), "[]")
				if !ok || !validHost(h) {
					return condition{}, invalid(fmt.Sprintf("%s[%d]", p, i), "must be a host name such as example.com or *.example.com")
				}
				c.hostIn = append(c.hostIn, h)
			}
		default:
			return condition{}, invalid(path, "unknown operator %q (equals, in, prefix, pattern, min, max, host_in)", k)
		}
	}
	if c.min != nil && c.max != nil && *c.min > *c.max {
		return condition{}, invalid(path, "min is above max")
	}
	return c, nil
}

// validHost accepts a host name or IP literal, optionally "*." before a name.
func validHost(h string) bool {
	h = strings.TrimPrefix(h, "*.")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == ':') {
			return false
		}
	}
	return true
}

// operand checks an equals or in value: a scalar (string, number, boolean, null) or a
// bounded list or object of them, normalised for comparison.
func operand(v any, path string) (any, error) {
	b, err := json.Marshal(v)
	if err != nil || len(b) > MaxTextLen {
		return nil, invalid(path, "must be a JSON value of at most %d bytes", MaxTextLen)
	}
	return normalize(v), nil
}

// normalize makes decoded JSON comparable: numbers of either decoding become float64.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = normalize(x[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	}
	if f, ok := number(v); ok {
		return f
	}
	return v
}

func number(v any) (float64, bool) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case float32:
		f = float64(n)
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	case json.Number:
		var err error
		if f, err = n.Float64(); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Decide applies the rules of operation op to a call's arguments: the first rule whose
// conditions all match decides; false when op has no rules or none matched.
func (p Policy) Decide(op string, args map[string]any) (Decision, bool) {
	for i, r := range p[op] {
		if r.matches(args) {
			d := Decision{Action: r.Action, Rule: i + 1}
			if r.Action == Deny {
				d.Reason = r.Reason
				if d.Reason == "" {
					d.Reason = DefaultDenyReason
				}
			}
			return d, true
		}
	}
	return Decision{}, false
}

func (r Rule) matches(args map[string]any) bool {
	for _, c := range r.conds {
		v, ok := lookup(args, c.path)
		if !ok || !c.matches(normalize(v)) {
			return false
		}
	}
	return true
}

func lookup(args map[string]any, path []string) (any, bool) {
	var cur any = args
	for _, seg := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func (c condition) matches(v any) bool {
	if c.equals != nil && !reflect.DeepEqual(*c.equals, v) {
		return false
	}
	if c.in != nil {
		found := false
		for _, x := range c.in {
			if reflect.DeepEqual(x, v) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	s, isString := v.(string)
	if c.prefix != nil && (!isString || !strings.HasPrefix(s, *c.prefix)) {
		return false
	}
	if c.pattern != nil && (!isString || !c.pattern.MatchString(s)) {
		return false
	}
	if c.min != nil || c.max != nil {
		f, ok := v.(float64)
		if !ok || c.min != nil && f < *c.min || c.max != nil && f > *c.max {
			return false
		}
	}
	if c.hostIn != nil && (!isString || !hostIn(s, c.hostIn)) {
		return false
	}
	return true
}

func hostIn(raw string, hosts []string) bool {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Hostname() == "" {
		return false
	}
	h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	for _, want := range hosts {
		if sub, ok := strings.CutPrefix(want, "*."); ok {
			if h == sub || strings.HasSuffix(h, "."+sub) {
				return true
			}
			continue
		}
		if h == want {
			return true
		}
	}
	return false
}
