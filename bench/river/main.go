// Command river-worker is the River side of bench/svcbench's comparison (issue 28): River
// (riverqueue v0.51) doing the work of a one-step task — one streamed chat completion from
// svcbench's fake OpenAI-compatible model, its answer stored in a table — on the same database
// kinds as the service (PostgreSQL through riverpgxv5, SQLite through riversqlite on
// mattn/go-sqlite3 with the service's pragmas).
//
// It is its own module so that River never enters the service's go.mod. svcbench builds it and
// runs it as a subprocess, like `svc`, one mode per process:
//
//	river-worker -driver postgres|sqlite -dsn DSN migrate        River's tables and river_answer
//	river-worker -driver … -dsn … -n N insert                    queues N jobs (InsertMany)
//	river-worker -driver … -dsn … -model URL work                works until SIGTERM
//
// work prints "river: worker running" once the client has started (svcbench's clock of a
// drain starts there) and stops the client gracefully on SIGTERM or SIGINT.
//
// River's settings are its documented defaults (fetch cooldown 100 ms, poll 1 s, the completer's
// batching), with the default queue at MaxWorkers 100 as River's own examples configure it
// (-workers), a default pgxpool (-pool 0) on PostgreSQL and one connection on SQLite, as
// riversqlite's documentation asks.
package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/mattn/go-sqlite3" // the driver the service uses on SQLite
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

type options struct {
	driver, dsn, model string
	n, workers, pool   int
}

func main() {
	var o options
	flag.StringVar(&o.driver, "driver", "postgres", "postgres or sqlite")
	flag.StringVar(&o.dsn, "dsn", "", "a pgx URL (postgres) or a SQLite file path with its query (sqlite)")
	flag.StringVar(&o.model, "model", "", "the model's base URL (…/v1), for work")
	flag.IntVar(&o.n, "n", 1000, "jobs to queue, for insert")
	flag.IntVar(&o.workers, "workers", 100, "MaxWorkers of the default queue, for work")
	flag.IntVar(&o.pool, "pool", 0, "PostgreSQL pool size (0: pgxpool's default)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: river-worker [flags] migrate|insert|work")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, o, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "river:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, mode string) error {
	switch o.driver {
	case "postgres":
		cfg, err := pgxpool.ParseConfig(o.dsn)
		if err != nil {
			return err
		}
		if o.pool > 0 {
			cfg.MaxConns = int32(o.pool)
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return err
		}
		defer pool.Close()
		store := func(ctx context.Context, jobID int64, answer string) error {
			_, err := pool.Exec(ctx, "INSERT INTO river_answer (job_id, answer) VALUES ($1, $2)", jobID, answer)
			return err
		}
		return runMode(ctx, o, mode, riverpgxv5.New(pool), store,
			"CREATE TABLE IF NOT EXISTS river_answer (id bigserial PRIMARY KEY, job_id bigint NOT NULL, answer text NOT NULL)")
	case "sqlite":
		db, err := sql.Open("sqlite3", o.dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		db.SetMaxOpenConns(1) // riversqlite's advice: SQLite runs one operation at a time
		store := func(ctx context.Context, jobID int64, answer string) error {
			_, err := db.ExecContext(ctx, "INSERT INTO river_answer (job_id, answer) VALUES (?, ?)", jobID, answer)
			return err
		}
		return runMode(ctx, o, mode, riversqlite.New(db), store,
			"CREATE TABLE IF NOT EXISTS river_answer (id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, answer TEXT NOT NULL)")
	default:
		return fmt.Errorf("-driver %q: want postgres or sqlite", o.driver)
	}
}

// storeFunc stores a job's answer.
type storeFunc func(ctx context.Context, jobID int64, answer string) error

func runMode[TTx any](ctx context.Context, o options, mode string, driver riverdriver.Driver[TTx], store storeFunc, createAnswer string) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	switch mode {
	case "migrate":
		m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: logger})
		if err != nil {
			return err
		}
		if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if err := driver.GetExecutor().Exec(ctx, createAnswer); err != nil {
			return fmt.Errorf("create river_answer: %w", err)
		}
		return nil
	case "insert":
		client, err := river.NewClient(driver, &river.Config{Logger: logger})
		if err != nil {
			return err
		}
		const batch = 500
		for i := 0; i < o.n; i += batch {
			params := make([]river.InsertManyParams, 0, batch)
			for j := i; j < min(i+batch, o.n); j++ {
				params = append(params, river.InsertManyParams{Args: AnswerArgs{Prompt: fmt.Sprintf("What is 6*7? (task %d)", j)}})
			}
			if _, err := client.InsertMany(ctx, params); err != nil {
				return fmt.Errorf("insert: %w", err)
			}
		}
		return nil
	case "work":
		if o.model == "" {
			return errors.New("work needs -model")
		}
		workers := river.NewWorkers()
		river.AddWorker(workers, &AnswerWorker{
			url: strings.TrimSuffix(o.model, "/") + "/chat/completions",
			hc: &http.Client{Transport: &http.Transport{
				MaxIdleConns: o.workers, MaxIdleConnsPerHost: o.workers, IdleConnTimeout: 90 * time.Second,
			}},
			store: store,
		})
		client, err := river.NewClient(driver, &river.Config{
			Logger:  logger,
			Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.workers}},
			Workers: workers,
		})
		if err != nil {
			return err
		}
		if err := client.Start(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("start: %w", err)
		}
		fmt.Fprintln(os.Stderr, "river: worker running")
		<-ctx.Done()
		stopCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		return client.Stop(stopCtx)
	default:
		return fmt.Errorf("mode %q: want migrate, insert or work", mode)
	}
}

// AnswerArgs is a job: the user's prompt of a one-step task.
type AnswerArgs struct {
	Prompt string `json:"prompt"`
}

// Kind is River's name of the job kind.
func (AnswerArgs) Kind() string { return "answer" }

// AnswerWorker asks the model for the answer, streamed as a one-step task asks it, and stores
// the answer.
type AnswerWorker struct {
	river.WorkerDefaults[AnswerArgs]
	url   string
	hc    *http.Client
	store storeFunc
}

// Work streams one chat completion and stores its text.
func (w *AnswerWorker) Work(ctx context.Context, job *river.Job[AnswerArgs]) error {
	body, err := json.Marshal(map[string]any{
		"model":  "fake-model",
		"stream": true,
		"messages": []map[string]string{
			{"role": "system", "content": "Answer briefly."},
			{"role": "user", "content": job.Args.Prompt},
		},
	})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-svcbench")
	resp, err := w.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return fmt.Errorf("model: %s", resp.Status)
	}
	answer, err := readStream(resp.Body)
	if err != nil {
		return err
	}
	return w.store(ctx, job.ID, answer)
}

// readStream reads an OpenAI-compatible server-sent event stream of chat.completion.chunk
// events and returns the concatenated content.
func readStream(r io.Reader) (string, error) {
	var text strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 16<<10), 1<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			return text.String(), nil
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(data, &chunk); err != nil {
			return "", fmt.Errorf("chunk: %w", err)
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("the stream ended without [DONE]")
}
