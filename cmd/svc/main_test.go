package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/platform/config"
)

func TestTemplateValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("id: Bad Id\nname: x\nversion: '1'\nagent: {max_steps: 0}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := run([]string{"template", "validate", bad}, nil, nil, &out)
	if !errors.Is(err, errTemplateInvalid) {
		t.Fatalf("err = %v, want errTemplateInvalid", err)
	}
	for _, want := range []string{"ID_PATTERN", "/id", "VERSION_PATTERN", "MAX_STEPS_RANGE", "/agent/max_steps", "SYSTEM_PROMPT_MISSING"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := run([]string{"template", "validate", filepath.Join("..", "..", "agent-templates", "core", "assistant.json")}, nil, nil, &out); err != nil {
		t.Fatalf("shipped template: %v\n%s", err, out.String())
	}
	if err := run([]string{"template", "validate"}, nil, nil, &out); err == nil {
		t.Fatal("missing FILE accepted")
	}
}

func TestUserCreateAndMigrate(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // the SQLite file is storage/<db_name>.sqlite under the working directory
	env := []string{
		"SVC_CONFIG_FILE=" + filepath.Join(dir, "none.yaml"),
		"SVC_KEY_PATH=" + filepath.Join(dir, "secret.key"),
		"SVC_LOG_PATH=" + filepath.Join(dir, "svc.log"),
		"SVC_USER_PASSWORD=correct horse battery",
	}
	if dsn := os.Getenv("SVC_TEST_MYSQL_DSN"); dsn != "" {
		t.Skip("the command-line test uses the SQLite default")
	}
	var out bytes.Buffer
	if err := run([]string{"user", "create", "--email", "Root@Example.com", "--admin"}, env, strings.NewReader(""), &out); err != nil {
		t.Fatalf("user create: %v", err)
	}
	if !strings.Contains(out.String(), "<root@example.com> admin=true") {
		t.Fatalf("output = %q", out.String())
	}
	if err := run([]string{"user", "create", "--email", "root@example.com"}, env, strings.NewReader(""), &out); err == nil {
		t.Fatal("duplicate user accepted")
	}
	out.Reset()
	if err := run([]string{"migrate"}, env, nil, &out); err != nil || !strings.Contains(out.String(), "0001") {
		t.Fatalf("migrate: %v %q", err, out.String())
	}
	if err := run([]string{"bogus"}, env, nil, &out); err == nil {
		t.Fatal("unknown command accepted")
	}
}

func TestServeBanner(t *testing.T) {
	t.Parallel()
	all := &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8081}
	for _, tt := range []struct {
		env  []string
		addr net.Addr
		want string
	}{
		{nil, all, "svc: serving on [::]:8080, all interfaces (on this machine http://localhost:8080/svc/) (database sqlite storage/svc.sqlite, worker mode server, log storage/svc.log at level info)"},
		{[]string{"SVC_DB_DRIVER=mysql", "SVC_DB_PASSWORD=hunter2", "SVC_LOG_PATH=stdout", "SVC_WORKER_RUNTIME_MODE=client"}, local,
			"svc: serving on 127.0.0.1:8081 (http://127.0.0.1:8081/svc/) (database mysql svc@127.0.0.1:3306/svc, worker mode client, log stdout at level info)"},
	} {
		cfg, err := config.NewLoader(append([]string{"SVC_CONFIG_FILE=" + t.TempDir() + "/none.yaml"}, tt.env...)).Load()
		if err != nil {
			t.Fatal(err)
		}
		if got := banner(cfg, tt.addr); got != tt.want {
			t.Errorf("banner = %q\nwant     %q", got, tt.want)
		}
	}
}
