package mcp

import (
	"strings"
	"testing"

	"github.com/agentsvc/svc/tools"
)

func TestSanitize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"echo":            "echo",
		"getWeather":      "get_weather",
		"read-file":       "read_file",
		"files.read.v2":   "files_read_v2",
		"HTTPRequest":     "httprequest",
		"__x__":           "x",
		"a--b":            "a_b",
		"9lives":          "9lives",
		"ünïcode":         "n_code",
		"---":             "",
		"Search_Issues42": "search_issues42",
	} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every name assignNames gives passes the registry's rules, is unique, and does not depend on the
// server's listing order.
func TestAssignNamesAlwaysValidates(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("verylongtoolname", 8)
	mcpNames := []string{"echo", "Echo", "e-c-h-o", "e_c_h_o", "9lives", "---", "", long, long + "2", "getWeather", "get_weather"}
	for _, server := range []string{"py", "My Server", "9", strings.Repeat("s", 48)} {
		got := assignNames("demo-plugin", server, mcpNames)
		reversed := append([]string(nil), mcpNames...)
		for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
			reversed[i], reversed[j] = reversed[j], reversed[i]
		}
		again := assignNames("demo-plugin", server, reversed)
		reg := tools.NewRegistry()
		for _, n := range mcpNames {
			nc := got[n]
			if again[n] != nc {
				t.Errorf("server %q tool %q: %v then %v depending on order", server, n, nc, again[n])
			}
			spec := tools.Spec{Class: nc[1], Name: nc[0], PluginSlug: "demo-plugin",
				Operations:  []tools.Operation{{Name: Operation}},
				InputSchema: map[string]any{"type": "object"}}
			if err := reg.Register(fakeTool{spec}); err != nil {
				t.Errorf("server %q tool %q → %v: %v", server, n, nc, err)
			}
		}
	}
	plain := assignNames("demo", "py", []string{"echo", "Echo"})
	if plain["echo"] != [2]string{"py_echo", "demo.McpPyEcho"} {
		t.Fatalf("the exact name lost its plain form: %v", plain)
	}
	if plain["Echo"][0] == "py_echo" || !strings.HasPrefix(plain["Echo"][0], "py_echo_") {
		t.Fatalf("the clashing name is not tagged: %v", plain)
	}
}

type fakeTool struct{ spec tools.Spec }

func (f fakeTool) Spec() tools.Spec { return f.spec }

func TestDigestSeparatesValues(t *testing.T) {
	t.Parallel()
	a := digest(map[string]string{"a": "bc"})
	b := digest(map[string]string{"ab": "c"})
	if a == b || digest(nil) != "" || digest(map[string]string{"a": "bc"}) != a {
		t.Fatal("digest does not identify secret sets")
	}
	if strings.Contains(a, "bc") {
		t.Fatal("digest leaks the value")
	}
}
