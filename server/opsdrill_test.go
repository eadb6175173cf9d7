package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // the drill holds the database's write lock from outside

	"github.com/agentsvc/svc/agentloop/llm/llmfake"
	"github.com/agentsvc/svc/bench/outside"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/push"
	"github.com/agentsvc/svc/internal/platform/sseread"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestOperationsDrill is issue 23's drill against real processes of bin/svc (built by the test;
// SQLite, or a throwaway MariaDB/MySQL database behind a loopback proxy when
// SVC_TEST_MYSQL_DSN is set; a loopback model), one part per guarantee of docs/reliability.md
// "Operating it":
//
//  1. readiness: `svc serve --api-only` answers /readyz 200, and `svc worker` answers /readyz
//     200 on worker_health_listen;
//  2. a database outage (SQLite: its write lock held from outside beyond sqlite_busy_timeout;
//     MariaDB: the proxy cut, every connection closed and new ones refused) answers 503
//     SERVICE_UNAVAILABLE with Retry-After, /readyz 503, and both recover once it ends, without
//     a restart; SIGTERM stops both processes with exit status 0;
//  3. SIGTERM on `svc serve` with an open event stream of a task waiting for approval and a
//     push subscription, four steps in flight (two of whose model calls finish after the
//     signal, two never answer) and six tasks queued: the stream and the subscription end at once, the process exits 0 within
//     shutdown_grace_seconds, no task is left RUNNING, nothing is claimed after the signal, the
//     hung steps are handed back (QUEUED, no recovery counted), and a reconnect with
//     Last-Event-ID on the next process resumes the stream without a gap while every task
//     completes.
//
// It takes some 30 s (40 s on MariaDB), so -short skips it.
func TestOperationsDrill(t *testing.T) {
	if testing.Short() {
		t.Skip("the operations drill drives real processes; skipped with -short")
	}
	d := newOpsDrill(t)
	d.readiness()
	d.outage()
	d.stopWithOpenStream()
}

// drillGrace is the drill's shutdown_grace_seconds: short, so the hung steps are cancelled soon.
const drillGrace = 10 * time.Second

type opsDrill struct {
	t     *testing.T
	bin   string
	dir   string
	env   []string
	model *drillLLM
	// db is the drill's database: SQLite, or a throwaway MariaDB/MySQL database reached through
	// a proxy the drill can cut when SVC_TEST_MYSQL_DSN is set.
	db                  drillDB
	apiOnly, worker     *proc  // the readiness part's processes, which the outage part uses and stops
	apiRoot, workerRoot string // their roots: http://addr/svc, http://worker_health_listen
}

func newOpsDrill(t *testing.T) *opsDrill {
	d := &opsDrill{t: t, dir: t.TempDir(), model: newDrillLLM(t)}
	if dsn := os.Getenv(storetest.EnvMySQLDSN); dsn != "" {
		d.db = newMySQLDrillDB(t, dsn)
	} else {
		d.db = &sqliteDrillDB{path: filepath.Join(d.dir, "storage", "drill.sqlite")}
	}
	d.bin = filepath.Join(d.dir, "svc")
	build := exec.Command("go", "build", "-o", d.bin, "github.com/agentsvc/svc/cmd/svc")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	d.env = append(os.Environ(),
		"SVC_CONFIG_FILE="+filepath.Join(d.dir, "none.yaml"), "SVC_KEY_PATH="+filepath.Join(d.dir, "secret.key"),
		"SVC_LOG_LEVEL=info",
		"SVC_WORKER_RUNTIME_MODE=server", "SVC_MAX_WORKERS=4",
		"SVC_SHUTDOWN_GRACE_SECONDS="+strconv.Itoa(int(drillGrace/time.Second)),
		"SVC_LLM_DRIVER=openai", "SVC_LLM_BASE_URL="+d.model.srv.URL+"/v1", "SVC_LLM_MODEL=drill",
	)
	d.env = append(d.env, d.db.settings()...)
	if out, err := d.cmd("migrate").CombinedOutput(); err != nil {
		t.Fatalf("svc migrate: %v\n%s", err, out)
	}
	create := d.cmd("user", "create", "--email", "drill@example.com", "--name", "Drill", "--verified")
	create.Env = append(create.Env, "SVC_USER_PASSWORD=drill-password-1")
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("svc user create: %v\n%s", err, out)
	}
	return d
}

