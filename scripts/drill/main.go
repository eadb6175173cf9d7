// Command drill is the multi-instance drill of issue 14 (scripts/drill.sh runs it): on a throwaway
// MariaDB/MySQL database (or PostgreSQL, -db postgres) and a real Mercure hub it starts two API processes (`svc serve
// --api-only`) and two `svc worker` processes, enqueues N tasks through the session API of both
// API processes (a scripted model: one auto-approved calculator call, then the answer), kills one
// worker with SIGKILL mid-way and restarts it, waits for the drain and checks: every task
// COMPLETED, no tool call executed twice (task_tool_calls and the task event logs), and a
// subscriber on each API process (the task's event stream) and on the hub (the owner's
// user/{id}/tasks topic) saw every task's terminal event. It prints the figures and exits 1 on
// any loss, double execution or missed event.
//
// It is a package of its own rather than a `//go:build ignore` file so that `go build ./...` and
// `go vet ./...` keep it compiling; it imports nothing of the service but bench/outside
// (a session client over HTTP, shared with bench/svcbench) and the database drivers: it drives
// bin/svc from outside, as an operator would.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/agentsvc/svc/bench/outside"
	"github.com/agentsvc/svc/internal/platform/sseread"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "drill:", err)
		os.Exit(1)
	}
}

type options struct {
	n         int
	svc       string
	mercure   string
	dsn       string
	db        string
	pgDSN     string
	workdir   string
	keep      bool
	timeout   time.Duration
	killAt    float64
	enqueuers int
}

