package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsvc/svc/agentloop/llm/llmfake"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/server"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
	"github.com/agentsvc/svc/tools"
)

// The crash drill (issue 10, docs/reliability.md) kills worker processes with SIGKILL at random
// moments while they drain tasks whose model asks for tool calls, then checks that no task was
// lost, no call with effects ran twice, no repeatable call was dropped (each interrupted one ran
// again and has its real result), none was dropped from a turn, and every killed task resumed
// within two minutes. It is slow (minutes), so it runs only when asked:
//
//	SVC_CRASH_DRILL=50 go test -run '^TestCrashDrill$' -v -timeout 30m ./server/
//	SVC_CRASH_DRILL=50 SVC_CRASH_DRILL_WORKERS=2 SVC_TEST_MYSQL_DSN='root@tcp(127.0.0.1:3306)/test' go test …
//
// Workers are this test binary re-executed (TestCrashDrillWorker): the same server.App as `svc
// worker`, with the outbound screen opened to loopback so read_url (repeatable) reaches the
// drill's counting server, and a plugin whose MCP server's tool "record" (not repeatable: no
// annotations) is the drill's side-effect counter.
const (
	envDrill        = "SVC_CRASH_DRILL"         // number of SIGKILLs; unset: the drill is skipped
	envDrillWorkers = "SVC_CRASH_DRILL_WORKERS" // concurrent worker processes (default 1)
	envDrillChild   = "SVC_CRASH_DRILL_CHILD"   // set in the re-executed worker processes
	drillRounds     = 2                         // tool-call rounds per task before the answer
	drillCalls      = 3                         // calls per round: one ledger record, then read_url
)

var drillPrompt = regexp.MustCompile(`drill-(\d+)`)

