// Command svcbench reproduces the table of issue 14 on the real binary: it builds (or takes,
// -bin) `svc`, runs it as a subprocess on fresh databases (a SQLite file in a temporary folder; a
// throwaway MariaDB/MySQL database beside -mysql-dsn's; a throwaway PostgreSQL database beside
// -postgres-dsn's) against a zero-latency OpenAI-compatible fake model served by this program,
// and measures every row of the table with its baseline in the same run:
//
//  1. one-step tasks drained/s, SQLite, default settings (and with -alt-workers), N tasks queued
//     through the session API while no worker runs (`svc serve --api-only`), then drained by
//     `svc serve` from its start until every task is COMPLETED;
//  2. the same on MariaDB/MySQL and on PostgreSQL;
//  3. two-turn tasks (one auto-approved calculator call, then the answer), every dialect;
//  4. wall time per drained one-step task ÷ one raw SQLite commit (the store's DSN, a fresh file);
//  5. statements and write transactions per one-step task, from the binary's own counters
//     (svc_db_statements_total, svc_db_transactions_total on /metrics);
//  6. GET /tasks/{id} throughput ÷ a bare gin engine serving one GORM point read, alternated,
//     same client and concurrency;
//  7. idle RSS, and RSS per in-flight task (tasks held by the fake model);
//  8. the embedded SSE hub: p99 delivery latency and memory per subscriber with -subscribers
//     subscribers, one event per 300 ms, against the same latency with one subscriber;
//  9. issue 28: River (bench/river, its own module, built and run as a subprocess) doing a
//     one-step task's work on SQLite and PostgreSQL, drained alternated with the service's
//     drains: the rate, the CPU per task of the worker and the database server, and the bytes
//     written and kept per task (drainMeter), MariaDB against River on PostgreSQL;
//  10. with -alt-bin, a second svc binary's one-step drains alternated with -bin's.
//
// It prints a markdown table (figure, measured, baseline, goal) and the details of each run.
// `make bench-binary` runs it with the defaults; -quick is the smoke mode a test runs.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

type options struct {
	bin         string
	n           int
	twoTurnN    int
	rounds      int
	altWorkers  int
	mysqlDSN    string
	postgresDSN string
	riverBin    string
	altBin      string
	riverWork   int
	subscribers int
	hubEvents   int
	hubPeriod   time.Duration
	inflight    int
	getFor      time.Duration
	getConc     int
	rows        string
	quick       bool
	keep        bool
	verbose     bool
}

func main() {
	if addr := os.Getenv(minimalServerEnv); addr != "" {
		minimalServer(addr) // the RSS floor of a Go HTTP server (row 7's baseline)
		return
	}
	o := parseFlags(os.Args[1:])
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "svcbench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) options {
	var o options
	fs := flag.NewFlagSet("svcbench", flag.ExitOnError)
	fs.StringVar(&o.bin, "bin", "", "the svc binary (default: build ./cmd/svc into a temporary folder)")
	fs.IntVar(&o.n, "n", 2000, "tasks queued per drain")
	fs.IntVar(&o.twoTurnN, "twoturn-n", 1000, "tasks queued per two-turn drain")
	fs.IntVar(&o.rounds, "rounds", 3, "alternated rounds of each drain (the table shows medians)")
	fs.IntVar(&o.altWorkers, "alt-workers", 2, "also drain one-step tasks on SQLite with this max_workers, alternated with the default (0: not)")
	fs.StringVar(&o.mysqlDSN, "mysql-dsn", os.Getenv("SVC_TEST_MYSQL_DSN"), "a MariaDB/MySQL server (a throwaway database is created beside the DSN's; empty: the MariaDB rows are skipped)")
	fs.StringVar(&o.postgresDSN, "postgres-dsn", os.Getenv("SVC_TEST_POSTGRES_DSN"), "a PostgreSQL server (a throwaway database is created beside the DSN's; empty: the PostgreSQL rows are skipped)")
	fs.StringVar(&o.riverBin, "river-bin", "", "bench/river's binary (default: build it into a temporary folder; it is its own module)")
	fs.StringVar(&o.altBin, "alt-bin", "", "a second svc binary whose one-step drains (SQLite, PostgreSQL, MariaDB) alternate with -bin's in every round (a before/after; empty: none)")
	fs.IntVar(&o.riverWork, "river-workers", 100, "River's MaxWorkers (its examples' value)")
	fs.IntVar(&o.subscribers, "subscribers", 10000, "subscribers of the embedded hub")
	fs.IntVar(&o.hubEvents, "hub-events", 30, "events published to the subscribers (one per -hub-period)")
	fs.DurationVar(&o.hubPeriod, "hub-period", 300*time.Millisecond, "period of the hub's events")
	fs.IntVar(&o.inflight, "inflight", 1000, "tasks held in flight at once for the RSS per in-flight task")
	fs.DurationVar(&o.getFor, "get-for", 2*time.Second, "duration of each GET phase (service, bare), per round")
	fs.IntVar(&o.getConc, "get-conc", 4, "concurrent clients of the GET row (both sides)")
	fs.StringVar(&o.rows, "rows", "all", "rows to run: all, or a comma-separated list of drain,mysql,postgres,river,twoturn,get,rss,hub")
	fs.BoolVar(&o.quick, "quick", false, "smoke mode: 50 tasks, 100 subscribers, one round, short phases")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary folders and databases")
	fs.BoolVar(&o.verbose, "v", false, "log progress")
	_ = fs.Parse(args)
	if o.quick {
		o.n, o.twoTurnN, o.rounds, o.subscribers, o.hubEvents, o.inflight, o.getFor = 50, 50, 1, 100, 5, 20, 300*time.Millisecond
	}
	return o
}

