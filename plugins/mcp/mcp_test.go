package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/plugins/mcp"
	"github.com/agentsvc/svc/tools"
)

// needPython skips a test that runs the Python test server when python3 is missing.
func needPython(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skipf("python3 is not on PATH (%v): the stdio MCP server of testdata/server.py cannot run", err)
	}
	return p
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newManager builds a Manager that the test closes, failing the test when Close does not stop
// every server in time.
func newManager(t *testing.T, opts mcp.Options) *mcp.Manager {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	m := mcp.NewManager(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

// pyServer declares the Python test server as server "py" of plugin "demo".
func pyServer(t *testing.T, args ...string) mcp.ServerConfig {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return mcp.ServerConfig{
		Slug: "demo", Name: "py", Command: needPython(t), Args: append([]string{"server.py"}, args...), Dir: dir,
		Secrets: []mcp.SecretDecl{{Key: "token", Label: "Token", Env: "MCP_TOKEN"}},
	}
}

// syncedPy returns a manager with the Python server declared and synced into a new registry.
func syncedPy(t *testing.T, opts mcp.Options, args ...string) (*mcp.Manager, *tools.Registry) {
	t.Helper()
	m := newManager(t, opts)
	if err := m.Add(pyServer(t, args...)); err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if err := m.Sync(context.Background(), reg); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	return m, reg
}

func executor(t *testing.T, reg *tools.Registry, modelName string) tools.Executor {
	t.Helper()
	tool, ok := reg.LookupModelName(modelName)
	if !ok {
		t.Fatalf("no tool %q registered; have %v", modelName, modelNames(reg))
	}
	ex, ok := tool.(tools.Executor)
	if !ok {
		t.Fatalf("tool %q is not an executor", modelName)
	}
	return ex
}

func modelNames(reg *tools.Registry) []string {
	var out []string
	for _, s := range reg.Specs() {
		out = append(out, tools.ModelName(s))
	}
	return out
}

// echoPID calls echo and returns the process id the server reports.
func echoPID(t *testing.T, reg *tools.Registry, settings map[string]any) int {
	t.Helper()
	res, err := executor(t, reg, "demo:py_echo").Execute(context.Background(), tools.Call{Operation: mcp.Operation, Args: map[string]any{"text": "hello"}, Settings: settings})
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	if res.Content != "hello" {
		t.Fatalf("echo content = %q", res.Content)
	}
	var data struct {
		Echo string `json:"echo"`
		PID  int    `json:"pid"`
	}
	if err := json.Unmarshal(res.Data, &data); err != nil || data.Echo != "hello" || data.PID <= 0 {
		t.Fatalf("echo data = %s (%v)", res.Data, err)
	}
	return data.PID
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func toolErr(t *testing.T, err error, want string) {
	t.Helper()
	var te *tools.ToolError
	if !errors.As(err, &te) {
		t.Fatalf("error = %v (%T), want a *tools.ToolError", err, err)
	}
	if !strings.Contains(te.Msg, want) {
		t.Fatalf("tool error %q does not say %q", te.Msg, want)
	}
}

func TestSyncRegistersEveryTool(t *testing.T) {
	t.Parallel()
	_, reg := syncedPy(t, mcp.Options{})
	want := []string{"demo:py_crash", "demo:py_echo", "demo:py_fail", "demo:py_slow", "demo:py_whoami"}
	if got := modelNames(reg); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("registered %v, want %v", got, want)
	}
	spec, ok := reg.Spec("demo.McpPyEcho")
	if !ok {
		t.Fatalf("no class demo.McpPyEcho")
	}
	if spec.PluginSlug != "demo" || spec.Name != "py_echo" || spec.Description != "Echoes the text back." {
		t.Fatalf("spec = %+v", spec)
	}
	// The inputSchema reaches the model as the server declared it.
	wantSchema := `{"additionalProperties":false,"properties":{"text":{"description":"What to echo.","type":"string"}},"required":["text"],"type":"object"}`
	if got := string(tools.Schema(spec)); got != wantSchema {
		t.Fatalf("schema = %s\nwant %s", got, wantSchema)
	}
	if len(spec.Operations) != 1 || spec.Operations[0].Name != mcp.Operation || !spec.Operations[0].RequiresApprovalByDefault {
		t.Fatalf("operations = %+v, want one call requiring approval", spec.Operations)
	}
	if len(spec.Settings) != 1 || spec.Settings[0].Key != "token" || spec.Settings[0].Type != tools.SettingPassword {
		t.Fatalf("settings = %+v, want the token as a password", spec.Settings)
	}
	tool, _ := reg.Lookup("demo.McpPyEcho")
	if mt, ok := tool.(*mcp.Tool); !ok || mt.MCPName() != "echo" || mt.Server().Name != "py" {
		t.Fatalf("registered tool = %#v", tool)
	}
}

func TestRequireApprovalFalse(t *testing.T) {
	t.Parallel()
	m := newManager(t, mcp.Options{})
	cfg := pyServer(t)
	no := false
	cfg.RequireApproval = &no
	if err := m.Add(cfg); err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if err := m.Sync(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	spec, _ := reg.Spec("demo.McpPyEcho")
	if spec.Operations[0].RequiresApprovalByDefault {
		t.Fatal("approval required although the config says no")
	}
}

func TestCallResultsAndToolErrors(t *testing.T) {
	t.Parallel()
	_, reg := syncedPy(t, mcp.Options{})
	echoPID(t, reg, nil)

	_, err := executor(t, reg, "demo:py_fail").Execute(context.Background(), tools.Call{Operation: mcp.Operation})
	toolErr(t, err, "this tool always fails")

	// Arguments the tool refuses come back as its isError result.
	_, err = executor(t, reg, "demo:py_echo").Execute(context.Background(), tools.Call{Operation: mcp.Operation, Args: map[string]any{"text": 3}})
	toolErr(t, err, "text must be a string")
}

func TestSecretsSelectTheConnection(t *testing.T) {
	t.Parallel()
	_, reg := syncedPy(t, mcp.Options{})
	who := executor(t, reg, "demo:py_whoami")
	for _, token := range []string{"alpha", "beta"} {
		res, err := who.Execute(context.Background(), tools.Call{Operation: mcp.Operation, Settings: map[string]any{"token": token}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Content != token {
			t.Fatalf("the server saw token %q, want %q", res.Content, token)
		}
	}
	// One process per distinct secret set; the same secret reuses its process.
	a1 := echoPID(t, reg, map[string]any{"token": "alpha"})
	b := echoPID(t, reg, map[string]any{"token": "beta"})
	a2 := echoPID(t, reg, map[string]any{"token": "alpha"})
	if a1 != a2 || a1 == b {
		t.Fatalf("pids alpha %d/%d beta %d: want one process per token", a1, a2, b)
	}
}

func TestSlowCallTimesOut(t *testing.T) {
	t.Parallel()
	// The timeout also bounds the server's start and handshake (Sync), which a loaded machine
	// (the race detector, two suites at once) has taken over 2 s for: 8 s leaves room for that
	// and stays far below the 120 s the tool would sleep.
	_, reg := syncedPy(t, mcp.Options{CallTimeout: 8 * time.Second})
	before := echoPID(t, reg, nil)
	start := time.Now()
	_, err := executor(t, reg, "demo:py_slow").Execute(context.Background(), tools.Call{Operation: mcp.Operation, Args: map[string]any{"seconds": 120}})
	toolErr(t, err, "timed out")
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("the call took %s, the timeout is 8s", d)
	}
	// The server is still the same, still usable.
	if after := echoPID(t, reg, nil); after != before {
		t.Fatalf("server restarted after a timeout (%d then %d)", before, after)
	}
}

func TestCrashedServerRestartsOnNextCall(t *testing.T) {
	t.Parallel()
	_, reg := syncedPy(t, mcp.Options{})
	first := echoPID(t, reg, nil)
	_, err := executor(t, reg, "demo:py_crash").Execute(context.Background(), tools.Call{Operation: mcp.Operation})
	toolErr(t, err, "connection lost")
	waitGone(t, first)
	second := echoPID(t, reg, nil)
	if second == first {
		t.Fatal("same process after a crash")
	}
}

func TestCrashDetectedBetweenCalls(t *testing.T) {
	t.Parallel()
	_, reg := syncedPy(t, mcp.Options{})
	first := echoPID(t, reg, nil)
	// The process dies outside any call: the next call must not fail on the dead pipe.
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, first)
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := executor(t, reg, "demo:py_echo").Execute(context.Background(), tools.Call{Operation: mcp.Operation, Args: map[string]any{"text": "x"}})
		if err == nil {
			if res.Content != "x" {
				t.Fatalf("content %q", res.Content)
			}
			break
		}
		// At most one call may race the detection of the dead process; it fails as a tool
		// error and the next one reconnects.
		toolErr(t, err, "MCP server")
		if time.Now().After(deadline) {
			t.Fatalf("no restart after a kill: %v", err)
		}
	}
}

func TestListChangedNotificationUpdatesRegistry(t *testing.T) {
	t.Parallel()
	_, reg := syncedPy(t, mcp.Options{}, "--late-tool", "1")
	if _, ok := reg.LookupModelName("demo:py_late_tool"); ok {
		t.Skip("the late tool appeared before the first listing (slow machine); nothing to prove")
	}
	waitFor(t, reg, "demo:py_late_tool", true)
	waitFor(t, reg, "demo:py_fail", false)
	res, err := executor(t, reg, "demo:py_late_tool").Execute(context.Background(), tools.Call{Operation: mcp.Operation})
	if err != nil || res.Content != "late" {
		t.Fatalf("late tool = %q, %v", res.Content, err)
	}
}

func TestPeriodicRefreshUpdatesRegistry(t *testing.T) {
	t.Parallel()
	_, reg := syncedPy(t, mcp.Options{RefreshInterval: 200 * time.Millisecond}, "--late-tool", "1", "--silent")
	if _, ok := reg.LookupModelName("demo:py_late_tool"); ok {
		t.Skip("the late tool appeared before the first listing (slow machine); nothing to prove")
	}
	waitFor(t, reg, "demo:py_late_tool", true)
	waitFor(t, reg, "demo:py_fail", false)
}

func waitFor(t *testing.T, reg *tools.Registry, name string, present bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, ok := reg.LookupModelName(name); ok == present {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tool %s present=%v never happened; registered %v", name, present, modelNames(reg))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCloseStopsServers(t *testing.T) {
	t.Parallel()
	m, reg := syncedPy(t, mcp.Options{})
	pids := []int{echoPID(t, reg, nil), echoPID(t, reg, map[string]any{"token": "t"})}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Fatalf("process %d survived Close", pid)
		}
	}
	_, err := executor(t, reg, "demo:py_echo").Execute(context.Background(), tools.Call{Operation: mcp.Operation, Args: map[string]any{"text": "x"}})
	toolErr(t, err, "closed")
	if err := m.Sync(context.Background(), reg); !errors.Is(err, svcerr.ErrUnavailable) {
		t.Fatalf("Sync after Close = %v, want ErrUnavailable", err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestUnstartableServer(t *testing.T) {
	t.Parallel()
	m := newManager(t, mcp.Options{CallTimeout: 5 * time.Second})
	if err := m.Add(mcp.ServerConfig{Slug: "demo", Name: "gone", Command: filepath.Join(t.TempDir(), "no-such-binary")}); err != nil {
		t.Fatal(err)
	}
	err := m.Sync(context.Background(), tools.NewRegistry())
	if !errors.Is(err, svcerr.ErrUnavailable) {
		t.Fatalf("Sync = %v, want ErrUnavailable", err)
	}
}

func TestAddRefusals(t *testing.T) {
	t.Parallel()
	m := newManager(t, mcp.Options{})
	ok := mcp.ServerConfig{Slug: "demo", Name: "files", Command: "true"}
	bad := []mcp.ServerConfig{
		{Slug: "Demo", Name: "x", Command: "true"},
		{Slug: "core", Name: "x", Command: "true"},
		{Slug: "demo", Name: "", Command: "true"},
		{Slug: "demo", Name: "---", Command: "true"},
		{Slug: "demo", Name: "x"},
		{Slug: "demo", Name: "x", Command: "true", URL: "https://example.com/mcp"},
		{Slug: "demo", Name: "x", URL: "ftp://example.com/mcp"},
		{Slug: "demo", Name: "x", URL: "https://user:pw@example.com/mcp"},
		{Slug: "demo", Name: "x", URL: "https://example.com/mcp", Headers: map[string]string{"X-A": "a\r\nb"}},
		{Slug: "demo", Name: "x", URL: "https://example.com/mcp", Headers: map[string]string{"Content-Type": "x"}},
		{Slug: "demo", Name: "x", Command: "true", Env: map[string]string{"A-B": "x"}},
		{Slug: "demo", Name: "x", Command: "true", Secrets: []mcp.SecretDecl{{Key: "Token"}}},
		{Slug: "demo", Name: "x", Command: "true", Secrets: []mcp.SecretDecl{{Key: "t"}, {Key: "t"}}},
		{Slug: "demo", Name: "x", Command: "true", Secrets: []mcp.SecretDecl{{Key: "t", Header: "X-T"}}},
		{Slug: "demo", Name: "x", URL: "https://example.com/mcp", Secrets: []mcp.SecretDecl{{Key: "t", Env: "T"}}},
	}
	for i, cfg := range bad {
		if err := m.Add(cfg); !errors.Is(err, svcerr.ErrInvalid) {
			t.Errorf("case %d: Add(%+v) = %v, want ErrInvalid", i, cfg, err)
		}
	}
	if err := m.Add(ok); err != nil {
		t.Fatal(err)
	}
	dup := ok
	dup.Name = "Files" // sanitises like "files": the tool names would clash
	if err := m.Add(dup); !errors.Is(err, svcerr.ErrConflict) {
		t.Fatalf("Add duplicate = %v, want ErrConflict", err)
	}
	if got := m.Servers(); len(got) != 1 || got[0].Name != "files" {
		t.Fatalf("Servers() = %+v", got)
	}
}

// TestRemoveForgetsAPlugin: Remove stops the plugin's server processes and unregisters its
// tools; a later Sync does not bring them back.
func TestRemoveForgetsAPlugin(t *testing.T) {
	t.Parallel()
	m, reg := syncedPy(t, mcp.Options{})
	pid := echoPID(t, reg, nil)
	m.Remove("demo")
	waitGone(t, pid)
	if names := modelNames(reg); len(names) != 0 {
		t.Fatalf("tools left after Remove: %v", names)
	}
	if err := m.Sync(context.Background(), reg); err != nil || len(modelNames(reg)) != 0 || len(m.Servers()) != 0 {
		t.Fatalf("Sync after Remove: %v, tools %v, servers %v", err, modelNames(reg), m.Servers())
	}
}
