//go:build unix

package mcp

import (
	"os"
	"strconv"
	"syscall"
)

// markCloseOnExec sets close-on-exec on every descriptor above stderr the service holds. Go
// opens its own descriptors that way, but those the service inherited from whatever started it
// (a shell, a supervisor, a test runner) are not, and exec would pass them on to every stdio
// MCP server. They stay open in the service.
func markCloseOnExec() {
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
				syscall.CloseOnExec(fd)
			}
		}
		return
	}
}
