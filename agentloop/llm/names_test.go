package llm

import (
	"strings"
	"testing"
)

func TestNameMapRoundTrip(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 70)
	names := []string{
		"weather:forecast", "weather__forecast", // the natural encoding is taken by a real name
		"weather__forecast_2", "read_url", "a:b:c", "a__b:c", "a:b__c", "plugin.tool", "plugin_tool",
		"héllo:wörld", ":", "", long + ":a", long + ":b", "time",
	}
	m := buildNameMap(names)
	seen := map[string]string{}
	for _, n := range names {
		w := m.encode(n)
		if !wireSafe(w) {
			t.Errorf("encode(%q) = %q is not a valid function name", n, w)
		}
		if prev, dup := seen[w]; dup {
			t.Errorf("encode(%q) = encode(%q) = %q", n, prev, w)
		}
		seen[w] = n
		if got := m.decode(w); got != n {
			t.Errorf("decode(encode(%q)) = %q (wire %q)", n, got, w)
		}
		if wireSafe(n) && w != n {
			t.Errorf("valid name %q changed to %q", n, w)
		}
	}
	if w := m.encode("weather:forecast"); w != "weather__forecast_3" {
		t.Errorf("weather:forecast → %q", w)
	}
	if got := m.decode("never_declared"); got != "never_declared" {
		t.Errorf("unknown name decoded to %q", got)
	}
}

func TestNameMapFromRequestIsOrderIndependent(t *testing.T) {
	t.Parallel()
	a := newNameMap(&Request{Tools: []ToolDef{{Name: "p:x"}, {Name: "p__x"}, {Name: "q:y"}}})
	b := newNameMap(&Request{
		Tools:    []ToolDef{{Name: "q:y"}, {Name: "p__x"}},
		Messages: []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "1", Name: "p:x"}}}},
	})
	for _, n := range []string{"p:x", "p__x", "q:y"} {
		if a.encode(n) != b.encode(n) {
			t.Errorf("%q: %q vs %q", n, a.encode(n), b.encode(n))
		}
	}
}
