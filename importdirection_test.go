package svc_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/agentsvc/svc"

// layers are the import layers docs/architecture.md draws, lowest first: a package imports only
// packages of its own layer or a lower one. The first matching prefix decides.
var layers = []struct {
	rank     int
	prefixes []string
}{
	{0, []string{"internal/vocab/"}},
	{1, []string{"store"}},
	{2, []string{"internal/platform/", "agent-templates", "skills", ""}},
	{3, []string{"internal/domain/", "tools"}},
	{4, []string{"agentloop", "plugins", "internal/jobs/"}},
	{5, []string{"api", "gen"}},
	{6, []string{"server"}},
	{7, []string{"cmd/", "bench/", "scripts/"}},
}

// kits are the test kits: they may import anything, and only tests, other kits and the
// developer programs (layer 7) import them.
var kits = []string{"internal/testkit", "internal/testkit/oidcop", "store/storetest", "internal/domain/mail/mailtest", "api/apitest",
	"agentloop/llm/llmfake", "agentloop/looptest", "plugins/archive/archivetest"}

func rankOf(t *testing.T, pkg string) int {
	for _, l := range layers {
		for _, p := range l.prefixes {
			if pkg == p || p != "" && (strings.HasPrefix(pkg, p+"/") || strings.HasSuffix(p, "/") && strings.HasPrefix(pkg, p)) {
				return l.rank
			}
		}
	}
	t.Fatalf("package %q is in no layer: add it to docs/architecture.md and this test", pkg)
	return 0
}

func isKit(pkg string) bool {
	for _, k := range kits {
		if pkg == k {
			return true
		}
	}
	return false
}

// TestImportDirection reads every package's imports (go list) and fails on an import that goes
// up the layers, a production package importing a test kit, or gen imported below the API.
func TestImportDirection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		if isKit(pkg) {
			continue
		}
		from := rankOf(t, pkg)
		for _, imp := range f[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			checked++
			switch {
			case isKit(dep):
				if from < 7 {
					t.Errorf("%s imports the test kit %s", pkg, dep)
				}
			case rankOf(t, dep) > from:
				t.Errorf("%s (layer %d) imports %s (layer %d): imports go down the layers only", pkg, from, dep, rankOf(t, dep))
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d imports: go list's output was not read", checked)
	}
}
