package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// drainResult is one drain: N tasks queued while no worker ran, drained by `svc serve`.
type drainResult struct {
	n    int
	dur  time.Duration // from the banner of `svc serve` to the last task COMPLETED
	rate float64       // tasks/s
	// Per task, from the binary's counters between a scrape once 10 % had completed (or the
	// process's start, when the drain outran the poll) and one at the end (NaN when the binary
	// does not expose them).
	stmts, writeTxs, readTxs float64
	fromStart                bool // the counters were read from the process's start
	workers                  string
	// drainMeter's figures: CPU of the worker and of the database server from the ready line
	// to the last task done; bytes written from the ready line until the worker stopped (0 on
	// a drain whose site served the GET row afterwards); bytes kept (size after − before).
	cpu, dbCPU    time.Duration
	written, kept int64
	// PostgreSQL: the parts of dbCPU and written of the site database's own backends (the
	// rest: WAL writer, checkpointer, background writer).
	dbCPUOwn   time.Duration
	writtenOwn int64
	// PostgreSQL: written is wal + dirty (drainMeter); procWritten is the server processes'
	// write_bytes over the same span (other databases' pages included).
	wal, fpi, dirty, procWritten int64
	noBytes                      bool // written not counted: the GET row ran on the site, or the database refused the means (drainMeter.noBytes)
}

// cpuPerTask is the worker's and the database server's CPU per task.
func (d drainResult) cpuPerTask() time.Duration { return (d.cpu + d.dbCPU) / time.Duration(d.n) }

// drainSettings names a configuration of a drain.
type drainSettings struct {
	label    string
	dialect  string
	twoTurn  bool
	river    bool   // bench/river's worker doing a one-step task's work (riverDrain)
	bin      string // the svc binary when not -bin (-alt-bin)
	settings []string
}

// drain queues o.n tasks through `svc serve --api-only`, stops it, starts `svc serve` and times
// it until every task is COMPLETED. then, when set, runs with the drained site still serving.
func (b *bench) drain(ds drainSettings, then func(s *site, srv *proc, c *client, ids []int64) error) (drainResult, error) {
	n := b.o.n
	if ds.twoTurn {
		n = b.o.twoTurnN
	}
	res := drainResult{n: n, stmts: math.NaN(), writeTxs: math.NaN(), readTxs: math.NaN()}
	s, err := b.newSite(ds.dialect, b.model, ds.settings...)
	if err != nil {
		return res, err
	}
	defer s.close()
	if ds.bin != "" {
		s.bin = ds.bin
	}
	api, err := s.start("api", nil, "serve", "--api-only")
	if err != nil {
		return res, err
	}
	c, err := register(s.base)
	if err != nil {
		api.stop()
		return res, err
	}
	agent, err := c.CreateAgent("Bench", "Answer briefly.", ds.twoTurn)
	if err != nil {
		api.stop()
		return res, err
	}
	var m drainMeter
	if err := m.begin(s); err != nil {
		api.stop()
		return res, err
	}
	t0 := time.Now()
	ids, err := c.createTasks(agent, n, 8)
	api.stop()
	if err != nil {
		return res, err
	}
	b.logf("%s: %d tasks queued in %s", ds.label, n, time.Since(t0).Round(time.Millisecond))
	if err := m.queued(); err != nil {
		return res, err
	}

	srv, err := s.startReady("serve", m.onReady, nil, "serve")
	if err != nil {
		return res, err
	}
	defer srv.stop()
	// The counters are read from a scrape once 10 % have completed (past the start-up), or,
	// when the drain outruns that scrape (a -quick drain of 50 tasks can finish before it
	// answers), from the process's start: its counters start at zero and no task was completed
	// before it (the API-only process runs none), so the start-up's few statements are
	// included then.
	var steady map[string]float64
	var doneSteady int64
	deadline := srv.ready.Add(time.Duration(n)*50*time.Millisecond + time.Minute)
	var end time.Time
	for {
		// Counted through an index on every schema (tasks_finished_idx; a count by status read
		// the whole table once the status index held only QUEUED and FAILED tasks, and a poll
		// every 10 ms then weighed on the drain it measures).
		finished, err := s.count("finished_at IS NOT NULL")
		if err != nil {
			return res, err
		}
		open := int64(n) - finished
		if open == 0 {
			end = time.Now()
			break
		}
		if steady == nil && int64(n)-open >= int64(n)/10 {
			if steady, err = scrape(s.base); err != nil {
				return res, err
			}
			if doneSteady, err = s.count("status = 'COMPLETED'"); err != nil {
				return res, err
			}
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("%s: %d of %d tasks still queued or running after %s: %s", ds.label, open, n, time.Since(srv.ready).Round(time.Second), srv.stderr())
		}
		time.Sleep(10 * time.Millisecond)
	}
	res.dur = end.Sub(srv.ready)
	res.rate = float64(n) / res.dur.Seconds()
	m.drained(srv, &res)
	after, err := scrape(s.base)
	if err != nil {
		return res, err
	}
	done, err := s.count("status = 'COMPLETED'")
	if err != nil {
		return res, err
	}
	if done != int64(n) {
		return res, fmt.Errorf("%s: %d of %d tasks COMPLETED (others FAILED or CANCELLED: see %s)", ds.label, done, n, s.dir)
	}
	before, doneBefore := steady, doneSteady
	if steady == nil || done == doneSteady {
		before, doneBefore, res.fromStart = map[string]float64{}, 0, true
	}
	d := float64(done - doneBefore) // > 0: done == n
	if st, ok := counter(after, before, "svc_db_statements_total"); ok {
		res.stmts = st / d
	}
	if w, ok := counter(after, before, `svc_db_transactions_total{kind="write"}`); ok {
		res.writeTxs = w / d
	}
	if r, ok := counter(after, before, `svc_db_transactions_total{kind="read"}`); ok {
		res.readTxs = r / d
	}
	res.workers = workersOf(after)
	b.logf("%s: drained in %s: %.0f tasks/s, %.1f statements, %.2f write transactions, CPU %s + server %s per task", ds.label,
		res.dur.Round(time.Millisecond), res.rate, res.stmts, res.writeTxs, fmtDur(res.cpu/time.Duration(n)), fmtDur(res.dbCPU/time.Duration(n)))
	if then != nil {
		res.noBytes = true
		if err := then(s, srv, c, ids); err != nil {
			return res, err
		}
	}
	srv.stop()
	if err := m.stopped(srv, &res); err != nil {
		return res, err
	}
	return res, nil
}

