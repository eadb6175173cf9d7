package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of utime and stime in /proc/<pid>/stat (100 on
// every Linux architecture Go runs on).
const clockTicks = 100

// procCPU is the CPU time (user + system) a process has used so far, from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command (field 2) is in parentheses and may contain spaces: split after its end.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command", pid)
	}
	f := strings.Fields(string(raw[i+1:]))
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// procWritten is the bytes a process has caused to be written to storage so far
// (write_bytes of /proc/<pid>/io: counted when it dirties the page cache or writes directly).
func procWritten(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	for line := range bytes.SplitSeq(raw, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("write_bytes:")); ok {
			return strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/io: no write_bytes", pid)
}

// usage is CPU time and bytes written.
type usage struct {
	cpu     time.Duration
	written int64
}

// serverMeter measures the database server's share of a drain: the CPU time and bytes written
// of its processes between begin and end. On PostgreSQL (a process per connection) it samples
// every postgres process every 100 ms and counts the backends of the site's own database (by
// their process title, "postgres: [cluster:] user db host(port) state") and the server's shared
// processes (WAL writer, checkpointer, background writer, …), not other databases' backends, so
// that other work on the same server stays out; a backend that exits between two samples loses
// at most its last 100 ms. On MariaDB/MySQL (one process, a thread per connection) it reads the
// whole mariadbd/mysqld process, other databases' work included.
type serverMeter struct {
	dialect, dbName string

	mu   sync.Mutex
	base map[int]usage // per pid: the first sample (zero for a process born after begin)
	own  map[int]bool  // PostgreSQL: the pids that are the site database's backends
	skip map[int]bool  // PostgreSQL: the backends of the bench's own connections (not counted)
	last map[int]usage
	stop chan struct{}
	done chan struct{}
}

// newServerMeter starts measuring the server of dialect ("postgres" or "mysql"; anything else
// measures nothing) for the database dbName.
func newServerMeter(dialect, dbName string) *serverMeter {
	m := &serverMeter{dialect: dialect, dbName: dbName, base: map[int]usage{}, last: map[int]usage{}, own: map[int]bool{}, skip: map[int]bool{},
		stop: make(chan struct{}), done: make(chan struct{})}
	if dialect != "postgres" && dialect != "mysql" {
		close(m.done)
		return m
	}
	m.sample(true)
	go func() {
		defer close(m.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				m.sample(false)
			}
		}
	}()
	return m
}

// exclude leaves the given processes out (the backends of the bench's own connections, which
// poll the queue's depth).
func (m *serverMeter) exclude(pids []int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range pids {
		m.skip[p] = true
	}
}

// read is the server's usage since begin, sampling once more first; own is the part of the
// site database's own backends (PostgreSQL; the rest is the shared processes').
func (m *serverMeter) read() (all, own usage) {
	if m.dialect != "postgres" && m.dialect != "mysql" {
		return usage{}, usage{}
	}
	m.sample(false)
	m.mu.Lock()
	defer m.mu.Unlock()
	for pid, l := range m.last {
		if m.skip[pid] {
			continue
		}
		b := m.base[pid]
		d := usage{l.cpu - b.cpu, l.written - b.written}
		all.cpu += d.cpu
		all.written += d.written
		if m.own[pid] {
			own.cpu += d.cpu
			own.written += d.written
		}
	}
	return all, own
}

// close stops the sampling.
func (m *serverMeter) close() {
	select {
	case <-m.done:
	default:
		close(m.stop)
		<-m.done
	}
}

func (m *serverMeter) sample(first bool) {
	procs, own := m.processes()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, pid := range own {
		m.own[pid] = true
	}
	for _, pid := range procs {
		cpu, err := procCPU(pid)
		if err != nil {
			continue // exited meanwhile
		}
		w, err := procWritten(pid)
		if err != nil {
			continue
		}
		u := usage{cpu, w}
		if _, seen := m.last[pid]; !seen && first {
			m.base[pid] = u
		}
		m.last[pid] = u
	}
}

// processes lists the server processes counted: for PostgreSQL the site database's backends
// (also in own) and the shared processes, for MariaDB/MySQL the server process.
func (m *serverMeter) processes() (out, own []int) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(d + "/comm")
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		switch m.dialect {
		case "mysql":
			if name == "mariadbd" || name == "mysqld" {
				out = append(out, pid)
			}
		case "postgres":
			if name != "postgres" {
				continue
			}
			title, err := os.ReadFile(d + "/cmdline")
			if err != nil {
				continue
			}
			db, backend := pgBackendDB(string(bytes.TrimRight(title, "\x00")))
			if !backend || db == m.dbName {
				out = append(out, pid)
			}
			if backend && db == m.dbName {
				own = append(own, pid)
			}
		}
	}
	return out, own
}

// pgBackendDB reads a PostgreSQL process title: a client backend's is "postgres: [cluster:]
// user database host(port)|[local] state…" and yields its database; any other (the postmaster's
// command line, "postgres: 15/main: checkpointer", …) yields ok false.
func pgBackendDB(title string) (string, bool) {
	rest, ok := strings.CutPrefix(title, "postgres: ")
	if !ok {
		return "", false
	}
	f := strings.Fields(rest)
	if len(f) > 0 && strings.HasSuffix(f[0], ":") { // the cluster name (Debian: "15/main:")
		f = f[1:]
	}
	if len(f) < 3 {
		return "", false
	}
	if host := f[2]; host == "[local]" || (strings.HasSuffix(host, ")") && strings.Contains(host, "(")) {
		return f[1], true
	}
	return "", false
}
