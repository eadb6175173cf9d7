package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/agentsvc/svc/bench/outside"
)

// site is one installation of the service: a fresh working folder (its SQLite file, key and
// log) or a fresh MariaDB/MySQL database, and the settings every process of it runs with.
type site struct {
	b       *bench
	dir     string
	dialect string // "sqlite", "mysql" or "postgres"
	dbName  string // mysql, postgres: the throwaway database
	sqlite  string // sqlite: the database file
	dsn     string // postgres: the throwaway database's URL
	admin   *sql.DB
	db      *sql.DB // the bench's own connection, for counting tasks (not through the service)
	env     []string
	listen  string
	base    string // http://listen/svc
	serving *proc  // the last `svc serve` started
	bin     string // the svc binary (-bin, or -alt-bin for the alternative's drains)
}

// metricsToken protects /metrics of the processes the bench starts.
const metricsToken = "svcbench-metrics-token-0123456789"

// newSite prepares a fresh installation; settings are extra SVC_ variables (KEY=VALUE).
func (b *bench) newSite(dialect string, model *fakeModel, settings ...string) (*site, error) {
	dir, err := os.MkdirTemp(b.tmp, "site-")
	if err != nil {
		return nil, err
	}
	addr, err := outside.FreeAddr()
	if err != nil {
		return nil, err
	}
	s := &site{b: b, dir: dir, dialect: dialect, listen: addr, base: "http://" + addr + "/svc", bin: b.bin}
	s.env = []string{
		"SVC_CONFIG_FILE=" + filepath.Join(dir, "config.yaml"), // absent: defaults and environment only
		"SVC_LISTEN=" + addr,
		"SVC_LOG_PATH=" + filepath.Join(dir, "svc.log"),
		"SVC_LOG_LEVEL=warning",
		"SVC_METRICS_TOKEN=" + metricsToken,
		"SVC_LLM_DRIVER=openai", "SVC_LLM_BASE_URL=" + model.BaseURL(), "SVC_LLM_MODEL=fake-model", "SVC_LLM_API_KEY=sk-svcbench",
	}
	switch dialect {
	case "sqlite":
		s.env = append(s.env, "SVC_DB_DRIVER=sqlite")
		s.sqlite = filepath.Join(dir, "storage", "svc.sqlite")
		s.db, err = sql.Open("sqlite3", "file:"+s.sqlite+"?_busy_timeout=5000")
		if err != nil {
			return nil, err
		}
	case "mysql":
		cfg, err := mysql.ParseDSN(b.o.mysqlDSN)
		if err != nil {
			return nil, fmt.Errorf("-mysql-dsn: %w", err)
		}
		cfg.DBName = ""
		if s.admin, err = sql.Open("mysql", cfg.FormatDSN()); err != nil {
			return nil, err
		}
		s.dbName = fmt.Sprintf("svcbench_%d", time.Now().UnixNano())
		if _, err := s.admin.Exec("CREATE DATABASE `" + s.dbName + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
			return nil, fmt.Errorf("create the bench database: %w", err)
		}
		cfg.DBName = s.dbName
		if s.db, err = sql.Open("mysql", cfg.FormatDSN()); err != nil {
			return nil, err
		}
		s.db.SetMaxOpenConns(2)
		host, port, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			return nil, err
		}
		s.env = append(s.env, "SVC_DB_DRIVER=mysql", "SVC_DB_HOST="+host, "SVC_DB_PORT="+port, "SVC_DB_NAME="+s.dbName,
			"SVC_DB_USER="+cfg.User, "SVC_DB_PASSWORD="+cfg.Passwd)
	case "postgres":
		if err := s.openPostgres(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("dialect %q", dialect)
	}
	s.env = append(s.env, settings...)
	return s, nil
}

// close drops the site's database and folder (with -keep, neither).
func (s *site) close() {
	if s.db != nil {
		_ = s.db.Close()
	}
	if s.admin != nil && !s.b.o.keep {
		if s.dialect == "postgres" {
			_, _ = s.admin.Exec("DROP DATABASE IF EXISTS " + s.dbName + " WITH (FORCE)")
		} else {
			_, _ = s.admin.Exec("DROP DATABASE IF EXISTS `" + s.dbName + "`")
		}
	}
	if s.admin != nil {
		_ = s.admin.Close()
	}
	if !s.b.o.keep {
		_ = os.RemoveAll(s.dir)
	}
}

