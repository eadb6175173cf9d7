package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentsvc/svc/store"
)

// drainMeter measures what a drain costs besides its time: the worker process's CPU from its
// ready line to the last task done, the database server's (serverMeter) over the same span,
// the bytes written from the ready line until the worker has stopped, and the bytes the
// database keeps: its size after the stop less its size before any task was queued.
//
// Bytes written: on SQLite the worker's own (it writes the file itself; write_bytes of
// /proc/<pid>/io, which counts a page of the page cache each time it turns dirty: the WAL's
// frames and the checkpoints' copies), through its exit, whose checkpoint is included. On
// PostgreSQL, where the server's processes also write other databases' pages (a shared
// server), the database's own: the WAL its transactions wrote (pg_walinspect over the drain's
// LSN range: the records touching the database's relations and the other records, commits
// included, of the same transactions; full-page images counted and shown apart) plus the pages
// of its relations still dirty in shared buffers once the worker stopped (pg_buffercache),
// which a checkpoint will write; a CHECKPOINT before the drain leaves none from the queueing.
// On MariaDB/MySQL the server process's write_bytes over the span (redo log and the pages the
// page cleaner flushed meanwhile; other databases' writes included) plus the pages of the
// database's tables still dirty in the buffer pool once the worker stopped.
type drainMeter struct {
	s            *site
	before       int64
	readyCPU     time.Duration
	readyWritten int64
	server       *serverMeter
	startLSN     string    // PostgreSQL: the WAL's insert position at the ready line
	slot         *sql.Conn // PostgreSQL: the session holding the temporary slot that keeps the drain's WAL
	bytesErr     error     // why the bytes written are not measured (noBytes)
}

// begin records the database's size before the tasks are queued.
func (m *drainMeter) begin(s *site) error {
	m.s = s
	if s.dialect == "postgres" {
		for _, ext := range []string{"pg_walinspect", "pg_buffercache"} {
			if _, err := s.db.Exec("CREATE EXTENSION IF NOT EXISTS " + ext); err != nil {
				m.noBytes(fmt.Errorf("CREATE EXTENSION %s: %w", ext, err))
			}
		}
	}
	var err error
	m.before, err = s.size()
	return err
}

// queued is called between queueing and the drain: on PostgreSQL a CHECKPOINT writes out what
// the queueing dirtied, so that the drain's count starts clean.
func (m *drainMeter) queued() error {
	if err := m.s.checkpoint(); err != nil {
		m.noBytes(fmt.Errorf("CHECKPOINT: %w", err))
	}
	return nil
}

// noBytes gives up the bytes written of the drain: PostgreSQL measures them with contrib
// extensions (pg_walinspect, pg_buffercache), CHECKPOINT and a replication slot, which need a
// superuser (or the matching roles); without them the other figures are still measured.
func (m *drainMeter) noBytes(err error) {
	if m.bytesErr == nil {
		m.bytesErr = err
	}
}

// onReady is the worker's ready hook (startReady, startProc).
func (m *drainMeter) onReady(p *proc) {
	m.readyCPU, _ = procCPU(p.cmd.Process.Pid)
	m.readyWritten, _ = procWritten(p.cmd.Process.Pid)
	m.server = newServerMeter(m.s.dialect, m.s.dbName)
	m.excludeBench()
	if m.s.dialect == "postgres" {
		// A temporary physical slot, reserving WAL from now, keeps the drain's WAL from being
		// recycled by a checkpoint (other work's, on a shared server) before pgWritten reads it;
		// it ends with its session, also when the bench dies.
		ctx := context.Background()
		conn, err := m.s.db.Conn(ctx)
		if err != nil {
			return
		}
		if _, err := conn.ExecContext(ctx, "SELECT pg_create_physical_replication_slot($1, true, true)", m.s.dbName); err != nil {
			_ = conn.Close()
			m.noBytes(fmt.Errorf("replication slot: %w", err))
			return
		}
		m.slot = conn
		_ = conn.QueryRowContext(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&m.startLSN)
	}
}

// benchAppName is the application_name of the bench's own PostgreSQL connections.
const benchAppName = "svcbench"

