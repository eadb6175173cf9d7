package config

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
)

func newFakeClock() *testkit.Clock {
	return testkit.NewClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
}

// syncBuffer collects log output from concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// rewrite replaces the file's content and sets its modification time explicitly, so the test
// does not depend on the file system's timestamp resolution.
func rewrite(t *testing.T, path, content string, mod time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

func TestCurrentRereadsChangedFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	mod := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rewrite(t, path, "log_level: debug\n", mod)

	clock := newFakeClock()
	logs := &syncBuffer{}
	l := NewLoader([]string{"SVC_CONFIG_FILE=" + path}).
		WithClock(clock.Now).
		WithLogger(slog.New(slog.NewJSONHandler(logs, nil)))
	if _, err := l.Load(); err != nil {
		t.Fatal(err)
	}
	level := func() string { t.Helper(); return l.Current().LogLevel }

	// Same size, new modification time; not looked at within the second.
	mod = mod.Add(time.Minute)
	rewrite(t, path, "log_level: error\n", mod)
	clock.Advance(999 * time.Millisecond)
	if got := level(); got != "debug" {
		t.Fatalf("re-read within a second: %s", got)
	}
	clock.Advance(time.Millisecond)
	if got := level(); got != "error" {
		t.Fatalf("after mtime change: %s, want error", got)
	}

	// New size, same modification time.
	rewrite(t, path, "log_level: info\n", mod)
	clock.Advance(time.Second)
	if got := level(); got != "info" {
		t.Fatalf("after size change: %s, want info", got)
	}

	// Unchanged stamp: not re-read even if the content differs (same size, same mtime).
	rewrite(t, path, "log_level: warn\n", mod)
	clock.Advance(time.Second)
	if got := level(); got != "info" {
		t.Fatalf("unchanged stamp re-read: %s", got)
	}

	// A broken file keeps the previous configuration and is logged once.
	mod = mod.Add(time.Minute)
	rewrite(t, path, "log_level: [\n", mod)
	for range 3 {
		clock.Advance(time.Second)
		if got := level(); got != "info" {
			t.Fatalf("broken file replaced config: %s", got)
		}
	}
	if n := strings.Count(logs.String(), "reload configuration"); n != 1 {
		t.Errorf("logged %d times:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), path) || !strings.Contains(logs.String(), "line 1") {
		t.Errorf("log does not name file and line: %s", logs)
	}

	// An invalid (but parsable) file too.
	mod = mod.Add(time.Minute)
	rewrite(t, path, "log_level: loud\n", mod)
	clock.Advance(time.Second)
	if got := level(); got != "info" {
		t.Fatalf("invalid file replaced config: %s", got)
	}
	if !strings.Contains(logs.String(), `log_level \"loud\" is not supported`) {
		t.Errorf("validation error not logged: %s", logs)
	}

	// Fixed again.
	mod = mod.Add(time.Minute)
	rewrite(t, path, "log_level: debug\n", mod)
	clock.Advance(time.Second)
	if got := level(); got != "debug" {
		t.Fatalf("fixed file: %s", got)
	}

	// Removed: back to the defaults.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if got := level(); got != "info" {
		t.Fatalf("removed file: %s", got)
	}

	// Created again.
	rewrite(t, path, "log_level: error\n", mod)
	clock.Advance(time.Second)
	if got := level(); got != "error" {
		t.Fatalf("recreated file: %s", got)
	}
}

func TestCurrentWithoutLoad(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "config.yaml", "log_level: info\n")
	if got := NewLoader([]string{"SVC_CONFIG_FILE=" + path}).Current(); got == nil || got.LogLevel != "info" {
		t.Errorf("Current = %v", got)
	}

	bad := writeFile(t, "config.yaml", "log_level: loud\n")
	logs := &syncBuffer{}
	l := NewLoader([]string{"SVC_CONFIG_FILE=" + bad}).WithLogger(slog.New(slog.NewTextHandler(logs, nil)))
	if got := l.Current(); got != nil {
		t.Errorf("Current of an invalid configuration = %v, want nil", got)
	}
	if !strings.Contains(logs.String(), "loud") {
		t.Errorf("error not logged: %s", logs)
	}
}