func run() error {
	var o options
	flag.IntVar(&o.n, "n", 10000, "tasks to drain")
	flag.StringVar(&o.svc, "svc", "bin/svc", "the svc binary")
	flag.StringVar(&o.mercure, "mercure", os.Getenv("SVC_TEST_MERCURE_BIN"), "the Mercure hub binary (scripts/mercure-build.sh)")
	flag.StringVar(&o.dsn, "dsn", envOr("SVC_TEST_MYSQL_DSN", "root@tcp(127.0.0.1:3306)/test"), "a MariaDB/MySQL server (its database is not used: a throwaway one is created beside it)")
	flag.StringVar(&o.db, "db", envOr("SVC_DRILL_DB", "mysql"), "the database: mysql (MariaDB/MySQL, -dsn) or postgres (-pg-dsn)")
	flag.StringVar(&o.pgDSN, "pg-dsn", envOr("SVC_TEST_POSTGRES_DSN", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"),
		"a PostgreSQL server, with -db postgres (its database is not used: a throwaway one is created beside it)")
	flag.StringVar(&o.workdir, "workdir", "", "working folder of the processes (default: a temporary one, removed on success)")
	flag.BoolVar(&o.keep, "keep", false, "keep the database and the working folder")
	flag.DurationVar(&o.timeout, "timeout", 0, "bound of the drain (default 3 minutes + 20 ms per task)")
	flag.Float64Var(&o.killAt, "kill-at", 0.3, "kill a worker when this share of the tasks completed")
	flag.IntVar(&o.enqueuers, "enqueuers", 16, "concurrent task creators")
	flag.Parse()
	if o.timeout == 0 {
		o.timeout = 3*time.Minute + time.Duration(o.n)*20*time.Millisecond
	}
	svc, err := filepath.Abs(o.svc)
	if err != nil {
		return err
	}
	o.svc = svc
	if o.db != "mysql" && o.db != "postgres" {
		return fmt.Errorf("-db %q: want mysql or postgres", o.db)
	}
	if o.mercure == "" {
		return errors.New("no Mercure hub: pass -mercure or set SVC_TEST_MERCURE_BIN (scripts/mercure-build.sh)")
	}
	d := &drill{o: o}
	defer d.cleanup()
	return d.run()
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

type drill struct {
	o       options
	dir     string
	dbName  string
	admin   *sql.DB // the server, for the throwaway database
	db      *sql.DB // the throwaway database
	env     []string
	procs   map[string]*exec.Cmd
	mu      sync.Mutex
	ok      bool
	apis    []string // base URLs of the API processes
	hubURL  string
	hubKey  string
	userID  int64
	agentID int64
}

func (d *drill) logf(format string, args ...any) {
	fmt.Printf("%s  "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

func (d *drill) cleanup() {
	d.mu.Lock()
	for name, p := range d.procs {
		_ = p.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _, _ = p.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.Process.Kill()
			d.logf("%s did not stop within 10s: killed", name)
		}
	}
	d.mu.Unlock()
	if d.keep() {
		d.logf("kept: database %s, folder %s", d.dbName, d.dir)
		return
	}
	if d.admin != nil && d.dbName != "" {
		if d.o.db == "postgres" {
			_, _ = d.admin.Exec("DROP DATABASE IF EXISTS " + d.dbName + " WITH (FORCE)")
		} else {
			_, _ = d.admin.Exec("DROP DATABASE IF EXISTS `" + d.dbName + "`")
		}
	}
	if d.dir != "" && d.o.workdir == "" {
		_ = os.RemoveAll(d.dir)
	}
}

func (d *drill) keep() bool { return d.o.keep || !d.ok }

func (d *drill) run() error {
	start := time.Now()
	if err := d.setup(); err != nil {
		return err
	}
	d.logf("setup done in %s: 2 × svc serve --api-only (%s), 2 × svc worker, Mercure hub %s, database %s",
		time.Since(start).Round(time.Millisecond), strings.Join(d.apis, ", "), d.hubURL, d.dbName)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	users := make([]*outside.Session, len(d.apis))
	for i, base := range d.apis {
		c, err := outside.Login(base, "drill@example.com", "drill-password-1", 256)
		if err != nil {
			return fmt.Errorf("log in on %s: %w", base, err)
		}
		users[i] = c
	}
	agentID, err := users[0].CreateAgent("Drill", "Compute.", true)
	if err != nil {
		return err
	}
	d.agentID = agentID

	// Subscribers: the hub's user topic, and one event stream per task on each API process.
	hubSeen, hubReady, err := d.subscribeHub(ctx, users[0])
	if err != nil {
		return err
	}
	<-hubReady
	streams := make([]*streamChecker, len(users))
	for i, c := range users {
		streams[i] = newStreamChecker(ctx, c, streamFollowers)
	}

	// Enqueue, alternating the API processes.
	t0 := time.Now()
	ids := make([]int64, d.o.n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, d.o.enqueuers)
	for range d.o.enqueuers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= d.o.n {
					return
				}
				id, err := createTask(users[i%len(users)], d.agentID, fmt.Sprintf("What is %d*7? (task %d)", i, i))
				if err != nil {
					errc <- fmt.Errorf("create task %d: %w", i, err)
					return
				}
				ids[i] = id
				for _, s := range streams {
					s.add(id)
				}
			}
		}()
	}

	// Kill a worker mid-way, restart it.
	var killedAt atomic.Int64 // Unix nanoseconds
	var held atomic.Int64
	held.Store(-1) // not killed yet
	go func() {
		target := int64(float64(d.o.n) * d.o.killAt)
		for ctx.Err() == nil {
			if n, _ := d.count("status = 'COMPLETED'"); n >= max(target, 1) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		p := d.proc("worker-1")
		killedAt.Store(time.Now().UnixNano())
		_ = p.Process.Kill()
		_, _ = p.Process.Wait()
		h, _ := d.count(fmt.Sprintf("status = 'RUNNING' AND lease_owner LIKE '%%:%d:%%'", p.Process.Pid))
		done, _ := d.count("status = 'COMPLETED'")
		held.Store(h)
		d.logf("worker-1 (pid %d) killed with SIGKILL at %d completed, holding %d RUNNING tasks (requeued once their lease expires); restarting it", p.Process.Pid, done, h)
		time.Sleep(500 * time.Millisecond)
		if err := d.start("worker-1", "worker"); err != nil {
			d.logf("restart worker-1: %v", err)
		}
	}()
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	enqueued := time.Since(t0)
	d.logf("enqueued %d tasks in %s (%.0f/s) through both API processes", d.o.n, enqueued.Round(time.Millisecond), float64(d.o.n)/enqueued.Seconds())

	// Drain.
	deadline := time.Now().Add(d.o.timeout)
	var atRest time.Duration // when every task but those the killed worker held completed
	lastLog := time.Now()
	for {
		open, err := d.count("status IN ('QUEUED', 'RUNNING')")
		if err != nil {
			return err
		}
		done, _ := d.count("status = 'COMPLETED'")
		if h := held.Load(); atRest == 0 && h >= 0 && done >= int64(d.o.n)-h {
			atRest = time.Since(t0)
		}
		if open == 0 {
			break
		}
		if time.Since(lastLog) > 10*time.Second {
			d.logf("draining: %d completed, %d queued or running", done, open)
			lastLog = time.Now()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not drained within %s: %d tasks still queued or running", d.o.timeout, open)
		}
		time.Sleep(100 * time.Millisecond)
	}
	drained := time.Since(t0)
	d.logf("drained in %s", drained.Round(time.Millisecond))

	// Subscribers: wait (bounded) for every stream to end and the hub to catch up.
	settle := time.Now().Add(10 * time.Second)
	for time.Now().Before(settle) {
		all := hubSeen.len() >= d.o.n
		for _, s := range streams {
			all = all && s.finished() >= d.o.n
		}
		if all {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return d.report(ids, drained, atRest, held.Load(), time.Unix(0, killedAt.Load()), hubSeen, streams)
}

func (d *drill) report(ids []int64, drained, atRest time.Duration, held int64, killedAt time.Time, hub *seenSet, streams []*streamChecker) error {
	completed, err := d.count("status = 'COMPLETED'")
	if err != nil {
		return err
	}
	total, _ := d.count("1 = 1")
	var dupCalls, dupExecuted, executed int64
	if err := d.db.QueryRow("SELECT COUNT(*) FROM (SELECT task_id FROM task_tool_calls GROUP BY task_id HAVING COUNT(*) > 1) AS x").Scan(&dupCalls); err != nil {
		return err
	}
	callID := "JSON_EXTRACT(data, '$.tool_call.ID')"
	if d.o.db == "postgres" {
		callID = "(data::jsonb -> 'tool_call' ->> 'ID')"
	}
	if err := d.db.QueryRow("SELECT COUNT(*) FROM (SELECT task_id, " + callID + " AS call_id FROM task_events " +
		"WHERE type = 'tool_call.executed' GROUP BY task_id, call_id HAVING COUNT(*) > 1) AS x").Scan(&dupExecuted); err != nil {
		return err
	}
	if err := d.db.QueryRow("SELECT COUNT(*) FROM task_events WHERE type = 'tool_call.executed'").Scan(&executed); err != nil {
		return err
	}
	// The calculator is repeatable: a call the kill interrupted runs again (at least once),
	// counted in its restarts; it is still recorded once.
	var restarted int64
	if err := d.db.QueryRow("SELECT COALESCE(SUM(restarts), 0) FROM task_tool_calls").Scan(&restarted); err != nil {
		return err
	}
	byStatus := map[string]int64{}
	rows, err := d.db.Query("SELECT status, COUNT(*) FROM tasks GROUP BY status")
	if err != nil {
		return err
	}
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return err
		}
		byStatus[s] = n
	}
	_ = rows.Close()

	// The hub is told after a step commits, so a task whose last step committed on the killed
	// worker just before SIGKILL may never be pushed (the push is at most once; event streams
	// read the log and miss nothing). Such misses are excused only when the task finished
	// within a second before the kill; any other miss fails the drill.
	missedHub, excused := 0, 0
	var example string
	for _, id := range ids {
		if hub.has(id) {
			continue
		}
		var finished sql.NullTime
		q := "SELECT finished_at FROM tasks WHERE id = ?"
		if d.o.db == "postgres" {
			q = "SELECT finished_at FROM tasks WHERE id = $1"
		}
		_ = d.db.QueryRow(q, id).Scan(&finished)
		if finished.Valid && !finished.Time.Before(killedAt.Add(-time.Second)) && !finished.Time.After(killedAt) {
			excused++
			continue
		}
		missedHub++
		if example == "" {
			example = fmt.Sprintf(" (e.g. task %d, finished %v; kill at %v)", id, finished.Time.Format(time.RFC3339Nano), killedAt.UTC().Format(time.RFC3339Nano))
		}
	}
	lost := int64(d.o.n) - completed
	fmt.Println()
	fmt.Println("== multi-instance drill")
	fmt.Printf("tasks                 %d (in the database: %d; by status %v)\n", d.o.n, total, byStatus)
	fmt.Printf("completed             %d\n", completed)
	fmt.Printf("lost (not COMPLETED)  %d\n", lost)
	fmt.Printf("double-executed       %d (tasks with more than one tool call row: %d; calls with two tool_call.executed events: %d; executed events %d)\n",
		dupCalls+dupExecuted, dupCalls, dupExecuted, executed)
	fmt.Printf("re-run after the kill %d (calculator calls, repeatable, the kill interrupted; each recorded once)\n", restarted)
	fmt.Printf("drain                 %s from the first task created, %.1f tasks/s\n", drained.Round(time.Millisecond), float64(d.o.n)/drained.Seconds())
	if atRest > 0 {
		fmt.Printf("                      all but the %d tasks the killed worker held completed at %s: %.1f tasks/s (the rest waited for their lease, %s, and the reaper)\n",
			held, atRest.Round(time.Millisecond), float64(int64(d.o.n)-held)/atRest.Seconds(), "1 min")
	}
	fmt.Printf("hub subscriber        saw the terminal update of %d/%d tasks (user/%d/tasks); missed %d%s, excused %d (finished on the killed worker within 1 s before SIGKILL: pushed after the commit, lost with the process)\n",
		d.o.n-missedHub-excused, d.o.n, d.userID, missedHub, example, excused)
	missed := missedHub
	for i, s := range streams {
		m, detail := s.missed(ids)
		missed += m
		fmt.Printf("event streams on API %d saw the terminal event of %d/%d tasks%s\n", i+1, d.o.n-m, d.o.n, detail)
	}
	if lost != 0 || dupCalls+dupExecuted != 0 || missed != 0 {
		return fmt.Errorf("FAILED: %d lost, %d double-executed, %d missed terminal events", lost, dupCalls+dupExecuted, missed)
	}
	fmt.Println("PASS")
	d.ok = true
	return nil
}

// createDatabase creates the throwaway database d.dbName on the server of the chosen dialect,
// opens d.admin (the server) and d.db (the database), and returns the settings of the svc
// processes for it.
func (d *drill) createDatabase() ([]string, error) {
	if d.o.db == "postgres" {
		cfg, err := pgx.ParseConfig(d.o.pgDSN)
		if err != nil {
			return nil, fmt.Errorf("pg-dsn: %w", err)
		}
		if d.admin, err = sql.Open("pgx", d.o.pgDSN); err != nil {
			return nil, err
		}
		if _, err := d.admin.Exec("CREATE DATABASE " + d.dbName); err != nil {
			return nil, fmt.Errorf("create the drill database: %w", err)
		}
		u, err := url.Parse(d.o.pgDSN)
		if err != nil || u.Scheme == "" {
			return nil, fmt.Errorf("pg-dsn: want a postgres:// URL")
		}
		u.Path = "/" + d.dbName
		if d.db, err = sql.Open("pgx", u.String()); err != nil {
			return nil, err
		}
		env := []string{"SVC_DB_DRIVER=postgres", "SVC_DB_HOST=" + cfg.Host, "SVC_DB_PORT=" + strconv.Itoa(int(cfg.Port)),
			"SVC_DB_USER=" + cfg.User, "SVC_DB_PASSWORD=" + cfg.Password,
			// Four processes on a server of max_connections 100.
			"SVC_DB_MAX_OPEN_CONNS=16"}
		if m := u.Query().Get("sslmode"); m != "" {
			env = append(env, "SVC_DB_SSLMODE="+m)
		}
		return env, nil
	}
	cfg, err := mysql.ParseDSN(d.o.dsn)
	if err != nil {
		return nil, fmt.Errorf("dsn: %w", err)
	}
	cfg.DBName = ""
	if d.admin, err = sql.Open("mysql", cfg.FormatDSN()); err != nil {
		return nil, err
	}
	if _, err := d.admin.Exec("CREATE DATABASE `" + d.dbName + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		return nil, fmt.Errorf("create the drill database: %w", err)
	}
	cfg.DBName = d.dbName
	cfg.ParseTime = true
	if d.db, err = sql.Open("mysql", cfg.FormatDSN()); err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, err
	}
	return []string{"SVC_DB_DRIVER=mysql", "SVC_DB_HOST=" + host, "SVC_DB_PORT=" + port,
		"SVC_DB_USER=" + cfg.User, "SVC_DB_PASSWORD=" + cfg.Passwd, "SVC_DB_MAX_OPEN_CONNS=24"}, nil
}