// bench is one run of the program.
type bench struct {
	o   options
	out io.Writer
	bin string
	tmp string
	// riverBin is bench/river's worker; empty when the River rows do not run.
	riverBin string
	model    *fakeModel
	rows     []row
	notes    []string
}

// row is one line of the table.
type row struct {
	figure, measured, baseline, goal string
}

func (b *bench) logf(format string, args ...any) {
	if b.o.verbose {
		fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
	}
}

func (b *bench) add(figure, measured, baseline, goal string) {
	b.rows = append(b.rows, row{figure, measured, baseline, goal})
}

func (b *bench) note(format string, args ...any) {
	b.notes = append(b.notes, fmt.Sprintf(format, args...))
}

// once notes a text the first time it is given.
func (b *bench) once(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if !slices.Contains(b.notes, n) {
		b.notes = append(b.notes, n)
	}
}

func (b *bench) want(name string) bool {
	if b.o.rows == "all" || b.o.rows == "" {
		return true
	}
	for _, r := range strings.Split(b.o.rows, ",") {
		if strings.TrimSpace(r) == name {
			return true
		}
	}
	return false
}

func run(o options, out io.Writer) error {
	b := &bench{o: o, out: out}
	var err error
	if b.tmp, err = os.MkdirTemp("", "svcbench-"); err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(b.tmp)
	}
	raiseFileLimit()
	if b.bin = o.bin; b.bin == "" {
		if b.bin, err = build(b.tmp); err != nil {
			return err
		}
	}
	if b.want("river") {
		if b.riverBin = o.riverBin; b.riverBin == "" {
			if b.riverBin, err = buildRiver(b.tmp); err != nil {
				if !o.quick {
					return err
				}
				b.note("River rows skipped: %v", err) // the smoke mode tolerates a machine without the module's dependencies
				b.riverBin = ""
			}
		}
	}
	if b.model, err = newFakeModel(); err != nil {
		return err
	}
	defer b.model.Close()
	start := time.Now()
	load0 := loadavg()

	if b.want("drain") || b.want("mysql") || b.want("postgres") || b.want("river") || b.want("twoturn") || b.want("get") {
		if err := b.drains(); err != nil {
			return err
		}
	}
	if b.want("rss") || b.want("hub") {
		if err := b.memoryAndHub(); err != nil {
			return err
		}
	}

	fmt.Fprintf(out, "\n## svcbench: issue 14 on the real binary\n\n")
	fmt.Fprintf(out, "binary %s; %d CPUs (GOMAXPROCS %d), %s %s/%s; load average %s at start, %s at end; %s in all\n",
		b.bin, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, load0, loadavg(), time.Since(start).Round(time.Second))
	fmt.Fprintf(out, "N = %d one-step and %d two-turn tasks per drain, %d rounds (medians), %d hub subscribers, %d tasks in flight\n\n", o.n, o.twoTurnN, o.rounds, o.subscribers, o.inflight)
	fmt.Fprintln(out, "| figure | measured | baseline (same run) | goal |")
	fmt.Fprintln(out, "|---|---|---|---|")
	for _, r := range b.rows {
		fmt.Fprintf(out, "| %s | %s | %s | %s |\n", r.figure, r.measured, r.baseline, r.goal)
	}
	if len(b.notes) > 0 {
		fmt.Fprintln(out)
		for _, n := range b.notes {
			fmt.Fprintln(out, "- "+n)
		}
	}
	return nil
}

// build compiles ./cmd/svc of the module the program runs in into dir.
func build(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "svc")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/svc")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/svc: %v\n%s", err, out)
	}
	return bin, nil
}

// moduleRoot is the folder of the go.mod above the working directory.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the module (go env GOMOD is empty): run from the repository or pass -bin")
	}
	return filepath.Dir(mod), nil
}

// raiseFileLimit lifts the soft limit of open files to the hard one; the processes the bench
// starts inherit it (calling Setrlimit stops Go from restoring the original limit for children).
func raiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

func fileLimit() uint64 {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return 0
	}
	return l.Cur
}

func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