// excludeBench leaves the bench's own PostgreSQL backends (its polls) out of the server's usage.
func (m *drainMeter) excludeBench() {
	if m.s.dialect != "postgres" {
		return
	}
	rows, err := m.s.db.Query("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1", benchAppName)
	if err != nil {
		return
	}
	defer rows.Close()
	var pids []int
	for rows.Next() {
		var p int
		if rows.Scan(&p) == nil {
			pids = append(pids, p)
		}
	}
	m.server.exclude(pids)
}

// drained records the CPU times once every task is done.
func (m *drainMeter) drained(p *proc, res *drainResult) {
	cpu, _ := procCPU(p.cmd.Process.Pid)
	res.cpu = cpu - m.readyCPU
	m.excludeBench()
	all, own := m.server.read()
	res.dbCPU, res.dbCPUOwn = all.cpu, own.cpu
}

// stopped records the bytes written and kept once the worker has exited.
func (m *drainMeter) stopped(p *proc, res *drainResult) error {
	defer m.server.close()
	switch m.s.dialect {
	case "sqlite":
		res.written = p.written() - m.readyWritten
	case "postgres":
		var err error
		if m.bytesErr == nil {
			err = m.pgWritten(res)
		}
		if m.slot != nil {
			_, _ = m.slot.ExecContext(context.Background(), "SELECT pg_drop_replication_slot($1)", m.s.dbName)
			_ = m.slot.Raw(func(any) error { return driver.ErrBadConn }) // end the session with the slot
			_ = m.slot.Close()
		}
		if err != nil {
			m.noBytes(err)
		}
		if m.bytesErr != nil {
			res.noBytes = true
			m.s.b.once("PostgreSQL bytes written not measured: %v", m.bytesErr)
		}
		all, own := m.server.read()
		res.procWritten, res.writtenOwn = all.written, own.written
	default:
		all, _ := m.server.read()
		var dirty int64
		// The pages of the database's tables still dirty in InnoDB's buffer pool: the page
		// cleaner writes them later (a scan of the pool's descriptors, outside the timed span).
		if err := m.s.db.QueryRow("SELECT COUNT(*) * @@innodb_page_size FROM information_schema.INNODB_BUFFER_PAGE WHERE TABLE_NAME LIKE ? AND OLDEST_MODIFICATION > 0",
			"`"+m.s.dbName+"`.%").Scan(&dirty); err != nil {
			res.noBytes = true
			m.s.b.once("MariaDB bytes written not measured (information_schema.INNODB_BUFFER_PAGE needs the PROCESS privilege): %v", err)
		}
		res.procWritten, res.dirty = all.written, dirty
		res.written = all.written + dirty
	}
	after, err := m.s.size()
	if err != nil {
		return err
	}
	res.kept = after - m.before
	return nil
}

// pgWritten sets res.written (WAL + dirty pages), res.wal, res.fpi and res.dirty of the site's
// PostgreSQL database since the ready line.
func (m *drainMeter) pgWritten(res *drainResult) error {
	if m.startLSN == "" {
		return fmt.Errorf("no WAL position or slot at the ready line (pg_create_physical_replication_slot)")
	}
	var oid int64
	if err := m.s.db.QueryRow("SELECT oid FROM pg_database WHERE datname = current_database()").Scan(&oid); err != nil {
		return err
	}
	var dirty int64
	if err := m.s.db.QueryRow("SELECT COUNT(*) * current_setting('block_size')::bigint FROM pg_buffercache WHERE isdirty AND reldatabase = $1", oid).Scan(&dirty); err != nil {
		return fmt.Errorf("dirty buffers: %w", err)
	}
	// Records of the database's relations carry "rel <spc>/<db>/<rel>" in block_ref; a
	// transaction's commit has none and is found by its xid.
	like := fmt.Sprintf("%%/%d/%%", oid)
	q := `WITH r AS (SELECT xid::text AS xid, record_length, fpi_length, block_ref FROM pg_get_wal_records_info($1::pg_lsn, pg_current_wal_flush_lsn())),
		mine AS (SELECT DISTINCT xid FROM r WHERE block_ref LIKE $2 AND xid <> '0')
		SELECT COALESCE(SUM(record_length), 0), COALESCE(SUM(fpi_length), 0) FROM r WHERE block_ref LIKE $2 OR xid IN (SELECT xid FROM mine)`
	if err := m.s.db.QueryRow(q, m.startLSN, like).Scan(&res.wal, &res.fpi); err != nil {
		return fmt.Errorf("WAL of the drain: %w", err)
	}
	res.dirty = dirty
	res.written = res.wal + dirty
	return nil
}