func (d *opsDrill) cmd(args ...string) *exec.Cmd {
	c := exec.Command(d.bin, args...)
	c.Dir, c.Env = d.dir, append([]string(nil), d.env...)
	return c
}

// proc is one running svc process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// start runs `svc args…` with the extra settings env; the process is killed when the test ends
// if it is still running.
func (d *opsDrill) start(name string, env []string, args ...string) *proc {
	c := d.cmd(args...)
	c.Env = append(c.Env, "SVC_LOG_PATH="+filepath.Join(d.dir, name+".log"))
	c.Env = append(c.Env, env...)
	p := &proc{name: name, cmd: c, out: &syncBuffer{}, exited: make(chan struct{})}
	c.Stdout, c.Stderr = p.out, p.out
	if err := c.Start(); err != nil {
		d.t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.err = c.Wait(); close(p.exited) }()
	d.t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = c.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// term sends SIGTERM and waits for the exit, at most bound (then the process is killed and the
// drill fails); it returns how long the stop took.
func (d *opsDrill) term(p *proc, bound time.Duration) time.Duration {
	d.t.Helper()
	at := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		d.t.Fatalf("SIGTERM %s: %v", p.name, err)
	}
	return d.waitExit(p, at, bound)
}

func (d *opsDrill) waitExit(p *proc, at time.Time, bound time.Duration) time.Duration {
	d.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(bound - time.Since(at)):
		_ = p.cmd.Process.Kill()
		<-p.exited
		d.t.Errorf("%s did not exit within %s of SIGTERM: killed\n%s", p.name, bound, p.out.String())
	}
	took := time.Since(at)
	if p.err != nil {
		d.t.Errorf("%s exited with %v after SIGTERM (want status 0)\n%s", p.name, p.err, p.out.String())
	}
	return took
}

func (d *opsDrill) login(base string) *outside.Session {
	d.t.Helper()
	s, err := outside.Login(base, "drill@example.com", "drill-password-1", 4)
	if err != nil {
		d.t.Fatal(err)
	}
	return s
}

// serve starts `svc serve` (with extra arguments) on a free port and waits until it is ready.
func (d *opsDrill) serve(name string, env []string, args ...string) (*proc, string) {
	d.t.Helper()
	addr, err := outside.FreeAddr()
	if err != nil {
		d.t.Fatal(err)
	}
	p := d.start(name, append(env, "SVC_LISTEN="+addr), append([]string{"serve"}, args...)...)
	root := "http://" + addr + "/svc"
	if err := outside.WaitHTTP(root+"/readyz", 30*time.Second); err != nil {
		d.t.Fatalf("%s never became ready: %v\n%s", name, err, p.out.String())
	}
	return p, root
}

// readiness: an API-only process and a worker each answer their readiness 200.
func (d *opsDrill) readiness() {
	d.t.Helper()
	// On SQLite the outage below holds the write lock beyond this wait, so writes fail fast.
	d.apiOnly, d.apiRoot = d.serve("api-only", []string{"SVC_SQLITE_BUSY_TIMEOUT=300"}, "--api-only")
	health, err := outside.FreeAddr()
	if err != nil {
		d.t.Fatal(err)
	}
	d.worker = d.start("worker", []string{"SVC_WORKER_HEALTH_LISTEN=" + health}, "worker")
	d.workerRoot = "http://" + health
	if err := outside.WaitHTTP(d.workerRoot+"/readyz", 30*time.Second); err != nil {
		d.t.Fatalf("svc worker never answered /readyz 200 on worker_health_listen: %v\n%s", err, d.worker.out.String())
	}
	d.t.Logf("ready: svc serve --api-only (%s/readyz 200), svc worker (%s/readyz 200)", d.apiRoot, d.workerRoot)
}

