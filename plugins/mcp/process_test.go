package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/agentsvc/svc/plugins/mcp"
	"github.com/agentsvc/svc/tools"
)

// inspection is what the test server's inspect tool reports about its own process.
type inspection struct {
	Cwd string            `json:"cwd"`
	Env map[string]string `json:"env"`
	FDs map[string]string `json:"fds"`
}

func inspect(t *testing.T, reg *tools.Registry) inspection {
	t.Helper()
	res, err := executor(t, reg, "demo:py_inspect").Execute(context.Background(), tools.Call{Operation: mcp.Operation,
		Settings: map[string]any{"token": "tok"}})
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	var in inspection
	if err := json.Unmarshal(res.Data, &in); err != nil {
		t.Fatalf("inspect data %s: %v", res.Data, err)
	}
	return in
}

// TestStdioServerGetsTheLeast (issue 22, item 5): a stdio server gets stdin, stdout and stderr
// and no other descriptor of the service (an open file here stands for the database), the
// environment its declaration gives plus PATH and the locale (no SVC_* setting, not the
// service's HOME), and a private folder as HOME, TMPDIR and working directory (not the
// service's working directory), removed with the server. Not parallel: it sets the
// environment.
func TestStdioServerGetsTheLeast(t *testing.T) {
	script, err := filepath.Abs("testdata/server.py")
	if err != nil {
		t.Fatal(err)
	}
	serviceHome := t.TempDir()
	t.Setenv("HOME", serviceHome)
	t.Setenv("SVC_SECRET_KEY", "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I=")
	t.Setenv("SVC_KEY_PATH", "/srv/svc/storage/secret.key")
	t.Setenv("SVC_DB_PASSWORD", "hunter2")
	held, err := os.Open(script) // a descriptor the service holds while the server starts
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	// A descriptor without close-on-exec, as those the service inherits from what started it.
	inherited, err := syscall.Dup(int(held.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(inherited)

	m := newManager(t, mcp.Options{})
	cfg := mcp.ServerConfig{Slug: "demo", Name: "py", Command: realPython(t), Args: []string{script, "--with-inspect"},
		Env:     map[string]string{"NOTES_MODE": "full"},
		Secrets: []mcp.SecretDecl{{Key: "token", Env: "MCP_TOKEN"}}}
	if err := m.Add(cfg); err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if err := m.Sync(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	in := inspect(t, reg)

	var fds []string
	for fd, target := range in.FDs {
		fds = append(fds, fd+" → "+target)
		if fd != "0" && fd != "1" && fd != "2" {
			t.Errorf("the server holds descriptor %s → %s; want stdin, stdout and stderr only", fd, target)
		}
	}
	sort.Strings(fds)
	if len(in.FDs) != 3 {
		t.Errorf("descriptors %v, want 0, 1 and 2", fds)
	}

	allowed := []string{"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "NOTES_MODE", "MCP_TOKEN",
		"LC_CTYPE"} // LC_CTYPE: Python's own locale coercion (PEP 538) sets it in its environment
	for k := range in.Env {
		if !slices.Contains(allowed, k) || strings.HasPrefix(k, "SVC_") {
			t.Errorf("the server's environment holds %s", k)
		}
	}
	if in.Env["NOTES_MODE"] != "full" || in.Env["MCP_TOKEN"] != "tok" {
		t.Errorf("declared variables missing: NOTES_MODE=%q MCP_TOKEN=%q", in.Env["NOTES_MODE"], in.Env["MCP_TOKEN"])
	}

	cwd, _ := os.Getwd()
	home := in.Env["HOME"]
	switch {
	case home == "" || home == serviceHome:
		t.Errorf("HOME = %q, want a private folder (the service's is %s)", home, serviceHome)
	case in.Cwd == cwd:
		t.Errorf("the server runs in the service's working directory %s", cwd)
	case in.Cwd != home || in.Env["TMPDIR"] != home:
		t.Errorf("cwd %s, HOME %s, TMPDIR %s: want one private folder", in.Cwd, home, in.Env["TMPDIR"])
	}
	fi, err := os.Stat(home)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("private folder %s: %v, mode %v (want 0700)", home, err, fi.Mode().Perm())
	}
	m.Remove("demo")
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Errorf("private folder %s left after Remove: %v", home, err)
	}
}

// TestStdioServerRunsInItsDeclaredFolder: a declared Dir (a plugin's folder) is the working
// directory; HOME stays private.
func TestStdioServerRunsInItsDeclaredFolder(t *testing.T) {
	t.Parallel()
	_, reg := syncedPy(t, mcp.Options{}, "--with-inspect")
	in := inspect(t, reg)
	want, _ := filepath.Abs("testdata")
	if in.Cwd != want {
		t.Fatalf("cwd = %s, want the declared %s", in.Cwd, want)
	}
	if in.Env["HOME"] == "" || in.Env["HOME"] == os.Getenv("HOME") {
		t.Fatalf("HOME = %q, want a private folder", in.Env["HOME"])
	}
}

// realPython is the interpreter behind python3, so that no wrapper script (a pyenv shim, which
// is a shell script setting variables of its own) stands between the manager and the server.
func realPython(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(needPython(t), "-c", "import sys; print(sys.executable)").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("python3's executable: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestRemovedServerStartsNoProcess: a call that still holds a tool of a removed plugin (a task
// under way when the plugin left) starts no process of it: its private folder is gone.
func TestRemovedServerStartsNoProcess(t *testing.T) {
	t.Parallel()
	m, reg := syncedPy(t, mcp.Options{})
	echo := executor(t, reg, "demo:py_echo")
	m.Remove("demo")
	_, err := echo.Execute(context.Background(), tools.Call{Operation: mcp.Operation, Args: map[string]any{"text": "x"}})
	toolErr(t, err, "was removed")
	if st := m.Stats(); st.Processes != 0 {
		t.Fatalf("%d processes of a removed server", st.Processes)
	}
}