func (d *drill) count(where string) (int64, error) {
	var n int64
	err := d.db.QueryRow("SELECT COUNT(*) FROM tasks WHERE " + where).Scan(&n)
	return n, err
}

func (d *drill) proc(name string) *exec.Cmd {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.procs[name]
}

// setup creates the database and the folder, starts the hub, prepares the service (migrations,
// the user) and starts the four processes.
func (d *drill) setup() error {
	var err error
	if d.dir = d.o.workdir; d.dir == "" {
		if d.dir, err = os.MkdirTemp("", "svc-drill-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return err
	}
	d.dbName = fmt.Sprintf("svc_drill_%d", time.Now().UnixNano())
	dbEnv, err := d.createDatabase()
	if err != nil {
		return err
	}
	d.db.SetMaxOpenConns(4)
	if err := d.startHub(); err != nil {
		return err
	}
	script := `[{"tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "6*7"}}]}, {"text": "42."}]`
	if err := os.WriteFile(filepath.Join(d.dir, "script.json"), []byte(script), 0o600); err != nil {
		return err
	}
	d.env = append(os.Environ(),
		"SVC_CONFIG_FILE="+filepath.Join(d.dir, "config.yaml"), "SVC_KEY_PATH="+filepath.Join(d.dir, "secret.key"),
		"SVC_DB_NAME="+d.dbName,
		"SVC_WORKER_RUNTIME_MODE=server", "SVC_LOG_LEVEL=warning",
		"SVC_MERCURE_URL="+d.hubURL, "SVC_MERCURE_JWT_KEY="+d.hubKey,
		"SVC_LLM_DRIVER=scripted", "SVC_LLM_BASE_URL=script.json", "SVC_LLM_MODEL=script",
		// The drill's one user follows streamFollowers task streams at once on each API process.
		"SVC_EVENT_STREAMS_PER_USER="+strconv.Itoa(streamFollowers),
		// Every client of the drill is one address: its enqueuers may all send bodies at once.
		"SVC_MAX_REQUEST_BODIES_PER_CLIENT=64",
	)
	d.env = append(d.env, dbEnv...)
	if out, err := d.cmd("migrate").CombinedOutput(); err != nil {
		return fmt.Errorf("svc migrate: %v\n%s", err, out)
	}
	create := d.cmd("user", "create", "--email", "drill@example.com", "--name", "Drill", "--verified")
	create.Env = append(create.Env, "SVC_USER_PASSWORD=drill-password-1")
	out, err := create.CombinedOutput()
	if err != nil {
		return fmt.Errorf("svc user create: %v\n%s", err, out)
	}
	if _, err := fmt.Sscanf(string(out), "created user %d", &d.userID); err != nil {
		return fmt.Errorf("svc user create said %q", out)
	}
	for i := range 2 {
		addr, err := outside.FreeAddr()
		if err != nil {
			return err
		}
		name := fmt.Sprintf("api-%d", i+1)
		if err := d.start(name, "serve", "--api-only", "SVC_LISTEN="+addr); err != nil {
			return err
		}
		base := "http://" + addr + "/svc/api/v1"
		if err := outside.WaitHTTP("http://"+addr+"/svc/healthz", 30*time.Second); err != nil {
			log, _ := os.ReadFile(filepath.Join(d.dir, name+".log"))
			return fmt.Errorf("%s: %w\n%s", name, err, log)
		}
		d.apis = append(d.apis, base)
	}
	for i := range 2 {
		if err := d.start(fmt.Sprintf("worker-%d", i+1), "worker"); err != nil {
			return err
		}
	}
	return nil
}

func (d *drill) cmd(args ...string) *exec.Cmd {
	c := exec.Command(d.o.svc, args...)
	c.Dir = d.dir
	c.Env = slicesClone(d.env)
	return c
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// start runs a svc process named name; arguments of the form SVC_X=… are settings.
func (d *drill) start(name string, args ...string) error {
	var argv, env []string
	for _, a := range args {
		if strings.HasPrefix(a, "SVC_") {
			env = append(env, a)
		} else {
			argv = append(argv, a)
		}
	}
	c := d.cmd(argv...)
	c.Env = append(c.Env, env...)
	c.Env = append(c.Env, "SVC_LOG_PATH="+filepath.Join(d.dir, name+".log"))
	out, err := os.OpenFile(filepath.Join(d.dir, name+".out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	c.Stdout, c.Stderr = out, out
	if err := c.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	d.track(name, c)
	return nil
}

// track adds a started process to the ones cleanup stops. Every process goes through here: the
// map is made once and only ever added to (setup used to replace it after the hub had been
// started, so the hub was never stopped after a passing run).
func (d *drill) track(name string, c *exec.Cmd) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.procs == nil {
		d.procs = map[string]*exec.Cmd{}
	}
	d.procs[name] = c
}

// startHub runs the Mercure hub as server/mercure_test.go does.
func (d *drill) startHub() error {
	addr, err := outside.FreeAddr()
	if err != nil {
		return err
	}
	d.hubKey = "svc-drill-mercure-key-0123456789abcdef"
	hubDir := filepath.Join(d.dir, "hub")
	if err := os.MkdirAll(hubDir, 0o755); err != nil {
		return err
	}
	c := exec.Command(d.o.mercure, "-addr", addr, "-key", d.hubKey)
	c.Dir = hubDir
	logf, err := os.Create(filepath.Join(hubDir, "hub.log"))
	if err != nil {
		return err
	}
	c.Stdout, c.Stderr = logf, logf
	if err := c.Start(); err != nil {
		return fmt.Errorf("start the Mercure hub: %w", err)
	}
	d.track("mercure", c)
	d.hubURL = "http://" + addr + "/.well-known/mercure"
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(d.hubURL + "?topic=probe")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("the Mercure hub did not answer within 15s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createTask queues a task through c, retrying a refused create twice (a deadlock victim that
// exhausted the store's own retries answers 500).
func createTask(c *outside.Session, agentID int64, prompt string) (int64, error) {
	for attempt := 0; ; attempt++ {
		id, err := c.CreateTask(agentID, prompt)
		if err == nil || attempt == 2 {
			return id, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// seenSet is a concurrent set of task ids.
type seenSet struct {
	mu  sync.Mutex
	ids map[int64]bool
}

func (s *seenSet) add(id int64) { s.mu.Lock(); s.ids[id] = true; s.mu.Unlock() }
func (s *seenSet) has(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id]
}
func (s *seenSet) len() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.ids) }

// subscribeHub subscribes to the owner's task topic on the Mercure hub with the token the API
// hands out and records every task seen COMPLETED, FAILED, CANCELLED or ABORTED.
func (d *drill) subscribeHub(ctx context.Context, c *outside.Session) (*seenSet, <-chan struct{}, error) {
	var grant struct {
		Data struct {
			HubURL string `json:"hub_url"`
			Token  string `json:"token"`
		} `json:"data"`
	}
	if err := c.Do(http.MethodGet, "/sse/authorize", nil, 200, &grant); err != nil {
		return nil, nil, err
	}
	seen := &seenSet{ids: map[int64]bool{}}
	ready := make(chan struct{})
	topic := fmt.Sprintf("user/%d/tasks", d.userID)
	go func() {
		once := sync.Once{}
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, grant.Data.HubURL+"?"+url.Values{"topic": {topic}}.Encode(), nil)
			req.Header.Set("Authorization", "Bearer "+grant.Data.Token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			once.Do(func() { close(ready) })
			readSSE(resp.Body, func(data string) bool {
				var t struct {
					ID     int64  `json:"id"`
					Status string `json:"status"`
				}
				if json.Unmarshal([]byte(data), &t) == nil && terminal(t.Status) {
					seen.add(t.ID)
				}
				return true
			})
			_ = resp.Body.Close()
			if ctx.Err() == nil {
				d.logf("hub subscription ended; resubscribing (updates meanwhile may be missed)")
			}
		}
	}()
	return seen, ready, nil
}

func terminal(status string) bool {
	switch status {
	case "COMPLETED", "FAILED", "CANCELLED", "ABORTED":
		return true
	}
	return false
}

// readSSE calls fn with each event's data until fn returns false or the stream ends.
func readSSE(r io.Reader, fn func(data string) bool) {
	_ = sseread.Read(r, 4<<20, func(data []byte) error {
		if !fn(string(data)) {
			return sseread.ErrStop
		}
		return nil
	})
}

// streamChecker follows the event stream of each task on one API process (GET
// /tasks/{id}/events, from the start of the log, resumed with Last-Event-ID when cut) until its
// terminal status event, with a bounded number of open streams.
type streamChecker struct {
	c        *outside.Session
	ctx      context.Context
	queue    chan int64
	mu       sync.Mutex
	terminal map[int64]string
	errs     map[int64]string
	done     atomic.Int64
}

// streamFollowers is how many task event streams the drill follows at once per API process.
const streamFollowers = 64

func newStreamChecker(ctx context.Context, c *outside.Session, concurrency int) *streamChecker {
	s := &streamChecker{c: c, ctx: ctx, queue: make(chan int64, 1<<20), terminal: map[int64]string{}, errs: map[int64]string{}}
	for range concurrency {
		go func() {
			for id := range s.queue {
				s.follow(id)
				s.done.Add(1)
			}
		}()
	}
	return s
}

func (s *streamChecker) add(id int64) { s.queue <- id }

func (s *streamChecker) finished() int { return int(s.done.Load()) }

func (s *streamChecker) follow(id int64) {
	last := ""
	var lastErr string
	for attempt := 0; attempt < 5 && s.ctx.Err() == nil; attempt++ {
		req, _ := http.NewRequestWithContext(s.ctx, http.MethodGet, fmt.Sprintf("%s/tasks/%d/events", s.c.Base, id), nil)
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		resp, err := s.c.HTTP.Do(req)
		if err != nil {
			lastErr = err.Error()
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			lastErr = "status " + resp.Status
			_ = resp.Body.Close()
			time.Sleep(200 * time.Millisecond)
			continue
		}
		found := ""
		readSSE(resp.Body, func(data string) bool {
			var ev struct {
				Sequence int64 `json:"sequence"`
				Type     string
				Status   *struct {
					Status string `json:"status"`
				} `json:"status"`
			}
			if json.Unmarshal([]byte(data), &ev) != nil {
				return true
			}
			last = strconv.FormatInt(ev.Sequence, 10)
			if ev.Type == "status" && ev.Status != nil && terminal(ev.Status.Status) {
				found = ev.Status.Status
			}
			return true // the stream ends itself after the run's last event
		})
		_ = resp.Body.Close()
		if found != "" {
			s.mu.Lock()
			s.terminal[id] = found
			s.mu.Unlock()
			return
		}
		lastErr = "stream ended without a terminal event"
	}
	s.mu.Lock()
	s.errs[id] = lastErr
	s.mu.Unlock()
}

// missed counts the tasks whose stream showed no terminal event.
func (s *streamChecker) missed(ids []int64) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	example := ""
	for _, id := range ids {
		if _, ok := s.terminal[id]; !ok {
			n++
			if example == "" {
				example = fmt.Sprintf(" (e.g. task %d: %s)", id, s.errs[id])
			}
		}
	}
	return n, example
}
