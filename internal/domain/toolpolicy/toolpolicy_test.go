package toolpolicy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDecide(t *testing.T) {
	t.Parallel()
	pol := `{"write": [
		{"when": {"path": {"prefix": "/tmp/"}}, "action": "allow"},
		{"when": {"url": {"host_in": ["example.com", "*.trusted.org"]}}, "action": "allow"},
		{"when": {"mode": {"in": ["rm", "truncate"]}}, "action": "deny", "reason": "no destruction"},
		{"when": {"count": {"min": 1, "max": 10}, "dry": {"equals": true}}, "action": "allow"},
		{"when": {"name": {"pattern": "^[a-z]+\\.txt$"}}, "action": "allow"},
		{"when": {"opts.level": {"equals": 3}}, "action": "deny"},
		{"action": "ask"}
	], "read": [{"when": {"path": {"equals": "/etc/shadow"}}, "action": "deny"}]}`
	p, err := Parse(decode(t, pol), func(op string) bool { return op == "write" || op == "read" })
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		op, args string
		action   string
		rule     int
		matched  bool
	}{
		{"write", `{"path": "/tmp/x"}`, Allow, 1, true},
		{"write", `{"path": "/etc/x"}`, Ask, 7, true},
		{"write", `{"path": 5}`, Ask, 7, true},
		{"write", `{"url": "https://example.com/a"}`, Allow, 2, true},
		{"write", `{"url": "https://EXAMPLE.com:8443/a"}`, Allow, 2, true},
		{"write", `{"url": "https://example.com.evil.net/"}`, Ask, 7, true},
		{"write", `{"url": "https://api.trusted.org/"}`, Allow, 2, true},
		{"write", `{"url": "https://trusted.org/"}`, Allow, 2, true},
		{"write", `{"url": "https://nottrusted.org/"}`, Ask, 7, true},
		{"write", `{"url": "example.com"}`, Ask, 7, true},
		{"write", `{"mode": "rm"}`, Deny, 3, true},
		{"write", `{"count": 10, "dry": true}`, Allow, 4, true},
		{"write", `{"count": 11, "dry": true}`, Ask, 7, true},
		{"write", `{"count": 5}`, Ask, 7, true},
		{"write", `{"count": "5", "dry": true}`, Ask, 7, true},
		{"write", `{"name": "notes.txt"}`, Allow, 5, true},
		{"write", `{"name": "../notes.txt"}`, Ask, 7, true},
		{"write", `{"opts": {"level": 3}}`, Deny, 6, true},
		{"write", `{"opts": {"level": 3.5}}`, Ask, 7, true},
		{"read", `{"path": "/etc/shadow"}`, Deny, 1, true},
		{"read", `{"path": "/etc/hosts"}`, "", 0, false},
		{"delete", `{}`, "", 0, false},
	}
	for _, c := range cases {
		var args map[string]any
		if err := json.Unmarshal([]byte(c.args), &args); err != nil {
			t.Fatal(err)
		}
		d, ok := p.Decide(c.op, args)
		if ok != c.matched || d.Action != c.action || d.Rule != c.rule {
			t.Errorf("%s %s: got %+v %v, want %s by rule %d", c.op, c.args, d, ok, c.action, c.rule)
		}
		if d.Action == Deny && d.Reason == "" {
			t.Errorf("%s %s: a deny without a reason", c.op, c.args)
		}
	}
	if d, _ := p.Decide("write", map[string]any{"mode": "rm"}); d.Reason != "no destruction" {
		t.Errorf("reason %q", d.Reason)
	}
	if d, _ := p.Decide("read", map[string]any{"path": "/etc/shadow"}); d.Reason != DefaultDenyReason {
		t.Errorf("default reason %q", d.Reason)
	}
}

