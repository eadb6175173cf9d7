package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/store"
)

// BenchmarkGetTask measures GET /tasks/{id} (a session read of a completed task) over real
// HTTP through the whole service (gate, session lookup, handler, view), beside the floor it is
// compared with in the same run (issue 14): a bare gin engine answering the same path with
// one GORM point read of a task-sized row from a SQLite file opened with the store's pragmas.
// Each op is one request of each, alternated; x-bare is the service's throughput ÷ the bare
// engine's. SQLite only for the baseline (on MySQL/MariaDB only the service is measured).
func BenchmarkGetTask(b *testing.B) {
	env := apitest.New(b)
	owner, user := env.UserClient("bench@example.com")
	var ar gen.AgentResponse
	owner.Post("/agents", map[string]any{"name": "Bench"}).Expect(b, http.StatusCreated).Decode(b, &ar)
	st, ctx := env.App.Store, context.Background()
	a, err := st.Agent(ctx, ar.Data.Agent.Id, user.Id)
	if err != nil {
		b.Fatal(err)
	}
	tk, err := st.CreateTask(ctx, store.NewTask{AgentID: a.ID, PrincipalID: a.PrincipalID, UserID: user.Id, MaxSteps: 5,
		Prompt: "What is six times seven?"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.ClaimQueued(ctx, "bench", time.Hour, 1); err != nil {
		b.Fatal(err)
	}
	answer := "Forty-two."
	if _, _, err := st.FinishTurn(ctx, tk.ID, "bench", store.NewTaskMessage{Role: store.RoleAssistant, Text: answer},
		store.StepOutcome{Status: "COMPLETED", Answer: &answer, Steps: 1}); err != nil {
		b.Fatal(err)
	}

	// The service over real HTTP, with a session cookie.
	base := "http://" + serve(b, env) + apitest.API
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	login, _ := json.Marshal(map[string]string{"email": "bench@example.com", "password": "password-bench@example.com"})
	res, err := hc.Post(base+"/auth/login", "application/json", bytes.NewReader(login))
	if err != nil || res.StatusCode != http.StatusOK {
		b.Fatalf("login: %v %v", err, res)
	}
	res.Body.Close()
	apiURL := fmt.Sprintf("%s/tasks/%d", base, tk.ID)

	var bareURL string
	if st.Dialect() == store.DialectSQLite {
		bareURL = bareTaskServer(b) + fmt.Sprintf("/tasks/%d", 1)
	}
	get := func(c *http.Client, url string) {
		res, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d", url, res.StatusCode)
		}
	}
	get(hc, apiURL)
	var apiDur, bareDur time.Duration
	bare := &http.Client{}
	for b.Loop() {
		start := time.Now()
		get(hc, apiURL)
		apiDur += time.Since(start)
		if bareURL != "" {
			start = time.Now()
			get(bare, bareURL)
			bareDur += time.Since(start)
		}
	}
	b.ReportMetric(float64(b.N)/apiDur.Seconds(), "api-req/s")
	if bareURL != "" {
		b.ReportMetric(float64(b.N)/bareDur.Seconds(), "bare-req/s")
		b.ReportMetric(bareDur.Seconds()/apiDur.Seconds(), "x-bare")
	}
}

// bareTaskRow is a task-sized row for the bare engine.
type bareTaskRow struct {
	ID        int64
	AgentID   int64
	UserID    int64
	Status    string
	Prompt    string
	Answer    *string
	Data      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (bareTaskRow) TableName() string { return "tasks" }

// bareTaskServer serves GET /tasks/:id with gin and one GORM point read, and returns its base URL.
func bareTaskServer(b *testing.B) string {
	b.Helper()
	dsn, err := store.SQLiteDSN(filepath.Join(b.TempDir(), "bare.sqlite"))
	if err != nil {
		b.Fatal(err)
	}
	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{SkipDefaultTransaction: true, Logger: gormlogger.Discard})
	if err != nil {
		b.Fatal(err)
	}
	if err := db.AutoMigrate(&bareTaskRow{}); err != nil {
		b.Fatal(err)
	}
	answer := "Forty-two."
	now := time.Now().UTC()
	if err := db.Create(&bareTaskRow{AgentID: 1, UserID: 1, Status: "COMPLETED", Prompt: "What is six times seven?",
		Answer: &answer, Data: "{}", CreatedAt: now, UpdatedAt: now}).Error; err != nil {
		b.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/tasks/:id", func(c *gin.Context) {
		var row bareTaskRow
		if err := db.WithContext(c.Request.Context()).Take(&row, c.Param("id")).Error; err != nil {
			c.JSON(http.StatusNotFound, gin.H{"error": err.Error()})
			return
		}
		c.JSON(http.StatusOK, gin.H{"data": gin.H{"task": row}})
	})
	return serveBare(b, r, db)
}

// serveBare serves r on a free loopback port until the benchmark ends (then closes db too) and
// returns its base URL: the bare gin baselines' server.
func serveBare(b *testing.B, r http.Handler, db *gorm.DB) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: r}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() {
		_ = srv.Close()
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return "http://" + ln.Addr().String()
}