// checkpoint runs CHECKPOINT on a PostgreSQL site (nothing on the others).
func (s *site) checkpoint() error {
	if s.dialect != "postgres" {
		return nil
	}
	_, err := s.admin.Exec("CHECKPOINT")
	return err
}

// size is the bytes the site's database takes: SQLite, the file's pages in use (less the free
// list, which migrations leave behind and later inserts reuse) and its WAL after a checkpoint
// (TRUNCATE); PostgreSQL, pg_database_size; MariaDB/MySQL, the data and index
// lengths of the tables after ANALYZE TABLE.
func (s *site) size() (int64, error) {
	switch s.dialect {
	case "sqlite":
		if _, err := os.Stat(s.sqlite); os.IsNotExist(err) {
			return 0, nil
		}
		_, _ = s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)") // best effort: a busy writer leaves the WAL, counted below
		var pages, free, size int64
		if err := s.db.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
			return 0, err
		}
		if err := s.db.QueryRow("PRAGMA freelist_count").Scan(&free); err != nil {
			return 0, err
		}
		if err := s.db.QueryRow("PRAGMA page_size").Scan(&size); err != nil {
			return 0, err
		}
		n := (pages - free) * size
		if st, err := os.Stat(s.sqlite + "-wal"); err == nil {
			n += st.Size()
		}
		return n, nil
	case "postgres":
		var n int64
		err := s.db.QueryRow("SELECT pg_database_size(current_database())").Scan(&n)
		return n, err
	case "mysql":
		rows, err := s.db.Query("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'")
		if err != nil {
			return 0, err
		}
		var tables []string
		for rows.Next() {
			var t string
			if err := rows.Scan(&t); err != nil {
				_ = rows.Close()
				return 0, err
			}
			tables = append(tables, t)
		}
		if err := rows.Close(); err != nil {
			return 0, err
		}
		for _, t := range tables {
			r, err := s.db.Query("ANALYZE TABLE `" + t + "`")
			if err != nil {
				return 0, err
			}
			_ = r.Close()
		}
		var n sql.NullInt64
		err = s.db.QueryRow("SELECT SUM(data_length + index_length) FROM information_schema.tables WHERE table_schema = DATABASE()").Scan(&n)
		return n.Int64, err
	}
	return 0, fmt.Errorf("dialect %q", s.dialect)
}

// buildRiver compiles bench/river (its own module, so River stays out of the service's go.mod)
// into dir.
func buildRiver(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "river-worker")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(root, "bench", "river")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build bench/river: %v\n%s", err, out)
	}
	return bin, nil
}