// outage: a database outage (drillDB.cut) makes writes answer 503 with Retry-After and
// readiness 503; once it ends both recover without a restart.
func (d *opsDrill) outage() {
	t := d.t
	t.Helper()
	s := d.login(d.apiRoot + "/api/v1")
	agentID, err := s.CreateAgent("Outage", "Answer.", false)
	if err != nil {
		t.Fatal(err)
	}
	restore := d.db.cut(t)
	for _, probe := range []struct {
		name string
		do   func() (*http.Response, error)
	}{
		{"POST /tasks", func() (*http.Response, error) { return rawCreateTask(s, agentID, "[later] during the outage") }},
		{"GET /readyz", func() (*http.Response, error) { return http.Get(d.apiRoot + "/readyz") }},
	} {
		resp, err := probe.do()
		if err != nil {
			t.Fatalf("%s during the outage: %v", probe.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s during the outage = %d %s, want 503", probe.name, resp.StatusCode, body)
		}
		// The API's answer is the envelope with Retry-After (a probe's is its checks).
		if probe.name == "POST /tasks" && (!strings.Contains(string(body), `"SERVICE_UNAVAILABLE"`) || resp.Header.Get("Retry-After") == "") {
			t.Errorf("%s during the outage: %s (Retry-After %q), want the SERVICE_UNAVAILABLE envelope with Retry-After", probe.name, body, resp.Header.Get("Retry-After"))
		}
	}
	restore()
	// Recovered without a restart: the same processes answer again (bounded: a few retries).
	if err := outside.WaitHTTP(d.apiRoot+"/readyz", 10*time.Second); err != nil {
		t.Errorf("readiness did not recover after the outage: %v", err)
	}
	id, err := s.CreateTask(agentID, "[later] after the outage")
	if err != nil {
		t.Errorf("create a task after the outage: %v", err)
	}
	// The worker runs it: the whole path works again.
	if st := waitStatus(t, s, id, 20*time.Second, taskstate.Completed); st != taskstate.Completed {
		t.Errorf("the task created after the outage is %s, want COMPLETED", st)
	}
	for _, p := range []*proc{d.apiOnly, d.worker} {
		took := d.term(p, drillGrace+5*time.Second)
		t.Logf("%s stopped in %s after SIGTERM", p.name, took.Round(time.Millisecond))
	}
}

func rawCreateTask(s *outside.Session, agentID int64, prompt string) (*http.Response, error) {
	raw, _ := json.Marshal(map[string]any{"agent_id": agentID, "prompt": prompt})
	req, err := http.NewRequest(http.MethodPost, s.Base+"/tasks", bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", s.CSRF)
	return s.HTTP.Do(req)
}

type taskView struct {
	ID     int64  `json:"id"`
	Status string `json:"status"`
}

func drillTask(s *outside.Session, id int64) (taskView, error) {
	var out struct {
		Data struct {
			Task taskView `json:"task"`
		} `json:"data"`
	}
	err := s.Do(http.MethodGet, fmt.Sprintf("/tasks/%d", id), nil, http.StatusOK, &out)
	return out.Data.Task, err
}

// waitStatus polls task id until it has status want, for at most bound; it returns the last
// status seen.
func waitStatus(t *testing.T, s *outside.Session, id int64, bound time.Duration, want string) string {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		v, err := drillTask(s, id)
		if err == nil && v.Status == want {
			return v.Status
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err.Error()
			}
			return v.Status
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopWithOpenStream is the scenario: SIGTERM while a console follows a task waiting
// for approval and the worker is busy.
func (d *opsDrill) stopWithOpenStream() {
	t := d.t
	t.Helper()
	srv, root := d.serve("serve", nil)
	s := d.login(root + "/api/v1")
	approveAgent, err := s.CreateAgent("Approve", "Compute.", false)
	if err != nil {
		t.Fatal(err)
	}
	tool := fmt.Sprintf("/agents/%d/tools/core.CalculatorTool", approveAgent)
	if err := s.Do(http.MethodPost, tool+"/enable", nil, http.StatusOK, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Do(http.MethodPatch, tool+"/operations/calculate", map[string]any{"enabled": true, "auto_approve": false}, http.StatusOK, nil); err != nil {
		t.Fatal(err)
	}
	waiting, err := s.CreateTask(approveAgent, "[approve] what is 6*7?")
	if err != nil {
		t.Fatal(err)
	}
	if st := waitStatus(t, s, waiting, 20*time.Second, taskstate.PendingApproval); st != taskstate.PendingApproval {
		t.Fatalf("task %d is %s, want PENDING_APPROVAL", waiting, st)
	}
	stream := followStream(s, waiting, "")
	hub := subscribeHub(t, s, root)

	plain, err := s.CreateAgent("Plain", "Answer.", false)
	if err != nil {
		t.Fatal(err)
	}
	var ids, finishing, hung, queued []int64
	for i, kind := range []string{"finish", "finish", "hang", "hang"} {
		id, err := s.CreateTask(plain, fmt.Sprintf("[%s] step %d", kind, i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		if kind == "finish" {
			finishing = append(finishing, id)
		} else {
			hung = append(hung, id)
		}
	}
	d.model.waitHeld(t, 4, 20*time.Second) // every slot (max_workers 4) holds a step at its model call
	for i := range 6 {
		id, err := s.CreateTask(plain, fmt.Sprintf("[later] queued %d", i))
		if err != nil {
			t.Fatal(err)
		}
		ids, queued = append(ids, id), append(queued, id)
	}

	signalled := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stream.ended:
		t.Logf("the event stream ended %s after SIGTERM (last event %s)", time.Since(signalled).Round(time.Millisecond), stream.last())
	case <-time.After(drillGrace):
		t.Errorf("the event stream of task %d was still open %s after SIGTERM", waiting, drillGrace)
	}
	select {
	case <-hub:
	case <-time.After(drillGrace):
		t.Errorf("the push subscription was still open %s after SIGTERM", drillGrace)
	}
	d.model.release() // the two finishing steps answer now, after the signal
	took := d.waitExit(srv, signalled, drillGrace+3*time.Second)
	t.Logf("svc serve stopped in %s after SIGTERM (shutdown_grace_seconds %d)", took.Round(time.Millisecond), int(drillGrace/time.Second))
	if took > drillGrace {
		t.Errorf("the stop took %s, beyond shutdown_grace_seconds (%s)", took, drillGrace)
	}

	// The database as the process left it.
	st, err := store.Open(context.Background(), d.db.options())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	all := append([]int64{waiting}, ids...)
	running, claimedAfter := 0, 0
	statuses := map[int64]*store.Task{}
	for _, id := range all {
		tk, err := st.Task(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		statuses[id] = tk
		if tk.Status == taskstate.Running {
			running++
		}
		evs, err := st.TaskEvents(ctx, id, 0, store.MaxEventsPage)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Status != nil && ev.Status.Status == taskstate.Running && ev.CreatedAt.After(signalled) {
				claimedAfter++
			}
		}
	}
	_ = st.Close()
	t.Logf("after the stop: %d RUNNING, %d claims after the signal", running, claimedAfter)
	if running != 0 {
		t.Errorf("%d tasks left RUNNING after the stop", running)
	}
	if claimedAfter != 0 {
		t.Errorf("%d claims after the signal", claimedAfter)
	}
	for _, id := range finishing {
		if tk := statuses[id]; tk.Status != taskstate.Completed {
			t.Errorf("finishing task %d is %s, want COMPLETED (its step finished within the grace)", id, tk.Status)
		}
	}
	for _, id := range hung {
		if tk := statuses[id]; tk.Status != taskstate.Queued || tk.Recoveries != 0 {
			t.Errorf("hung task %d is %s with %d recoveries, want QUEUED (handed back) with none", id, tk.Status, tk.Recoveries)
		}
	}
	for _, id := range queued {
		if tk := statuses[id]; tk.Status != taskstate.Queued {
			t.Errorf("queued task %d is %s, want QUEUED (never claimed)", id, tk.Status)
		}
	}
	if tk := statuses[waiting]; tk.Status != taskstate.PendingApproval {
		t.Errorf("the waiting task is %s, want PENDING_APPROVAL", tk.Status)
	}

	// The next process: the console reconnects with Last-Event-ID, the task is approved, and
	// every task the stop handed back or left queued completes.
	d.model.stopHanging()
	next, root := d.serve("serve-again", nil)
	s = d.login(root + "/api/v1")
	resumed := followStream(s, waiting, stream.last())
	callID := d.model.callID()
	if err := s.Do(http.MethodPost, fmt.Sprintf("/tasks/%d/approve", waiting),
		map[string]any{"decisions": []map[string]any{{"provider_call_id": callID, "decision": "approve"}}}, http.StatusOK, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-resumed.ended:
	case <-time.After(20 * time.Second):
		t.Fatalf("the resumed stream did not end with the task's run")
	}
	last, _ := strconv.ParseInt(stream.last(), 10, 64)
	if seqs := resumed.sequences(); len(seqs) == 0 || seqs[0] != last+1 || !consecutive(seqs) {
		t.Errorf("the stream resumed after %d with sequences %v, want %d, %d, … without a gap", last, seqs, last+1, last+2)
	}
	if resumed.terminal() != taskstate.Completed {
		t.Errorf("the resumed stream ended with %q, want the COMPLETED status event", resumed.terminal())
	}
	for _, id := range ids {
		if st := waitStatus(t, s, id, 20*time.Second, taskstate.Completed); st != taskstate.Completed {
			t.Errorf("task %d is %s after the restart, want COMPLETED", id, st)
		}
	}
	d.term(next, drillGrace+3*time.Second)
}

func consecutive(seqs []int64) bool {
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			return false
		}
	}
	return true
}

// subscribeHub opens the user's task topic on the embedded push hub of the process at root and
// returns a channel closed when the subscription ends.
func subscribeHub(t *testing.T, s *outside.Session, root string) <-chan struct{} {
	t.Helper()
	client := *s.HTTP
	client.Timeout = 0 // a subscription lasts
	resp, err := client.Get(root + "/.well-known/mercure?" + url.Values{"topic": {push.TaskTopic(s.UserID)}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		t.Fatalf("subscribe: %d %s", resp.StatusCode, b)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	return ended
}

// streamFollower reads one task's event stream (GET /tasks/{id}/events) until it ends.
type streamFollower struct {
	mu     sync.Mutex
	seqs   []int64
	status string // the last status event's
	ended  chan struct{}
}

func followStream(s *outside.Session, id int64, lastEventID string) *streamFollower {
	f := &streamFollower{ended: make(chan struct{})}
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/tasks/%d/events", s.Base, id), nil)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	client := *s.HTTP
	client.Timeout = 0 // a stream lasts
	go func() {
		defer close(f.ended)
		resp, err := client.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		_ = sseread.Read(resp.Body, 4<<20, func(data []byte) error {
			var ev struct {
				Sequence int64 `json:"sequence"`
				Status   *struct {
					Status string `json:"status"`
				} `json:"status"`
			}
			if json.Unmarshal(data, &ev) == nil {
				f.mu.Lock()
				f.seqs = append(f.seqs, ev.Sequence)
				if ev.Status != nil {
					f.status = ev.Status.Status
				}
				f.mu.Unlock()
			}
			return nil
		})
	}()
	return f
}

func (f *streamFollower) last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seqs) == 0 {
		return ""
	}
	return strconv.FormatInt(f.seqs[len(f.seqs)-1], 10)
}

func (f *streamFollower) sequences() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.seqs...)
}

func (f *streamFollower) terminal() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

// drillLLM is the drill's OpenAI-compatible model. By the marker in the task's prompt:
// "[approve]" asks for one calculator call, then answers; "[finish]" holds the call until
// release; "[hang]" holds it until the client gives up (the stop cancels it) while hanging is
// on, then answers; anything else answers at once.
type drillLLM struct {
	srv       *httptest.Server
	held      atomic.Int64
	released  chan struct{}
	once      sync.Once
	hanging   atomic.Bool
	mu        sync.Mutex
	lastCall  string
	callCount atomic.Int64
}

func newDrillLLM(t *testing.T) *drillLLM {
	m := &drillLLM{released: make(chan struct{})}
	m.hanging.Store(true)
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(func() { m.release(); m.srv.Close() })
	return m
}

func (m *drillLLM) serve(w http.ResponseWriter, r *http.Request) {
	req, err := readChatRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	prompt, results := req.Prompt, req.ToolResults
	answer := map[string]any{"role": "assistant", "content": "Done."}
	switch {
	case strings.Contains(prompt, "[approve]") && results == 0:
		id := fmt.Sprintf("call_drill_%d", m.callCount.Add(1))
		m.mu.Lock()
		m.lastCall = id
		m.mu.Unlock()
		calls := []map[string]any{{"id": id, "type": "function",
			"function": map[string]any{"name": "calculator", "arguments": `{"expression":"6*7"}`}}}
		llmfake.WriteOpenAIAnswer(w, req.Stream, "drill", map[string]any{"role": "assistant", "content": nil, "tool_calls": calls}, "tool_calls")
		return
	case strings.Contains(prompt, "[finish]"):
		m.held.Add(1)
		select {
		case <-m.released:
		case <-r.Context().Done():
			return
		}
	case strings.Contains(prompt, "[hang]") && m.hanging.Load():
		m.held.Add(1)
		<-r.Context().Done()
		return
	}
	llmfake.WriteOpenAIAnswer(w, req.Stream, "drill", answer, "stop")
}

// chatRequest is what the drills' fake models read of a /chat/completions call.
type chatRequest struct {
	Stream      bool     // the answer is streamed (chat.completion.chunk events)
	Prompt      string   // the first user message's content, as JSON
	ToolResults int      // the tool results the conversation holds so far
	Tools       []string // the names of the functions offered, as on the wire
}

func readChatRequest(r *http.Request) (chatRequest, error) {
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return chatRequest{}, err
	}
	out := chatRequest{Stream: req.Stream}
	for _, tl := range req.Tools {
		out.Tools = append(out.Tools, tl.Function.Name)
	}
	for _, msg := range req.Messages {
		if msg.Role == "user" && out.Prompt == "" {
			b, _ := json.Marshal(msg.Content)
			out.Prompt = string(b)
		}
		if msg.Role == "tool" {
			out.ToolResults++
		}
	}
	return out, nil
}