func TestCurrentReturnsCopies(t *testing.T) {
	t.Parallel()
	l := NewLoader([]string{"SVC_CONFIG_FILE=" + filepath.Join(t.TempDir(), "none.yaml")})
	a, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	a.LogLevel = "mutated"
	if b := l.Current(); b.LogLevel != "info" {
		t.Errorf("mutation leaked into the loader: %s", b.LogLevel)
	}
}

// TestViewIsTheSharedSnapshot: View hands out the loader's snapshot without copying it, a
// re-read replaces that snapshot instead of changing it (a View taken before keeps its values),
// and Current still returns a private copy.
func TestViewIsTheSharedSnapshot(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	mod := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rewrite(t, path, "log_level: debug\n", mod)
	clock := newFakeClock()
	l := NewLoader([]string{"SVC_CONFIG_FILE=" + path}).WithClock(clock.Now)
	if _, err := l.Load(); err != nil {
		t.Fatal(err)
	}
	before := l.View()
	if l.View() != before {
		t.Fatal("View copied the snapshot")
	}
	if c := l.Current(); c == before || *c != *before {
		t.Fatal("Current is not a copy of the snapshot")
	}
	rewrite(t, path, "log_level: error\n", mod.Add(time.Minute))
	clock.Advance(time.Second)
	after := l.View()
	if after == before || after.LogLevel != "error" {
		t.Fatalf("after the re-read: %s (same snapshot: %v)", after.LogLevel, after == before)
	}
	if before.LogLevel != "debug" {
		t.Fatalf("the re-read changed the earlier snapshot: %s", before.LogLevel)
	}
}

func TestSetStored(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "config.yaml", "log_level: info\nmax_workers: 2\n")
	clock := newFakeClock()
	l := NewLoader([]string{"SVC_CONFIG_FILE=" + path, "SVC_TOOL_HTTP_TIMEOUT=10"}).WithClock(clock.Now)
	if _, err := l.Load(); err != nil {
		t.Fatal(err)
	}

	if err := l.SetStored(map[string]any{
		"log_level":     "error",
		"plugin":        map[string]any{"catalog": map[string]any{"ttl": 60}},
		"SVC_AGENT_API": true,
		"mail_port":     int64(465),
	}); err != nil {
		t.Fatal(err)
	}
	c := l.Current()
	if c.LogLevel != "error" || c.PluginCatalogTTL != 60 || !c.AgentAPI || c.MaxWorkers != 2 || c.ToolHTTPTimeout != 10 || c.MailPort != 465 {
		t.Errorf("after SetStored: %v", c)
	}

	tests := []struct {
		name     string
		settings map[string]any
		want     []string
	}{
		{"invalid value", map[string]any{"log_level": "loud", "max_workers": -1},
			[]string{`log_level "loud" is not supported (use debug, info, warning or error) (from stored settings)`, "max_workers must not be negative"}},
		{"unknown key", map[string]any{"log_levle": "info"}, []string{`stored settings: unknown key "log_levle" (did you mean log_level?)`}},
		{"wrong type", map[string]any{"max_workers": "3"}, []string{`stored settings: max_workers: expected an integer, got the string "3"`}},
		{"fraction", map[string]any{"max_workers": 1.5}, []string{"expected an integer"}},
		{"not storable", map[string]any{"secret_key": testKey, "db_driver": "mysql", "listen": ":1"},
			[]string{"db_driver cannot be stored", "listen cannot be stored", "secret_key cannot be stored"}},
		{"nested not storable", map[string]any{"db": map[string]any{"password": "x"}}, []string{"db_password cannot be stored"}},
		{"flat only", map[string]any{"SVC": map[string]any{"AGENT_API": true}}, []string{"SVC_AGENT_API must be written flat"}},
		{"ssl on 587", map[string]any{"mail_port": 587, "mail_encryption": "ssl"}, []string{"mail_encryption ssl cannot be used with mail_port 587"}},
	}
	for _, tt := range tests {
		err := l.SetStored(tt.settings)
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: err = %v, want a ValidationError", tt.name, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q\ndoes not contain %q", tt.name, err, w)
			}
		}
		// Nothing changed.
		if c := l.Current(); c.LogLevel != "error" || c.PluginCatalogTTL != 60 || c.MailPort != 465 {
			t.Errorf("%s: config changed: %v", tt.name, c)
		}
	}

	// The stored layer survives a file re-read.
	rewrite(t, path, "log_level: debug\nmax_workers: 5\n", time.Now().Add(time.Hour))
	clock.Advance(time.Second)
	if c := l.Current(); c.LogLevel != "error" || c.MaxWorkers != 5 {
		t.Errorf("after re-read: %v", c)
	}

	// Replacing the layer drops keys it no longer has.
	if err := l.SetStored(nil); err != nil {
		t.Fatal(err)
	}
	if c := l.Current(); c.LogLevel != "debug" || c.PluginCatalogTTL != 3600 {
		t.Errorf("after clearing: %v", c)
	}
}

