package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// BenchmarkChatStartVsBare measures POST /agent-api/chats (no files) over real HTTP through
// the whole service (gate: route, key lookup and compare, the shared per-key rate limit; body
// validation; the agent and budget reads; the task, its first message and their events
// written) beside the floor it is compared with in the same run (issue 28, item 7): a bare gin
// engine in this process binding the same JSON body and inserting one task-sized row with GORM
// into a fresh database of the same dialect (SQLite with the store's pragmas and driver, or a
// throwaway database on the server of SVC_TEST_MYSQL_DSN / SVC_TEST_POSTGRES_DSN). One op is one request
// of each, alternated, from the same HTTP client; x-bare is the service's throughput ÷ the bare
// engine's (goal ≥ 0.8).
func BenchmarkChatStartVsBare(b *testing.B) {
	k := newBenchKey(b)
	svcURL := "http://" + serve(b, k.env) + apitest.API + "/agent-api/chats"
	bareURL := bareChatServer(b) + "/chats"
	body, _ := json.Marshal(map[string]any{"text": "Summarise the attached quarter's numbers in three bullet points."})
	hc := &http.Client{}
	post := func(url string, hdr map[string]string) {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for h, v := range hdr {
			req.Header.Set(h, v)
		}
		res, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusAccepted {
			b.Fatalf("POST %s: %d %s", url, res.StatusCode, out)
		}
	}
	post(svcURL, k.hdr)
	post(bareURL, nil)
	var svcDur, bareDur time.Duration
	for b.Loop() {
		start := time.Now()
		post(svcURL, k.hdr)
		svcDur += time.Since(start)
		start = time.Now()
		post(bareURL, nil)
		bareDur += time.Since(start)
	}
	b.ReportMetric(float64(b.N)/svcDur.Seconds(), "svc-req/s")
	b.ReportMetric(float64(b.N)/bareDur.Seconds(), "bare-req/s")
	b.ReportMetric(bareDur.Seconds()/svcDur.Seconds(), "x-bare")
}

// bareChatRow is a task-sized row for the bare engine's insert.
type bareChatRow struct {
	ID          int64 `gorm:"primaryKey"`
	AgentID     int64
	PrincipalID int64
	UserID      int64
	Status      string `gorm:"size:16"`
	Prompt      string `gorm:"type:text"`
	MaxSteps    int
	Data        string `gorm:"type:text"`
	Source      string `gorm:"size:16"`
	APIKeyID    *int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (bareChatRow) TableName() string { return "bare_chats" }

// bareDialector opens a fresh database of storetest's dialect for the bare engine.
func bareDialector(b *testing.B) gorm.Dialector {
	switch storetest.Dialect() {
	case store.DialectMySQL:
		host, port, name, user, pw := storetest.MySQLDatabase(b, os.Getenv(storetest.EnvMySQLDSN))
		return mysql.Open(fmt.Sprintf("%s:%s@tcp(%s)/%s?parseTime=true", user, pw, net.JoinHostPort(host, strconv.Itoa(port)), name))
	case store.DialectPostgres:
		return postgres.Open(storetest.PostgresDatabaseDSN(b, os.Getenv(storetest.EnvPostgresDSN)))
	}
	dsn, err := store.SQLiteDSN(filepath.Join(b.TempDir(), "bare.sqlite"))
	if err != nil {
		b.Fatal(err)
	}
	return sqlite.New(sqlite.Config{DSN: dsn, DriverName: store.SQLiteDriverName})
}

// bareChatServer serves POST /chats with gin: bind the JSON body, one GORM insert, 202 with
// the row; it returns its base URL.
func bareChatServer(b *testing.B) string {
	b.Helper()
	db, err := gorm.Open(bareDialector(b), &gorm.Config{SkipDefaultTransaction: true, Logger: gormlogger.Discard})
	if err != nil {
		b.Fatal(err)
	}
	if err := db.AutoMigrate(&bareChatRow{}); err != nil {
		b.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.POST("/chats", func(c *gin.Context) {
		var in struct {
			Text string `json:"text" binding:"required"`
		}
		if err := c.ShouldBindJSON(&in); err != nil {
			c.JSON(http.StatusBadRequest, gin.H{"error": err.Error()})
			return
		}
		key := int64(1)
		now := time.Now().UTC()
		row := bareChatRow{AgentID: 1, PrincipalID: 1, UserID: 1, Status: "QUEUED", Prompt: in.Text, MaxSteps: 10,
			Data: "{}", Source: "agent_api", APIKeyID: &key, CreatedAt: now, UpdatedAt: now}
		if err := db.WithContext(c.Request.Context()).Create(&row).Error; err != nil {
			c.JSON(http.StatusInternalServerError, gin.H{"error": err.Error()})
			return
		}
		c.JSON(http.StatusAccepted, gin.H{"data": gin.H{"chat": row}})
	})
	return serveBare(b, r, db)
}