func (m *drillLLM) release()     { m.once.Do(func() { close(m.released) }) }
func (m *drillLLM) stopHanging() { m.hanging.Store(false) }

func (m *drillLLM) callID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastCall
}

// waitHeld waits until n model calls are held, for at most bound.
func (m *drillLLM) waitHeld(t *testing.T, n int64, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for m.held.Load() < n {
		if time.Now().After(deadline) {
			t.Fatal(errors.New("the model never held " + strconv.FormatInt(n, 10) + " calls at once"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// drillDB is the drill's database and the outage it can cause.
type drillDB interface {
	settings() []string     // the SVC_DB_* settings of the processes
	options() store.Options // the drill's own access, for its checks
	// cut starts the outage and returns its end.
	cut(t *testing.T) (restore func())
}

// sqliteDrillDB is storage/drill.sqlite; its outage is the write lock held from outside beyond
// the API process's sqlite_busy_timeout (300 ms): writes and the readiness probe's write fail.
type sqliteDrillDB struct{ path string }

func (s *sqliteDrillDB) settings() []string {
	return []string{"SVC_DB_DRIVER=sqlite", "SVC_DB_NAME=drill"}
}

func (s *sqliteDrillDB) options() store.Options {
	return store.Options{Driver: "sqlite", SQLitePath: s.path}
}

func (s *sqliteDrillDB) cut(t *testing.T) func() {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+s.path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Error(err)
		}
		_ = conn.Close()
		_ = db.Close()
	}
}

// mysqlDrillDB is a throwaway database on the server of SVC_TEST_MYSQL_DSN, which the
// processes reach through a loopback TCP proxy; its outage closes the proxy's listener and
// every connection through it (the server is shared: it is never stopped), as a database
// host that went away.
type mysqlDrillDB struct {
	cfg   *config.Config // the database's address and credentials (db_* keys)
	proxy *tcpProxy
}

func newMySQLDrillDB(t *testing.T, dsn string) *mysqlDrillDB {
	host, port, name, user, password := storetest.MySQLDatabase(t, dsn)
	cfg := config.Defaults()
	cfg.DBDriver, cfg.DBHost, cfg.DBPort, cfg.DBName, cfg.DBUser, cfg.DBPassword = "mysql", host, port, name, user, password
	return &mysqlDrillDB{cfg: cfg, proxy: newTCPProxy(t, net.JoinHostPort(host, strconv.Itoa(port)))}
}

func (m *mysqlDrillDB) settings() []string {
	host, port, _ := net.SplitHostPort(m.proxy.addr)
	return []string{"SVC_DB_DRIVER=mysql", "SVC_DB_HOST=" + host, "SVC_DB_PORT=" + port, "SVC_DB_NAME=" + m.cfg.DBName,
		"SVC_DB_USER=" + m.cfg.DBUser, "SVC_DB_PASSWORD=" + m.cfg.DBPassword}
}

func (m *mysqlDrillDB) options() store.Options {
	return store.Options{Driver: "mysql", MySQLDSN: m.cfg.MySQLDSN()}
}

func (m *mysqlDrillDB) cut(t *testing.T) func() {
	t.Helper()
	m.proxy.cut()
	return func() { m.proxy.restore(t) }
}

// tcpProxy forwards loopback connections to target until cut.
type tcpProxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	p := &tcpProxy{target: target, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *tcpProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *tcpProxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // cut meanwhile
		p.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	_, _ = io.Copy(c, up)
	_ = c.Close()
}

// cut closes the listener (new connections are refused) and every open connection.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// restore listens again on the same address.
func (p *tcpProxy) restore(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("proxy: listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}