func TestSetStoredBeforeLoad(t *testing.T) {
	t.Parallel()
	l := NewLoader([]string{"SVC_CONFIG_FILE=" + filepath.Join(t.TempDir(), "none.yaml")})
	if err := l.SetStored(map[string]any{"log_level": "loud"}); err == nil {
		t.Error("invalid stored settings accepted")
	}
	if err := l.SetStored(map[string]any{"log_level": "info"}); err != nil {
		t.Fatal(err)
	}
	c, err := l.Load()
	if err != nil || c.LogLevel != "info" {
		t.Errorf("Load = %v, %v", c, err)
	}
}

func TestLoaderConcurrency(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	rewrite(t, path, "max_workers: 1\n", time.Now())
	clock := newFakeClock()
	l := NewLoader([]string{"SVC_CONFIG_FILE=" + path}).WithClock(clock.Now)
	if _, err := l.Load(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				switch (i + j) % 4 {
				case 0:
					if c := l.Current(); c == nil || c.MaxWorkers < 1 {
						t.Errorf("Current = %v", c)
						return
					}
				case 1:
					clock.Advance(300 * time.Millisecond)
				case 2:
					if err := l.SetStored(map[string]any{"log_level": "info"}); err != nil {
						t.Error(err)
						return
					}
				case 3:
					if i == 0 {
						if err := atomicWrite(path, "max_workers: "+string(rune('1'+j%9))+"\n"); err != nil {
							t.Error(err)
							return
						}
					} else if _, err := l.Load(); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// atomicWrite replaces a file so that concurrent readers see the old or the new content, never
// a partial one.
func atomicWrite(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// TestSourceOf: each key reports the highest layer that set it, and follows the file's
// re-reads and the stored layer's changes; a refused SetStored changes no source.
func TestSourceOf(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "config.yaml", "log_level: info\nmax_workers: 2\nllm_timeout: 30\n")
	clock := newFakeClock()
	l := NewLoader([]string{"SVC_CONFIG_FILE=" + path, "SVC_TOOL_HTTP_TIMEOUT=10", "SVC_LLM_TIMEOUT=40"}).WithClock(clock.Now)
	if _, err := l.Load(); err != nil {
		t.Fatal(err)
	}
	check := func(when string, want map[string]Source) {
		t.Helper()
		for k, s := range want {
			if got := l.SourceOf(k); got != s {
				t.Errorf("%s: SourceOf(%s) = %s, want %s", when, k, got, s)
			}
		}
	}
	check("loaded", map[string]Source{"log_level": SourceFile, "max_workers": SourceFile, "tool_http_timeout": SourceEnvironment,
		"llm_timeout": SourceEnvironment, "plugin_catalog_ttl": SourceDefault, "no_such_key": SourceDefault})
	if err := l.SetStored(map[string]any{"max_workers": 3, "plugin_catalog_ttl": 60}); err != nil {
		t.Fatal(err)
	}
	check("stored", map[string]Source{"max_workers": SourceStored, "plugin_catalog_ttl": SourceStored, "log_level": SourceFile})
	if err := l.SetStored(map[string]any{"log_level": "loud"}); err == nil {
		t.Fatal("invalid stored settings accepted")
	}
	check("refused", map[string]Source{"max_workers": SourceStored, "log_level": SourceFile})
	rewrite(t, path, "max_workers: 5\n", time.Now().Add(time.Hour))
	clock.Advance(time.Second)
	check("file re-read", map[string]Source{"log_level": SourceDefault, "max_workers": SourceStored})
	if err := l.SetStored(nil); err != nil {
		t.Fatal(err)
	}
	check("cleared", map[string]Source{"max_workers": SourceFile, "plugin_catalog_ttl": SourceDefault})
}
