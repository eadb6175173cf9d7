package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentsvc/svc/plugins/mcp"
	"github.com/agentsvc/svc/tools"
)

// Issue 22, item 4: a user who set 12 values of a server's secret and ran 12 tasks got 13
// processes, each kept 10 minutes idle. The processes of a server and of all servers are
// bounded, the least recently used idle one makes room, a call finding them all busy waits for
// one and, past BusyWait, gets a tool error; idle processes stop (sooner by default).

// TestProcessesPerServerCapped: twelve secret values, a bound of 2 per server: the processes of
// the older values are stopped, only the two most recent run.
func TestProcessesPerServerCapped(t *testing.T) {
	t.Parallel()
	m, reg := syncedPy(t, mcp.Options{MaxProcessesPerServer: 2})
	var pids []int
	for i := range 12 {
		pids = append(pids, echoPID(t, reg, map[string]any{"token": fmt.Sprintf("user-%d", i)}))
		if st := m.Stats(); st.Processes > 2 {
			t.Fatalf("after %d values: %d processes, the bound is 2", i+1, st.Processes)
		}
	}
	for _, pid := range pids[:10] {
		waitGone(t, pid)
	}
	for _, pid := range pids[10:] {
		if !alive(pid) {
			t.Fatalf("process %d of a recent value was stopped", pid)
		}
	}
	// The most recent value still has its process.
	if again := echoPID(t, reg, map[string]any{"token": "user-11"}); again != pids[11] {
		t.Fatalf("user-11 runs on %d, want its process %d", again, pids[11])
	}
}

// TestProcessesCappedInTotal: two servers, a total of 2: a third process stops the least
// recently used one, whichever server it serves.
func TestProcessesCappedInTotal(t *testing.T) {
	t.Parallel()
	m := newManager(t, mcp.Options{MaxProcesses: 2})
	for _, name := range []string{"py", "py2"} {
		cfg := pyServer(t)
		cfg.Name = name
		if err := m.Add(cfg); err != nil {
			t.Fatal(err)
		}
	}
	reg := tools.NewRegistry()
	if err := m.Sync(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	call := func(tool, token string) int {
		t.Helper()
		res, err := executor(t, reg, tool).Execute(context.Background(), tools.Call{Operation: mcp.Operation,
			Args: map[string]any{"text": "x"}, Settings: map[string]any{"token": token}})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		var data struct{ PID int }
		if err := json.Unmarshal(res.Data, &data); err != nil || data.PID <= 0 {
			t.Fatalf("%s data %s: %v", tool, res.Data, err)
		}
		return data.PID
	}
	a := call("demo:py_echo", "a")
	b := call("demo:py2_echo", "b")
	c := call("demo:py_echo", "c")
	if st := m.Stats(); st.Processes != 2 {
		t.Fatalf("%d processes, the bound is 2", st.Processes)
	}
	waitGone(t, a)
	if !alive(b) || !alive(c) {
		t.Fatalf("processes %d and %d should run (a, the least recently used, was %d)", b, c, a)
	}
}

// slowCall runs the slow tool with token "holder" for the given seconds in the background and
// returns once the manager counts it busy; the result arrives on the channel.
func slowCall(t *testing.T, m *mcp.Manager, reg *tools.Registry, seconds int) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		res, err := executor(t, reg, "demo:py_slow").Execute(context.Background(), tools.Call{Operation: mcp.Operation,
			Args: map[string]any{"seconds": seconds}, Settings: map[string]any{"token": "holder"}})
		if err == nil && res.Content != "slept" {
			err = fmt.Errorf("slow answered %q", res.Content)
		}
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for m.Stats().Busy == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the slow call never held a process")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return done
}

// TestBusyServerQueues: a bound of 1, the process busy with another value's call: the next
// call waits for it and then runs on a process of its own; the first call is not cut short.
func TestBusyServerQueues(t *testing.T) {
	t.Parallel()
	m, reg := syncedPy(t, mcp.Options{MaxProcessesPerServer: 1})
	done := slowCall(t, m, reg, 1)
	echoPID(t, reg, map[string]any{"token": "waiter"})
	if err := <-done; err != nil {
		t.Fatalf("the busy call: %v", err)
	}
	if st := m.Stats(); st.Processes != 1 {
		t.Fatalf("%d processes, the bound is 1", st.Processes)
	}
}

// TestBusyServerAnswersToolError: past BusyWait, a call that found every process busy gets a
// tool error saying so, and the busy call still completes.
func TestBusyServerAnswersToolError(t *testing.T) {
	t.Parallel()
	m, reg := syncedPy(t, mcp.Options{MaxProcessesPerServer: 1, BusyWait: 200 * time.Millisecond})
	done := slowCall(t, m, reg, 3)
	_, err := executor(t, reg, "demo:py_echo").Execute(context.Background(), tools.Call{Operation: mcp.Operation,
		Args: map[string]any{"text": "x"}, Settings: map[string]any{"token": "other"}})
	toolErr(t, err, "is busy")
	if err := <-done; err != nil {
		t.Fatalf("the busy call: %v", err)
	}
}

// TestIdleProcessStops: a process unused for IdleTimeout is stopped.
func TestIdleProcessStops(t *testing.T) {
	t.Parallel()
	_, reg := syncedPy(t, mcp.Options{IdleTimeout: 200 * time.Millisecond})
	waitGone(t, echoPID(t, reg, map[string]any{"token": "a"}))
}
