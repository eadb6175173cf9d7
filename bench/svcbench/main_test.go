package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(minimalServerEnv); addr != "" {
		minimalServer(addr) // the bench re-executes its binary (here: the test binary) for row 7's baseline
		return
	}
	os.Exit(m.Run())
}

// TestQuick builds the binary and runs the program's smoke mode (-quick: 50 tasks, 100
// subscribers, one round), so that the program keeps working as the service changes. Without a
// DSN variable it runs every SQLite row; with SVC_TEST_MYSQL_DSN the MariaDB rows, with
// SVC_TEST_POSTGRES_DSN the PostgreSQL rows (River on PostgreSQL among them); the River rows
// whenever bench/river builds (its module's dependencies downloaded).
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the service: not in -short")
	}
	bin := filepath.Join(t.TempDir(), "svc")
	build := exec.Command("go", "build", "-o", bin, "github.com/agentsvc/svc/cmd/svc")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	o := parseFlags([]string{"-quick", "-bin", bin})
	// With a server database's DSN (CI's MariaDB and PostgreSQL suites, which run the packages
	// once per database) only that database's rows run; the SQLite and River-on-SQLite rows are
	// the SQLite suite's, where no DSN is set.
	if o.mysqlDSN != "" || o.postgresDSN != "" {
		var rows []string
		if o.mysqlDSN != "" {
			rows = append(rows, "mysql")
		}
		if o.postgresDSN != "" {
			rows = append(rows, "postgres", "river")
		}
		o.rows = strings.Join(rows, ",")
	}
	var out bytes.Buffer
	if err := run(o, &out); err != nil {
		t.Fatalf("svcbench -quick: %v\n%s", err, out.String())
	}
	t.Log(out.String())
	rows := map[string]bool{}
	for _, line := range strings.Split(out.String(), "\n") {
		if cells := strings.Split(line, " | "); len(cells) == 4 && strings.HasPrefix(line, "| ") {
			rows[strings.TrimPrefix(cells[0], "| ")] = true
			if strings.Contains(cells[1], "NaN") || strings.Contains(cells[1], "not exposed") {
				t.Errorf("row %q measured nothing: %s", cells[0], line)
			}
		}
	}
	var want []string
	if o.rows == "all" {
		want = []string{
			"one-step tasks drained/s, SQLite, default settings",
			"two-turn (one tool call) tasks/s, SQLite / MariaDB / PostgreSQL",
			"wall time per drained one-step task ÷ one raw SQLite commit (same pragmas, same run)",
			"statements per one-step task (SQLite)",
			"`GET /tasks/{id}` throughput ÷ bare gin + one GORM point read",
			"idle RSS / per in-flight task",
			"embedded SSE hub, 100 subscribers, one event per 300ms",
		}
		if !strings.Contains(out.String(), "River rows skipped") {
			want = append(want, "one-step drained/s ÷ River (same work, same run), SQLite", "CPU per one-step task, SQLite (the worker; the database is in it)")
		}
	}
	if o.mysqlDSN != "" {
		want = append(want, "same, MariaDB, default settings", "bytes written / kept per one-step task, MariaDB")
	}
	if o.postgresDSN != "" {
		want = append(want, "same, PostgreSQL, default settings")
		if !strings.Contains(out.String(), "River rows skipped") {
			want = append(want, "CPU per one-step task, PostgreSQL (worker + the database's server processes)",
				"bytes written / kept per one-step task, PostgreSQL")
		}
	}
	for _, w := range want {
		if !rows[w] {
			t.Errorf("the table has no row %q", w)
		}
	}
}