// counter is the increase of series name between two scrapes.
func counter(after, before map[string]float64, name string) (float64, bool) {
	a, ok := after[name]
	if !ok {
		return 0, false
	}
	return a - before[name], true
}

// workersOf reads the worker count the binary reports, when it does.
func workersOf(m map[string]float64) string {
	if v, ok := m["svc_worker_slots"]; ok {
		return fmt.Sprintf("%.0f", v)
	}
	return "?"
}

// drains runs rows 1–6: the drains of every configuration, alternated over o.rounds, the raw
// commit beside each SQLite round, and the GET row on the first SQLite site.
func (b *bench) drains() error {
	configs := []drainSettings{}
	if b.want("drain") || b.want("get") {
		configs = append(configs, drainSettings{label: svcSQLite, dialect: "sqlite"})
		if b.o.altWorkers > 0 && b.want("drain") {
			configs = append(configs, drainSettings{label: fmt.Sprintf("one-step, SQLite, max_workers %d", b.o.altWorkers), dialect: "sqlite",
				settings: []string{fmt.Sprintf("SVC_MAX_WORKERS=%d", b.o.altWorkers)}})
		}
	}
	riverOK := b.riverBin != ""
	if riverOK && b.want("drain") {
		configs = append(configs, drainSettings{label: riverSQLite, dialect: "sqlite", river: true})
	}
	if b.o.altBin != "" && b.want("drain") {
		configs = append(configs, drainSettings{label: altLabel(svcSQLite), dialect: "sqlite", bin: b.o.altBin})
	}
	if b.want("twoturn") {
		configs = append(configs, drainSettings{label: "two-turn, SQLite", dialect: "sqlite", twoTurn: true})
	}
	// PostgreSQL, River on PostgreSQL and MariaDB follow each other: River on PostgreSQL is the
	// baseline of both.
	pgOK := b.o.postgresDSN != ""
	if pgOK && b.want("postgres") {
		configs = append(configs, drainSettings{label: svcPostgres, dialect: "postgres"})
	}
	if pgOK && b.o.altBin != "" && b.want("postgres") {
		configs = append(configs, drainSettings{label: altLabel(svcPostgres), dialect: "postgres", bin: b.o.altBin})
	}
	if pgOK && riverOK && (b.want("postgres") || b.want("mysql")) {
		configs = append(configs, drainSettings{label: riverPostgres, dialect: "postgres", river: true})
	}
	mysqlOK := b.o.mysqlDSN != ""
	if mysqlOK && b.want("mysql") {
		configs = append(configs, drainSettings{label: svcMariaDB, dialect: "mysql"})
		if b.o.altBin != "" {
			configs = append(configs, drainSettings{label: altLabel(svcMariaDB), dialect: "mysql", bin: b.o.altBin})
		}
	}
	if mysqlOK && b.want("twoturn") {
		configs = append(configs, drainSettings{label: "two-turn, MariaDB", dialect: "mysql", twoTurn: true})
	}
	if pgOK && b.want("twoturn") {
		configs = append(configs, drainSettings{label: "two-turn, PostgreSQL", dialect: "postgres", twoTurn: true})
	}
	results := make([][]drainResult, len(configs))
	var raw []time.Duration
	var get *getResult
	for r := range b.o.rounds {
		for i, ds := range configs {
			var then func(*site, *proc, *client, []int64) error
			if ds.label == svcSQLite && r == 0 && b.want("get") {
				then = func(s *site, _ *proc, c *client, ids []int64) error {
					g, err := b.getRow(s, c, ids[len(ids)-1])
					get = g
					return err
				}
			}
			if ds.label == svcSQLite {
				d, err := b.rawCommit(2000)
				if err != nil {
					return err
				}
				raw = append(raw, d)
			}
			var res drainResult
			var err error
			if ds.river {
				res, err = b.riverDrain(ds)
			} else {
				res, err = b.drain(ds, then)
			}
			if err != nil {
				return err
			}
			results[i] = append(results[i], res)
		}
	}
	by := func(label string) []drainResult {
		for i, ds := range configs {
			if ds.label == label {
				return results[i]
			}
		}
		return nil
	}
	def := by(svcSQLite)
	if b.want("drain") && def != nil {
		alt := "–"
		if a := by(fmt.Sprintf("one-step, SQLite, max_workers %d", b.o.altWorkers)); a != nil {
			alt = fmt.Sprintf("max_workers %d: %s", b.o.altWorkers, rates(a))
		}
		b.add("one-step tasks drained/s, SQLite, default settings", rates(def), alt+"; fake model alone: "+b.modelRate(), "≥ 1,500")
	}
	rpg := by(riverPostgres)
	if mysqlOK {
		if m := by(svcMariaDB); m != nil {
			base := "–"
			if rpg != nil {
				base = "÷ River on PostgreSQL: " + ratioRates(m, rpg)
			}
			b.add("same, MariaDB, default settings", rates(m), base, "≥ 600; ≥ 0.8× River on PostgreSQL")
		}
	} else if b.want("mysql") || b.want("twoturn") {
		b.note("MariaDB rows skipped: no -mysql-dsn (or SVC_TEST_MYSQL_DSN).")
	}
	if pgOK {
		if p := by(svcPostgres); p != nil {
			base := "–"
			if rpg != nil {
				base = "River on PostgreSQL " + rates(rpg) + "; ratio " + ratioRates(p, rpg)
			}
			b.add("same, PostgreSQL, default settings", rates(p), base, "≥ 1.0× River on PostgreSQL")
		}
	} else if b.want("postgres") || b.want("twoturn") {
		b.note("PostgreSQL rows skipped: no -postgres-dsn (or SVC_TEST_POSTGRES_DSN).")
	}
	if tt := by("two-turn, SQLite"); tt != nil {
		mdb, pdb := "skipped", "skipped"
		if m := by("two-turn, MariaDB"); m != nil {
			mdb = rates(m)
		}
		if p := by("two-turn, PostgreSQL"); p != nil {
			pdb = rates(p)
		}
		b.add("two-turn (one tool call) tasks/s, SQLite / MariaDB / PostgreSQL", rates(tt)+" / "+mdb+" / "+pdb, "–", "≥ 700 / ≥ 250 / –")
	}
	b.riverRows(by)
	b.altRows(by)
	if b.want("drain") && def != nil && len(raw) > 0 {
		var ratios []float64
		for i, d := range def {
			if i < len(raw) {
				ratios = append(ratios, d.dur.Seconds()/float64(d.n)/raw[i].Seconds())
			}
		}
		b.add("wall time per drained one-step task ÷ one raw SQLite commit (same pragmas, same run)",
			fmt.Sprintf("%.0f× (%s)", median(ratios), joinf(ratios, "%.0f")),
			fmt.Sprintf("raw commit %s (%s); per task %s", fmtDur(medianDur(raw)), joinDur(raw), fmtDur(time.Duration(float64(time.Second)/median(ratesOf(def))))), "≤ 20×")
		st := pick(def, func(d drainResult) float64 { return d.stmts })
		if math.IsNaN(median(st)) {
			b.add("statements per one-step task (SQLite)", "not exposed by this binary", "–", "≤ 8 in ≤ 2")
		} else {
			wt := pick(def, func(d drainResult) float64 { return d.writeTxs })
			rt := pick(def, func(d drainResult) float64 { return d.readTxs })
			b.add("statements per one-step task (SQLite)",
				fmt.Sprintf("%.1f in %.2f write transactions (%s; %s)", median(st), median(wt), joinf(st, "%.1f"), joinf(wt, "%.2f")),
				fmt.Sprintf("read transactions %.2f", median(rt)), "≤ 8 in ≤ 2")
		}
	}
	if get != nil {
		b.add("`GET /tasks/{id}` throughput ÷ bare gin + one GORM point read",
			fmt.Sprintf("%.2f (%s)", median(get.ratios), joinf(get.ratios, "%.2f")),
			fmt.Sprintf("service %s req/s, bare %s req/s (%d clients)", joinf(get.svc, "%.0f"), joinf(get.bare, "%.0f"), b.o.getConc), "≥ 0.8")
	}
	for i, ds := range configs {
		for _, r := range results[i] {
			since := ""
			if r.fromStart {
				since = " (counted from the process's start: the drain outran the scrape at 10 %)"
			}
			bytes := fmt.Sprintf("written %s, kept %s per task", kb(float64(r.written)/float64(r.n)), kb(float64(r.kept)/float64(r.n)))
			if ds.dialect == "mysql" {
				bytes = fmt.Sprintf("written %s (mariadbd's write_bytes %s, dirty pages at the end %s), kept %s per task",
					kb(float64(r.written)/float64(r.n)), kb(float64(r.procWritten)/float64(r.n)), kb(float64(r.dirty)/float64(r.n)), kb(float64(r.kept)/float64(r.n)))
			}
			if ds.dialect == "postgres" {
				per := func(v int64) string { return kb(float64(v) / float64(r.n)) }
				bytes = fmt.Sprintf("written %s (WAL %s of which full-page images %s, dirty pages %s; the server processes' write_bytes %s, of the database's backends %s), kept %s per task; server CPU of the database's backends %s per task",
					per(r.written), per(r.wal), per(r.fpi), per(r.dirty), per(r.procWritten), per(r.writtenOwn), per(r.kept), fmtDur(r.dbCPUOwn/time.Duration(r.n)))
			}
			if r.noBytes {
				bytes = fmt.Sprintf("bytes written not counted (the GET row ran on this site, or see the notes), kept %s per task", kb(float64(r.kept)/float64(r.n)))
			}
			if ds.river {
				b.note("%s: %.0f jobs/s (%d in %s, MaxWorkers %s), CPU per job %s (worker %s, server %s), %s",
					ds.label, r.rate, r.n, r.dur.Round(time.Millisecond), r.workers, fmtDur(r.cpuPerTask()),
					fmtDur(r.cpu/time.Duration(r.n)), fmtDur(r.dbCPU/time.Duration(r.n)), bytes)
				continue
			}
			b.note("%s: %.0f tasks/s (%d in %s), %.1f statements, %.2f write / %.2f read transactions per task%s, CPU per task %s (worker %s, server %s), %s",
				ds.label, r.rate, r.n, r.dur.Round(time.Millisecond), r.stmts, r.writeTxs, r.readTxs, since,
				fmtDur(r.cpuPerTask()), fmtDur(r.cpu/time.Duration(r.n)), fmtDur(r.dbCPU/time.Duration(r.n)), bytes)
		}
	}
	return nil
}

func ratesOf(rs []drainResult) []float64 {
	return pick(rs, func(d drainResult) float64 { return d.rate })
}

func rates(rs []drainResult) string {
	r := ratesOf(rs)
	if len(r) == 1 {
		return fmt.Sprintf("%.0f", r[0])
	}
	return fmt.Sprintf("%.0f (%s)", median(r), joinf(r, "%.0f"))
}

func pick(rs []drainResult, f func(drainResult) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianDur(v []time.Duration) time.Duration {
	f := make([]float64, len(v))
	for i, d := range v {
		f[i] = float64(d)
	}
	return time.Duration(median(f))
}

func joinf(v []float64, format string) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(s, ", ")
}

func joinDur(v []time.Duration) string {
	s := make([]string, len(v))
	for i, d := range v {
		s[i] = fmtDur(d)
	}
	return strings.Join(s, ", ")
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	}
}
