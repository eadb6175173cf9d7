package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	_ "github.com/mattn/go-sqlite3" // the driver of the raw commits and the bench's own reads
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/agentsvc/svc/bench/outside"
	"github.com/agentsvc/svc/store"
)

// rawCommit times n commits of one small INSERT each (BEGIN IMMEDIATE, INSERT, COMMIT) on a
// fresh SQLite file opened with the store's DSN (WAL, busy timeout, foreign keys, immediate
// transactions), and returns the time per commit.
func (b *bench) rawCommit(n int) (time.Duration, error) {
	dir, err := os.MkdirTemp(b.tmp, "raw-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	dsn, err := store.SQLiteDSN(filepath.Join(dir, "raw.sqlite"))
	if err != nil {
		return 0, err
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL, at INTEGER NOT NULL)"); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := range n {
		tx, err := db.Begin()
		if err != nil {
			return 0, err
		}
		if _, err := tx.Exec("INSERT INTO t (v, at) VALUES (?, ?)", "value", i); err != nil {
			_ = tx.Rollback()
			return 0, err
		}
		if err := tx.Commit(); err != nil {
			return 0, err
		}
	}
	return time.Since(start) / time.Duration(n), nil
}

// modelRate is how many streamed calls per second the fake model answers to a plain client
// with 16 concurrent callers for a second: what the model side could carry at most.
func (b *bench) modelRate() string {
	hc := outside.NewHTTPClient(32)
	body := []byte(`{"model":"fake-model","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	var calls atomic.Int64
	stop := time.Now().Add(time.Second)
	if b.o.quick {
		stop = time.Now().Add(200 * time.Millisecond)
	}
	var wg sync.WaitGroup
	start := time.Now()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				resp, err := hc.Post(b.model.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				calls.Add(1)
			}
		}()
	}
	wg.Wait()
	return fmt.Sprintf("%.0f calls/s", float64(calls.Load())/time.Since(start).Seconds())
}

// getResult is the GET row: requests per second of each side per round.
type getResult struct {
	svc, bare, ratios []float64
}

// bareTask is a task-sized row for the bare engine: the columns a task resource shows.
type bareTask struct {
	ID          int64 `gorm:"primaryKey"`
	AgentID     int64
	PrincipalID int64
	UserID      int64
	Status      string
	Prompt      string
	Answer      *string
	Data        string
	MaxSteps    int
	StepsUsed   int
	RetryCount  int
	InputTokens int64
	OutputToks  int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
	FinishedAt  *time.Time
}

// getRow alternates GET /tasks/{id} of the service (session cookie) with a bare gin engine in
// this process answering one GORM point read of a task-sized row from a SQLite file opened with
// the store's DSN; both with the same client and concurrency, o.getFor per side and round.
func (b *bench) getRow(s *site, c *client, taskID int64) (*getResult, error) {
	var task map[string]any
	var env struct {
		Data struct {
			Task map[string]any `json:"task"`
		} `json:"data"`
	}
	if err := c.Do(http.MethodGet, fmt.Sprintf("/tasks/%d", taskID), nil, 200, &env); err != nil {
		return nil, err
	}
	task = env.Data.Task
	bare, closeBare, err := b.bareEngine(task)
	if err != nil {
		return nil, err
	}
	defer closeBare()
	svcURL := fmt.Sprintf("%s/api/v1/tasks/%d", s.base, taskID)
	bareURL := fmt.Sprintf("%s/tasks/%d", bare, 1)
	res := &getResult{}
	rounds := max(b.o.rounds, 1)
	for range rounds {
		sv, err := b.hammer(c.HTTP, svcURL)
		if err != nil {
			return nil, fmt.Errorf("service GET: %w", err)
		}
		br, err := b.hammer(c.HTTP, bareURL)
		if err != nil {
			return nil, fmt.Errorf("bare GET: %w", err)
		}
		res.svc, res.bare, res.ratios = append(res.svc, sv), append(res.bare, br), append(res.ratios, sv/br)
	}
	b.logf("GET: service %v req/s, bare %v req/s", res.svc, res.bare)
	return res, nil
}

// hammer GETs u with o.getConc concurrent callers for o.getFor and returns requests/s.
func (b *bench) hammer(hc *http.Client, u string) (float64, error) {
	// Warm the connections.
	for range b.o.getConc {
		if err := get(hc, u); err != nil {
			return 0, err
		}
	}
	var n atomic.Int64
	var first atomic.Value
	stop := time.Now().Add(b.o.getFor)
	start := time.Now()
	var wg sync.WaitGroup
	for range b.o.getConc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				if err := get(hc, u); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return 0, err
	}
	return float64(n.Load()) / time.Since(start).Seconds(), nil
}

func get(hc *http.Client, u string) error {
	resp, err := hc.Get(u)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return nil
}

// bareEngine serves GET /tasks/:id with gin (no middleware) and one GORM point read from a
// fresh SQLite file opened with the store's DSN, holding one row shaped like task.
func (b *bench) bareEngine(task map[string]any) (string, func(), error) {
	dir, err := os.MkdirTemp(b.tmp, "bare-")
	if err != nil {
		return "", nil, err
	}
	dsn, err := store.SQLiteDSN(filepath.Join(dir, "bare.sqlite"))
	if err != nil {
		return "", nil, err
	}
	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{SkipDefaultTransaction: true, Logger: gormlogger.Discard})
	if err != nil {
		return "", nil, err
	}
	if err := db.AutoMigrate(&bareTask{}); err != nil {
		return "", nil, err
	}
	str := func(k string) string { v, _ := task[k].(string); return v }
	answer := str("answer")
	now := time.Now().UTC()
	row := bareTask{ID: 1, AgentID: 1, PrincipalID: 1, UserID: 1, Status: str("status"), Prompt: str("prompt"), Answer: &answer,
		Data: "{}", MaxSteps: 10, StepsUsed: 1, InputTokens: 5, OutputToks: 3, CreatedAt: now, UpdatedAt: now, FinishedAt: &now}
	if err := db.Create(&row).Error; err != nil {
		return "", nil, err
	}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.GET("/tasks/:id", func(c *gin.Context) {
		var t bareTask
		if err := db.WithContext(c.Request.Context()).First(&t, "id = ?", c.Param("id")).Error; err != nil {
			c.AbortWithStatus(http.StatusNotFound)
			return
		}
		c.JSON(http.StatusOK, gin.H{"data": gin.H{"task": t}})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	closer := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
		_ = os.RemoveAll(dir)
	}
	return "http://" + ln.Addr().String(), closer, nil
}

// minimalServerEnv makes the program serve a minimal net/http server on its value (an address)
// instead of benchmarking: the RSS floor of a Go HTTP server, row 7's baseline.
const minimalServerEnv = "SVCBENCH_MINIMAL_SERVER"

func minimalServer(addr string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// minimalRSS starts the minimal server (this program, re-executed), lets it settle and reads
// its RSS.
func (b *bench) minimalRSS(settle time.Duration) (int64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	addr, err := outside.FreeAddr()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(cleanEnv(), minimalServerEnv+"="+addr)
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := outside.WaitHTTP("http://"+addr+"/healthz", 10*time.Second); err != nil {
		return 0, err
	}
	time.Sleep(settle)
	return rss(cmd.Process.Pid)
}

// parseField finds "key":"value" in a JSON text cheaply (the first occurrence), for the hub's
// subscribers, which read tens of thousands of events per second.
func parseField(data, key string) string {
	i := strings.Index(data, `"`+key+`":"`)
	if i < 0 {
		return ""
	}
	rest := data[i+len(key)+4:]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return rest[:j]
}