// openPostgres creates the site's throwaway database on the server of -postgres-dsn (beside
// the DSN's own database, which is not used) and sets the service's settings for it.
func (s *site) openPostgres() error {
	dsn := s.b.o.postgresDSN
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("-postgres-dsn: %w", err)
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return fmt.Errorf("-postgres-dsn: want a postgres:// URL")
	}
	if s.admin, err = sql.Open("pgx", dsn); err != nil {
		return err
	}
	s.dbName = fmt.Sprintf("svcbench_%d", time.Now().UnixNano())
	if _, err := s.admin.Exec("CREATE DATABASE " + s.dbName); err != nil {
		return fmt.Errorf("create the bench database: %w", err)
	}
	u.Path = "/" + s.dbName
	s.dsn = u.String()
	// The bench's own connections are named, so that serverMeter leaves their backends out.
	q := u.Query()
	q.Set("application_name", benchAppName)
	u.RawQuery = q.Encode()
	if s.db, err = sql.Open("pgx", u.String()); err != nil {
		return err
	}
	s.db.SetMaxOpenConns(2)
	s.env = append(s.env, "SVC_DB_DRIVER=postgres", "SVC_DB_HOST="+cfg.Host, "SVC_DB_PORT="+strconv.Itoa(int(cfg.Port)),
		"SVC_DB_NAME="+s.dbName, "SVC_DB_USER="+cfg.User, "SVC_DB_PASSWORD="+cfg.Password)
	if m := u.Query().Get("sslmode"); m != "" {
		s.env = append(s.env, "SVC_DB_SSLMODE="+m)
	}
	return nil
}

// count counts the site's tasks matching where (read by the bench itself, not through the
// service, so the service's statement counters do not see it).
func (s *site) count(where string) (int64, error) {
	var n int64
	err := s.db.QueryRow("SELECT COUNT(*) FROM tasks WHERE " + where).Scan(&n)
	return n, err
}

// proc is one running svc process.
type proc struct {
	name  string
	cmd   *exec.Cmd
	ready time.Time // when it said it serves (or, for a worker, runs)
	done  chan struct{}
	mu    sync.Mutex
	tail  []string // its last lines of stderr
}

// start runs `svc args…` on the site with extra settings and waits until it says it is ready:
// the banner of serve, the line of worker. The clock of a drain starts at that moment.
func (s *site) start(name string, settings []string, args ...string) (*proc, error) {
	return s.startReady(name, nil, settings, args...)
}

// startReady is start calling onReady (when not nil) as soon as the process says it is ready.
func (s *site) startReady(name string, onReady func(*proc), settings []string, args ...string) (*proc, error) {
	c := exec.Command(s.bin, args...)
	c.Dir = s.dir
	c.Env = append(cleanEnv(), s.env...)
	c.Env = append(c.Env, settings...)
	p, err := startProc(name, c, onReady)
	if err != nil {
		return nil, err
	}
	if args[0] == "serve" {
		s.serving = p
		if err := outside.WaitHTTP(s.base+"/healthz", 30*time.Second); err != nil {
			p.stop()
			return nil, fmt.Errorf("%s: %w: %s", name, err, p.stderr())
		}
	}
	return p, nil
}

// readyLines are the starts of the line a process prints once it serves or works: svc serve's banner, svc
// worker's line, bench/river's worker.
var readyLines = []string{"svc: serving on", "svc: worker running", "river: worker running"}

// startProc starts c and waits until it prints one of readyLines on its standard error, then
// calls onReady (when not nil) at once, from the goroutine reading that output, so that a
// measurement can begin at the moment the drain does.
func startProc(name string, c *exec.Cmd, onReady func(*proc)) (*proc, error) {
	stderr, err := c.StderrPipe()
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, cmd: c, done: make(chan struct{})}
	ready := make(chan time.Time, 1)
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.tail = append(p.tail, line)
			if len(p.tail) > 20 {
				p.tail = p.tail[1:]
			}
			p.mu.Unlock()
			if !said && slices.ContainsFunc(readyLines, func(r string) bool { return strings.HasPrefix(line, r) }) {
				said = true
				at := time.Now()
				if onReady != nil {
					onReady(p)
				}
				ready <- at
			}
		}
	}()
	go func() { _ = c.Wait(); close(p.done) }()
	select {
	case p.ready = <-ready:
	case <-p.done:
		return nil, fmt.Errorf("%s exited at start: %s", name, p.stderr())
	case <-time.After(60 * time.Second):
		p.stop()
		return nil, fmt.Errorf("%s did not start within 60s: %s", name, p.stderr())
	}
	return p, nil
}

// written is the bytes the process caused to be written to storage over its life (its
// rusage's block output, which Linux counts as write_bytes / 512); only once it has exited.
func (p *proc) written() int64 {
	<-p.done
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Oublock * 512
	}
	return 0
}

func (p *proc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// stop ends the process with SIGTERM (it drains), killing it after 20 s.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// rss is the process's resident set (VmRSS) in bytes.
func rss(pid int) (int64, error) { return statusKB(pid, "VmRSS:") }

// anonRSS is the process's anonymous resident memory (RssAnon: heap, stacks, C allocations),
// without the file-backed pages of its executable, whose count depends on how the kernel maps
// the page cache (2 MB folios on some).
func anonRSS(pid int) (int64, error) { return statusKB(pid, "RssAnon:") }

func statusKB(pid int, field string) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range bytes.SplitSeq(raw, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(field)); ok {
			f := strings.Fields(string(v))
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("%s line %q", field, line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// cleanEnv is the bench's environment without SVC_ settings (the site sets its own).
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SVC_") {
			out = append(out, kv)
		}
	}
	return out
}