// TestCrashDrillWorker is the body of one worker process of the drill.
func TestCrashDrillWorker(t *testing.T) {
	if os.Getenv(envDrillChild) == "" {
		t.Skip("a worker process of TestCrashDrill")
	}
	ctx := context.Background()
	app, err := server.Open(ctx, config.NewLoader(os.Environ()), server.Options{
		Net:    netguard.Options{AllowLoopback: true},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	app.Start(context.WithoutCancel(ctx))
	fmt.Fprintln(os.Stdout, "drill worker ready")
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, os.Interrupt)
	<-term
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := app.Stop(sctx); err != nil {
		t.Error(err)
	}
	_ = app.Close()
}

type drillFigures struct {
	tasks, kills, workers        int
	lost, twice, dropped         int
	interrupted, resumedTotal    int
	rerun, fetchedTwice, records int
	maxResume, medianResume      time.Duration
	runningAfterTerm, failedTask int
	elapsed                      time.Duration
}

func TestCrashDrill(t *testing.T) {
	kills, _ := strconv.Atoi(os.Getenv(envDrill))
	if kills <= 0 || os.Getenv(envDrillChild) != "" {
		t.Skip("set " + envDrill + "=<kills> to run the crash drill")
	}
	workers := 1
	if n, err := strconv.Atoi(os.Getenv(envDrillWorkers)); err == nil && n > 0 {
		workers = n
	}
	dir := t.TempDir()
	t.Chdir(dir) // storage/ (SQLite file, key) is relative to the working directory
	hits := newHitCounter(t)
	ledger := newLedger(t)
	model := newDrillModel(t, hits.srv.URL)
	plugins := pluginDir(t, map[string]string{"drill/plugin.json": fmt.Sprintf(`{"slug":"drill","class":"Drill\\Ledger",
		"name":"drill/ledger","version":"1.0.0","mcpServers":[{"name":"ledger","url":%q,"requireApproval":false}]}`, ledger.url)})

	environ := []string{
		"SVC_CONFIG_FILE=" + filepath.Join(dir, "config.yaml"),
		"SVC_KEY_PATH=" + filepath.Join(dir, "secret.key"),
		"SVC_LOG_LEVEL=warning", "SVC_LOG_PATH=stderr",
		"SVC_WORKER_RUNTIME_MODE=server", "SVC_MAX_WORKERS=8",
		"SVC_LLM_DRIVER=openai", "SVC_LLM_BASE_URL=" + model.URL + "/v1", "SVC_LLM_MODEL=drill",
		"SVC_PLUGINS_DIR=" + plugins,
	}
	if db := networkDBEnv(t); db != nil {
		environ = append(environ, db...)
	} else {
		environ = append(environ, "SVC_DB_DRIVER=sqlite", "SVC_DB_NAME=drill")
	}
	ctx := context.Background()
	app, err := server.Open(ctx, config.NewLoader(environ), server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Net: netguard.Options{AllowLoopback: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	agentID, principalID, userID := drillAgent(t, app)
	enableLedger(t, app, agentID, userID)

	procs := make([]*exec.Cmd, workers)
	start := func(i int) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashDrillWorker$", "-test.timeout=0")
		cmd.Env = append(append(os.Environ(), environ...), envDrillChild+"=1")
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, io.Discard, &prefixWriter{t: t, prefix: fmt.Sprintf("worker %d: ", i)}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[i] = cmd
	}
	for i := range procs {
		start(i)
	}
	defer func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}()

	var tasks []int64
	enqueue := func(n int) {
		for range n {
			nt := store.NewTask{AgentID: agentID, PrincipalID: principalID, UserID: userID, MaxSteps: 10,
				Prompt: fmt.Sprintf("drill-%d", len(tasks))}
			tk, err := app.Store.CreateTask(ctx, nt)
			if err != nil {
				t.Fatal(err)
			}
			tasks = append(tasks, tk.ID)
		}
	}
	began := time.Now()
	enqueue(20)
	resumes := newResumeWatch(app.Store, userID)
	for k := range kills {
		enqueue(3)
		time.Sleep(time.Duration(150+rand.IntN(1200)) * time.Millisecond)
		i := rand.IntN(workers)
		pid := procs[i].Process.Pid
		_ = procs[i].Process.Signal(syscall.SIGKILL)
		_ = procs[i].Wait()
		resumes.killed(ctx, t, pid)
		start(i)
		t.Logf("kill %d/%d: worker %d (pid %d)", k+1, kills, i, pid)
	}
	// Let the survivors finish everything.
	deadline := time.Now().Add(5 * time.Minute)
	for !allSettled(ctx, t, app.Store, tasks) && time.Now().Before(deadline) {
		resumes.poll(ctx)
		time.Sleep(250 * time.Millisecond)
	}
	resumes.poll(ctx)

	// A graceful stop in the middle of work leaves no task RUNNING.
	enqueue(12)
	time.Sleep(700 * time.Millisecond)
	for _, p := range procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		_ = p.Wait()
	}
	f := drillFigures{tasks: len(tasks), kills: kills, workers: workers}
	for _, id := range tasks {
		tk, err := app.Store.Task(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status == taskstate.Running {
			f.runningAfterTerm++
		}
	}
	for i := range procs {
		start(i)
	}
	deadline = time.Now().Add(3 * time.Minute)
	for !allSettled(ctx, t, app.Store, tasks) && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
	}
	f.elapsed = time.Since(began)

	for _, id := range tasks {
		tk, err := app.Store.Task(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status != taskstate.Completed {
			f.lost++
			if tk.Status == taskstate.Failed {
				f.failedTask++
			}
			t.Errorf("task %d ended %s (%+v)", id, tk.Status, tk.Error)
		}
		msgs, err := app.Store.Messages(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		calls, err := app.Store.ToolCalls(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string]store.ToolCall{}
		for _, c := range calls {
			rows[c.ProviderCallID] = c
			interrupted := c.Status == store.ToolCallFailed && strings.Contains(string(c.Result), "interrupted")
			switch c.ToolClass {
			case "core.ReadURLTool": // repeatable: run again after a crash, never dropped
				url, _ := c.ProposedArguments["url"].(string)
				path := strings.TrimPrefix(url, hits.srv.URL)
				if c.Status != store.ToolCallExecuted || !strings.Contains(string(c.Result), "fetched "+path) {
					t.Errorf("task %d: repeatable call %s ended %s %s (restarts %d)", id, c.ProviderCallID, c.Status, c.Result, c.Restarts)
				}
				f.rerun += c.Restarts
				if n := hits.count(path); n > 1+c.Restarts {
					t.Errorf("task %d: %s fetched %d times with %d restarts", id, path, n, c.Restarts)
				} else if n > 1 {
					f.fetchedTwice++
				}
			default: // the ledger's record: at most once
				f.records++
				if interrupted {
					f.interrupted++
				} else if c.Status != store.ToolCallExecuted || !strings.Contains(string(c.Result), "recorded") {
					t.Errorf("task %d: call %s (%s) ended %s %s", id, c.ProviderCallID, c.ToolClass, c.Status, c.Result)
				}
				if c.Restarts != 0 {
					t.Errorf("task %d: call %s of %s, not repeatable, was restarted", id, c.ProviderCallID, c.ToolClass)
				}
			}
		}
		for _, m := range msgs {
			for _, c := range m.ToolCalls {
				if _, ok := rows[c.ProviderCallID]; !ok {
					f.dropped++
					t.Errorf("task %d: call %s of turn %d has no row", id, c.ProviderCallID, m.Sequence)
				}
			}
		}
	}
	if want := len(tasks) * drillRounds; f.records != want {
		t.Errorf("%d calls of the ledger's record, want %d (one per round)", f.records, want)
	}
	f.twice = ledger.twice()
	if f.twice > 0 {
		t.Errorf("%d tool calls with effects ran more than once", f.twice)
	}
	f.resumedTotal, f.medianResume, f.maxResume = resumes.figures()
	if f.maxResume > 2*time.Minute {
		t.Errorf("a killed task resumed after %s", f.maxResume)
	}
	if resumes.pending() > 0 {
		t.Errorf("%d killed tasks never resumed", resumes.pending())
	}
	if f.runningAfterTerm > 0 {
		t.Errorf("%d tasks RUNNING after SIGTERM", f.runningAfterTerm)
	}
	t.Logf("crash drill on %s: %d workers, %d SIGKILLs, %d tasks (%d tool-call rounds of %d calls each) in %s",
		storetest.Dialect(), f.workers, f.kills, f.tasks, drillRounds, drillCalls, f.elapsed.Round(time.Second))
	t.Logf("lost %d (failed %d), executed twice %d, dropped %d, interrupted and not repeated %d (calls with effects), re-run after interruption %d (repeatable; %d reached the server twice)",
		f.lost, f.failedTask, f.twice, f.dropped, f.interrupted, f.rerun, f.fetchedTwice)
	t.Logf("killed tasks resumed: %d, median %s, max %s; RUNNING after SIGTERM: %d",
		f.resumedTotal, f.medianResume.Round(time.Millisecond), f.maxResume.Round(time.Millisecond), f.runningAfterTerm)
}

// drillAgent creates the drill's user and agent: read_url enabled, its fetch auto-approved.
func drillAgent(t *testing.T, app *server.App) (agentID, principalID, userID int64) {
	t.Helper()
	ctx := context.Background()
	u, err := app.Store.CreateUser(ctx, store.NewUser{Email: "drill@example.com", PasswordHash: "$argon2id$x", DisplayName: "Drill"})
	if err != nil {
		t.Fatal(err)
	}
	name, prompt := "Drill", "Fetch what you are asked to."
	a, err := app.Store.CreateAgent(ctx, u.PrincipalID, store.AgentFields{Name: &name, SystemPrompt: &prompt})
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(a.ID, 10)
	if _, err := app.ToolConfig.Enable(ctx, u, id, "core.ReadURLTool"); err != nil {
		t.Fatal(err)
	}
	on := true
	if _, err := app.ToolConfig.SetOperation(ctx, u, id, "core.ReadURLTool", "fetch",
		tools.OperationOverride{Enabled: &on, AutoApprove: &on}); err != nil {
		t.Fatal(err)
	}
	return a.ID, a.PrincipalID, u.ID
}

// enableLedger enables the ledger's record for the agent (auto-approved by its manifest).
func enableLedger(t *testing.T, app *server.App, agentID, userID int64) {
	t.Helper()
	ctx := context.Background()
	record, ok := app.Tools.LookupModelName(ledgerTool)
	if !ok {
		t.Fatalf("the ledger's tool %s is not registered", ledgerTool)
	}
	u, err := app.Store.UserByID(ctx, userID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.ToolConfig.Enable(ctx, u, strconv.FormatInt(agentID, 10), record.Spec().Class); err != nil {
		t.Fatal(err)
	}
}

// networkDBEnv returns the settings of a throwaway database (removed when the test ends) on
// the server of SVC_TEST_MYSQL_DSN or else SVC_TEST_POSTGRES_DSN; nil when neither is set.
func networkDBEnv(t *testing.T) []string {
	t.Helper()
	if dsn := os.Getenv(storetest.EnvMySQLDSN); dsn != "" {
		return mysqlEnv(t, dsn)
	}
	if dsn := os.Getenv(storetest.EnvPostgresDSN); dsn != "" {
		host, port, name, user, password := storetest.PostgresDatabase(t, dsn)
		env := []string{"SVC_DB_DRIVER=postgres", "SVC_DB_HOST=" + host, "SVC_DB_PORT=" + strconv.Itoa(port),
			"SVC_DB_NAME=" + name, "SVC_DB_USER=" + user, "SVC_DB_PASSWORD=" + password}
		if strings.Contains(dsn, "sslmode=disable") {
			env = append(env, "SVC_DB_SSLMODE=disable")
		}
		return env
	}
	return nil
}

// mysqlEnv creates a throwaway database on dsn's server (removed when the test ends) and
// returns the settings that point the service at it.
func mysqlEnv(t *testing.T, dsn string) []string {
	t.Helper()
	host, port, name, user, password := storetest.MySQLDatabase(t, dsn)
	return []string{"SVC_DB_DRIVER=mysql", "SVC_DB_HOST=" + host, "SVC_DB_PORT=" + strconv.Itoa(port),
		"SVC_DB_NAME=" + name, "SVC_DB_USER=" + user, "SVC_DB_PASSWORD=" + password}
}

func allSettled(ctx context.Context, t *testing.T, st *store.Store, ids []int64) bool {
	for _, id := range ids {
		tk, err := st.Task(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status == taskstate.Queued || tk.Status == taskstate.Running {
			return false
		}
		if tk.Status == taskstate.Failed && tk.NextRetryAt != nil {
			return false
		}
	}
	return true
}

// counts counts effects by key, so a call that runs twice shows as a count of two.
type counts struct {
	mu   sync.Mutex
	seen map[string]int
}

func (c *counts) add(key string) {
	time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond) // widen the window a kill can hit
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]int{}
	}
	c.seen[key]++
}

func (c *counts) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[key]
}