// riverDrain is drain's counterpart for River: a fresh database of the same kind, River's
// migrations and its answer table (`river-worker migrate`), N jobs queued (`insert`, which
// exits), then `river-worker work` timed from its ready line until no job is left that is not
// completed; every job must be completed and have stored its answer.
func (b *bench) riverDrain(ds drainSettings) (drainResult, error) {
	n := b.o.n
	res := drainResult{n: n, stmts: math.NaN(), writeTxs: math.NaN(), readTxs: math.NaN(), workers: strconv.Itoa(b.o.riverWork)}
	s, err := b.newSite(ds.dialect, b.model)
	if err != nil {
		return res, err
	}
	defer s.close()
	dsn := s.dsn
	if ds.dialect == "sqlite" {
		if dsn, err = store.SQLiteDSN(s.sqlite); err != nil { // the service's pragmas
			return res, err
		}
	}
	river := func(args ...string) *exec.Cmd {
		c := exec.Command(b.riverBin, append([]string{"-driver", ds.dialect, "-dsn", dsn}, args...)...)
		c.Dir = s.dir
		c.Env = cleanEnv()
		return c
	}
	if out, err := river("migrate").CombinedOutput(); err != nil {
		return res, fmt.Errorf("%s: migrate: %v: %s", ds.label, err, out)
	}
	var m drainMeter
	if err := m.begin(s); err != nil {
		return res, err
	}
	t0 := time.Now()
	if out, err := river("-n", strconv.Itoa(n), "insert").CombinedOutput(); err != nil {
		return res, fmt.Errorf("%s: insert: %v: %s", ds.label, err, out)
	}
	b.logf("%s: %d jobs queued in %s", ds.label, n, time.Since(t0).Round(time.Millisecond))
	if err := m.queued(); err != nil {
		return res, err
	}
	w, err := startProc("river", river("-model", b.model.BaseURL(), "-workers", strconv.Itoa(b.o.riverWork), "work"), m.onReady)
	if err != nil {
		return res, err
	}
	defer w.stop()
	deadline := w.ready.Add(time.Duration(n)*50*time.Millisecond + time.Minute)
	var end time.Time
	for {
		var open int64
		if err := s.db.QueryRow("SELECT COUNT(*) FROM river_job WHERE state <> 'completed'").Scan(&open); err != nil {
			return res, err
		}
		if open == 0 {
			end = time.Now()
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("%s: %d of %d jobs not completed after %s: %s", ds.label, open, n, time.Since(w.ready).Round(time.Second), w.stderr())
		}
		time.Sleep(10 * time.Millisecond)
	}
	res.dur = end.Sub(w.ready)
	res.rate = float64(n) / res.dur.Seconds()
	m.drained(w, &res)
	var answers int64
	if err := s.db.QueryRow("SELECT COUNT(*) FROM river_answer").Scan(&answers); err != nil {
		return res, err
	}
	if answers != int64(n) {
		return res, fmt.Errorf("%s: %d answers stored for %d jobs", ds.label, answers, n)
	}
	w.stop()
	if err := m.stopped(w, &res); err != nil {
		return res, err
	}
	b.logf("%s: drained in %s: %.0f jobs/s, CPU %s + server %s per job", ds.label, res.dur.Round(time.Millisecond), res.rate,
		fmtDur(res.cpu/time.Duration(n)), fmtDur(res.dbCPU/time.Duration(n)))
	return res, nil
}

// The labels of the drains the River rows compare.
const (
	svcSQLite     = "one-step, SQLite, default settings"
	svcPostgres   = "one-step, PostgreSQL, default settings"
	svcMariaDB    = "one-step, MariaDB, default settings"
	riverSQLite   = "River, SQLite (same work)"
	riverPostgres = "River, PostgreSQL (same work)"
)

// ratios divides f of a by f of b round by round (the same round: alternated).
func ratios(a, b []drainResult, f func(drainResult) float64) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		out = append(out, f(a[i])/f(b[i]))
	}
	return out
}

// ratioRates is the median of the rounds' rate ratios a ÷ b, with each round's.
func ratioRates(a, b []drainResult) string {
	r := ratios(a, b, func(d drainResult) float64 { return d.rate })
	return fmt.Sprintf("%.2f× (%s)", median(r), joinf(r, "%.2f"))
}

func cpuMs(d drainResult) float64 { return float64(d.cpuPerTask()) / float64(time.Millisecond) }

// cpus is the median CPU per task in ms, with each round's and the worker/server split.
func cpus(rs []drainResult) string {
	w := pick(rs, func(d drainResult) float64 { return float64(d.cpu) / float64(d.n) / float64(time.Millisecond) })
	s := pick(rs, func(d drainResult) float64 { return float64(d.dbCPU) / float64(d.n) / float64(time.Millisecond) })
	return fmt.Sprintf("%.2f ms (%s; worker %.2f + server %.2f)", median(pick(rs, cpuMs)), joinf(pick(rs, cpuMs), "%.2f"), median(w), median(s))
}

func writtenKB(d drainResult) float64 { return float64(d.written) / float64(d.n) / 1024 }
func keptKB(d drainResult) float64    { return float64(d.kept) / float64(d.n) / 1024 }

// bytesPer is "written / kept" per task in KB (medians, with each round's).
func bytesPer(rs []drainResult) string {
	w, k := pick(rs, writtenKB), pick(rs, keptKB)
	return fmt.Sprintf("%.1f KB / %.2f KB (%s / %s)", median(w), median(k), joinf(w, "%.1f"), joinf(k, "%.2f"))
}

