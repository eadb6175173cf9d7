package main

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
)

// TestCleanupStopsEveryProcess: the hub, started first, is stopped with the svc processes
// started after it (issue 23, item 7: setup replaced the process map after the hub was started,
// and the hub outlived every passing run).
func TestCleanupStopsEveryProcess(t *testing.T) {
	d := &drill{}
	var pids []int
	for _, name := range []string{"mercure", "api-1", "worker-1"} {
		c := exec.Command("sleep", "60")
		if err := c.Start(); err != nil {
			t.Skip("no sleep(1):", err)
		}
		d.track(name, c)
		pids = append(pids, c.Process.Pid)
	}
	d.cleanup()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d still there after cleanup (kill 0: %v)", pid, err)
		}
	}
}