// twice is the number of keys counted more than once.
func (c *counts) twice() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.seen {
		if v > 1 {
			n++
		}
	}
	return n
}

// hitCounter is the server read_url fetches (a repeatable operation): it counts each path.
type hitCounter struct {
	counts
	srv *httptest.Server
}

func newHitCounter(t *testing.T) *hitCounter {
	h := &hitCounter{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.add(r.URL.Path)
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "fetched "+r.URL.Path)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// ledgerTool is the model-facing name of the ledger's tool (plugin "drill", server "ledger").
const ledgerTool = "drill:ledger_record"

// ledger is the drill's MCP server (streamable HTTP): its tool "record" has an effect, an entry
// per key, and declares no annotations, so it is not repeatable and must never run twice.
type ledger struct {
	counts
	url string
}

type ledgerIn struct {
	Key string `json:"key" jsonschema:"the entry to record"`
}

type ledgerOut struct {
	Recorded string `json:"recorded"`
}

func newLedger(t *testing.T) *ledger {
	l := &ledger{}
	s := sdk.NewServer(&sdk.Implementation{Name: "ledger", Version: "1.0.0"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "record", Description: "Records an entry."},
		func(ctx context.Context, req *sdk.CallToolRequest, in ledgerIn) (*sdk.CallToolResult, ledgerOut, error) {
			l.add(in.Key)
			return nil, ledgerOut{Recorded: in.Key}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	l.url = srv.URL + "/mcp"
	return l
}

// newDrillModel is an OpenAI-compatible endpoint: for the task "drill-N" it asks for
// drillRounds rounds of drillCalls calls — the ledger's record when the request offers it, then
// read_url calls of the hit counter —, then answers.
func newDrillModel(t *testing.T, hitBase string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := readChatRequest(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n, results := "", req.ToolResults
		if g := drillPrompt.FindStringSubmatch(req.Prompt); g != nil {
			n = g[1]
		}
		time.Sleep(time.Duration(rand.IntN(60)) * time.Millisecond)
		msg := map[string]any{"role": "assistant", "content": "done " + n}
		finish := "stop"
		record := "" // the ledger tool's name on the wire (the driver encodes the ':')
		for _, name := range req.Tools {
			if strings.HasSuffix(name, "ledger_record") {
				record = name
			}
		}
		if round := results / drillCalls; round < drillRounds && n != "" {
			var calls []map[string]any
			for i := range drillCalls {
				name, args := "read_url", map[string]any{"url": fmt.Sprintf("%s/hit/%s/%d/%d", hitBase, n, round, i)}
				if i == 0 && record != "" {
					name, args = record, map[string]any{"key": fmt.Sprintf("%s/%d", n, round)}
				}
				raw, _ := json.Marshal(args)
				calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%s_%d_%d", n, round, i), "type": "function",
					"function": map[string]any{"name": name, "arguments": string(raw)}})
			}
			msg, finish = map[string]any{"role": "assistant", "content": nil, "tool_calls": calls}, "tool_calls"
		}
		llmfake.WriteOpenAIAnswer(w, req.Stream, "drill", msg, finish)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// resumeWatch measures, for each task a SIGKILL interrupted, how long until another worker
// took it up again (or it settled).
type resumeWatch struct {
	st      *store.Store
	user    int64
	mu      sync.Mutex
	waiting map[int64]watchEntry
	took    []time.Duration
}

type watchEntry struct {
	owner string
	at    time.Time
}

func newResumeWatch(st *store.Store, user int64) *resumeWatch {
	return &resumeWatch{st: st, user: user, waiting: map[int64]watchEntry{}}
}

// killed records the RUNNING tasks whose lease the killed process pid held.
func (r *resumeWatch) killed(ctx context.Context, t *testing.T, pid int) {
	now := time.Now()
	var ts []store.Task
	for page := 1; ; page++ {
		got, err := r.st.ListTasks(ctx, store.TaskQuery{UserID: r.user, Status: taskstate.Running, Page: page, PerPage: 100})
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, got...)
		if len(got) < 100 {
			break
		}
	}
	mark := ":" + strconv.Itoa(pid) + ":"
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tk := range ts {
		if tk.LeaseOwner != nil && strings.Contains(*tk.LeaseOwner, mark) {
			r.waiting[tk.ID] = watchEntry{owner: *tk.LeaseOwner, at: now}
		}
	}
	r.pollLocked(ctx)
}

func (r *resumeWatch) poll(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pollLocked(ctx)
}

func (r *resumeWatch) pollLocked(ctx context.Context) {
	for id, w := range r.waiting {
		tk, err := r.st.Task(ctx, id)
		if err != nil {
			continue
		}
		stillDead := tk.Status == taskstate.Running && tk.LeaseOwner != nil && *tk.LeaseOwner == w.owner
		if stillDead || tk.Status == taskstate.Queued {
			continue
		}
		r.took = append(r.took, time.Since(w.at))
		delete(r.waiting, id)
	}
}

func (r *resumeWatch) pending() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.waiting) }

func (r *resumeWatch) figures() (n int, median, max time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.took) == 0 {
		return 0, 0, 0
	}
	d := slices.Clone(r.took)
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return len(d), d[len(d)/2], d[len(d)-1]
}

type prefixWriter struct {
	t      *testing.T
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if line != "" {
			p.t.Log(p.prefix + line)
		}
	}
	return len(b), nil
}