// riverRows adds the comparison with River (issue 28 items 6 and 8): rate, CPU per task and
// bytes per task of the service against River doing the same work on the same database in the
// same rounds; MariaDB against River on PostgreSQL (River has no MySQL driver), its bytes row
// also without River.
func (b *bench) riverRows(by func(string) []drainResult) {
	rs, rp := by(riverSQLite), by(riverPostgres)
	ss, sp, sm := by(svcSQLite), by(svcPostgres), by(svcMariaDB)
	if ss != nil && rs != nil {
		base := "River on SQLite " + rates(rs)
		if rp != nil {
			base += "; service ÷ River on PostgreSQL " + ratioRates(ss, rp)
		}
		b.add("one-step drained/s ÷ River (same work, same run), SQLite", ratioRates(ss, rs), base, "≥ 1.0×")
		c := ratios(ss, rs, cpuMs)
		b.add("CPU per one-step task, SQLite (the worker; the database is in it)", cpus(ss),
			fmt.Sprintf("River on SQLite %s; ratio %.2f× (%s)", cpus(rs), median(c), joinf(c, "%.2f")), "≤ 1.0× River")
	}
	if sp != nil && rp != nil {
		c := ratios(sp, rp, cpuMs)
		b.add("CPU per one-step task, PostgreSQL (worker + the database's server processes)", cpus(sp),
			fmt.Sprintf("River on PostgreSQL %s; ratio %.2f× (%s)", cpus(rp), median(c), joinf(c, "%.2f")), "≤ 1.0× River")
	}
	if sm != nil && rp != nil {
		c := ratios(sm, rp, cpuMs)
		b.add("CPU per one-step task, MariaDB (worker + the whole mariadbd)", cpus(sm),
			fmt.Sprintf("River on PostgreSQL %s; ratio %.2f× (%s)", cpus(rp), median(c), joinf(c, "%.2f")), "–")
	}
	bytesRow := func(db string, svc, river []drainResult) {
		// Compare the rounds both counted (the first SQLite drain may have served the GET row).
		var s2, r2 []drainResult
		for i, r := range svc {
			if !r.noBytes && (river == nil || (i < len(river) && !river[i].noBytes)) {
				s2 = append(s2, r)
				if river != nil {
					r2 = append(r2, river[i])
				}
			}
		}
		if len(s2) == 0 {
			return
		}
		if river == nil {
			b.add("bytes written / kept per one-step task, "+db, bytesPer(s2), "River: no driver for this database", "–")
			return
		}
		w, k := ratios(s2, r2, writtenKB), ratios(s2, r2, keptKB)
		b.add("bytes written / kept per one-step task, "+db, bytesPer(s2),
			fmt.Sprintf("River %s; ratios %.1f× / %.1f×", bytesPer(r2), median(w), median(k)), "≤ 2× River")
	}
	if ss != nil && rs != nil {
		bytesRow("SQLite", ss, rs)
	}
	if sp != nil && rp != nil {
		bytesRow("PostgreSQL", sp, rp)
	}
	if sm != nil {
		bytesRow("MariaDB", sm, nil)
	}
}

// altLabel is the label of -alt-bin's drain of the configuration label.
func altLabel(label string) string { return label + ", -alt-bin" }

// altRows compares -alt-bin's one-step drains with -bin's, round by round.
func (b *bench) altRows(by func(string) []drainResult) {
	for _, l := range []string{svcSQLite, svcPostgres, svcMariaDB} {
		a, base := by(altLabel(l)), by(l)
		if a == nil || base == nil {
			continue
		}
		c := ratios(a, base, cpuMs)
		b.add(l+": -alt-bin ÷ -bin", fmt.Sprintf("rate %s; CPU per task %.2f× (%s)", ratioRates(a, base), median(c), joinf(c, "%.2f")),
			fmt.Sprintf("-bin %s tasks/s, -alt-bin %s tasks/s; CPU per task %s vs %s", rates(base), rates(a), cpus(base), cpus(a)), "–")
	}
}