// Numbers stored by the settings layers decode as json.Number; they compare by value.
func TestStoredNumbers(t *testing.T) {
	t.Parallel()
	dec := json.NewDecoder(strings.NewReader(`{"op": [{"when": {"n": {"equals": 2, "max": 2.0}}, "action": "allow"}]}`))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	p, err := Parse(v, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := p.Decide("op", map[string]any{"n": float64(2)}); !ok || d.Action != Allow {
		t.Fatalf("got %+v %v", d, ok)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", MaxPatternLen+1)
	cases := []struct{ in, path string }{
		{`[]`, "approval_policy:"},
		{`{"nope": []}`, `approval_policy.nope: the tool has no operation "nope"`},
		{`{"write": {}}`, "approval_policy.write: must be a list"},
		{`{"write": [1]}`, "approval_policy.write[0]: must be an object"},
		{`{"write": [{}]}`, "approval_policy.write[0].action: is required"},
		{`{"write": [{"action": "maybe"}]}`, "approval_policy.write[0].action: must be allow, deny or ask"},
		{`{"write": [{"action": "allow", "reason": "x"}]}`, "approval_policy.write[0].reason: is only for a deny rule"},
		{`{"write": [{"action": "allow", "extra": 1}]}`, `approval_policy.write[0]: unknown key "extra"`},
		{`{"write": [{"action": "allow", "when": []}]}`, "approval_policy.write[0].when: must be an object"},
		{`{"write": [{"action": "allow", "when": {"a": 1}}]}`, "approval_policy.write[0].when.a: must be an object"},
		{`{"write": [{"action": "allow", "when": {"a": {}}}]}`, "approval_policy.write[0].when.a: must be an object"},
		{`{"write": [{"action": "allow", "when": {"a..b": {"equals": 1}}}]}`, "approval_policy.write[0].when.a..b: an argument path"},
		{`{"write": [{"action": "allow", "when": {"a": {"like": 1}}}]}`, `approval_policy.write[0].when.a: unknown operator "like"`},
		{`{"write": [{"action": "allow", "when": {"a": {"pattern": "("}}}]}`, "approval_policy.write[0].when.a.pattern: is not an RE2"},
		{`{"write": [{"action": "allow", "when": {"a": {"pattern": "` + long + `"}}}]}`, "approval_policy.write[0].when.a.pattern: must be a regular expression of 1 to 512 bytes"},
		{`{"write": [{"action": "allow", "when": {"a": {"min": "1"}}}]}`, "approval_policy.write[0].when.a.min: must be a number"},
		{`{"write": [{"action": "allow", "when": {"a": {"min": 2, "max": 1}}}]}`, "approval_policy.write[0].when.a: min is above max"},
		{`{"write": [{"action": "allow", "when": {"a": {"in": []}}}]}`, "approval_policy.write[0].when.a.in: must be a list of 1 to 200"},
		{`{"write": [{"action": "allow", "when": {"u": {"host_in": ["ok.com", "bad/host"]}}}]}`, "approval_policy.write[0].when.u.host_in[1]: must be a host name"},
		{`{"write": [{"action": "allow", "when": {"a": {"prefix": ""}}}]}`, "approval_policy.write[0].when.a.prefix: must be a text"},
	}
	for _, c := range cases {
		_, err := Parse(decode(t, c.in), func(op string) bool { return op == "write" })
		if !errors.Is(err, svcerr.ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", c.in, err)
			continue
		}
		if msg, _, _ := svcerr.Public(err); !strings.HasPrefix(msg, c.path) {
			t.Errorf("%s:\n got %q\nwant %q…", c.in, msg, c.path)
		}
	}
	rules := make([]any, MaxRules+1)
	for i := range rules {
		rules[i] = map[string]any{"action": "ask"}
	}
	if _, err := Parse(map[string]any{"write": rules}, nil); err == nil {
		t.Error("too many rules accepted")
	}
}

// FuzzPolicy parses arbitrary JSON as a policy and, when it parses, decides arbitrary
// arguments with it: neither may panic, and a decision names a rule of the operation.
func FuzzPolicy(f *testing.F) {
	f.Add(`{"w": [{"when": {"a.b": {"pattern": "^x", "min": 1}}, "action": "deny", "reason": "r"}, {"action": "ask"}]}`, `{"a": {"b": "xy"}}`)
	f.Add(`{"w": [{"when": {"u": {"host_in": ["*.a.b"]}, "v": {"in": [1, "1", null, [1]]}}, "action": "allow"}]}`, `{"u": "http://x.a.b/", "v": 1}`)
	f.Add(`{"w": [{"when": {"p": {"prefix": "/", "equals": {"k": [1]}}}, "action": "allow"}]}`, `{"p": "/"}`)
	f.Fuzz(func(t *testing.T, policy, args string) {
		var v any
		if json.Unmarshal([]byte(policy), &v) != nil {
			return
		}
		p, err := Parse(v, nil)
		if err != nil {
			if !errors.Is(err, svcerr.ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		var a map[string]any
		if json.Unmarshal([]byte(args), &a) != nil {
			return
		}
		for op, rules := range p {
			if d, ok := p.Decide(op, a); ok && (d.Rule < 1 || d.Rule > len(rules)) {
				t.Fatalf("decision %+v names no rule of %d", d, len(rules))
			}
		}
	})
}
