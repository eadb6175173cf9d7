package main

import (
	"bufio"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// memoryAndHub runs rows 7 and 8: the idle RSS of `svc serve` on a fresh SQLite site with the
// default settings (beside a minimal Go HTTP server's), the hub on that same process, then the
// RSS per in-flight task on a second site.
func (b *bench) memoryAndHub() error {
	settle := 5 * time.Second
	if b.o.quick {
		settle = time.Second
	}
	// The default settings, but for the per-user cap on push subscriptions (event_streams_per_user):
	// the hub row subscribes one user -subscribers times.
	s, err := b.newSite("sqlite", b.model, fmt.Sprintf("SVC_EVENT_STREAMS_PER_USER=%d", b.o.subscribers+1))
	if err != nil {
		return err
	}
	defer s.close()
	srv, err := s.start("serve", nil, "serve")
	if err != nil {
		return err
	}
	defer srv.stop()
	time.Sleep(settle)
	idle, err := rss(srv.cmd.Process.Pid)
	if err != nil {
		return err
	}
	idleAnon, err := anonRSS(srv.cmd.Process.Pid)
	if err != nil {
		return err
	}
	m0, err := scrape(s.base)
	if err != nil {
		return err
	}
	floor, err := b.minimalRSS(settle)
	if err != nil {
		return err
	}
	b.logf("idle RSS %s (Go heap in use %s, stacks %s); minimal Go HTTP server %s", mb(idle), mb(int64(m0["go_memstats_heap_inuse_bytes"])), mb(int64(m0["go_memstats_stack_inuse_bytes"])), mb(floor))
	var inflight string
	if b.want("rss") {
		if inflight, err = b.inflightRSS(); err != nil {
			return err
		}
		b.add("idle RSS / per in-flight task", fmt.Sprintf("%s (anonymous %s, file %s) / %s", mb(idle), mb(idleAnon), mb(idle-idleAnon), inflight),
			fmt.Sprintf("minimal Go net/http server %s", mb(floor)), "≤ 50 MB / ≤ 60 KB")
		b.note("idle `svc serve` (fresh SQLite, default settings, %s after start): RSS %s, of which anonymous %s and file-backed %s (the executable's pages); Go heap in use %s, heap released to the OS %s, stacks %s, %0.f goroutines",
			settle, mb(idle), mb(idleAnon), mb(idle-idleAnon), mb(int64(m0["go_memstats_heap_inuse_bytes"])), mb(int64(m0["go_memstats_heap_released_bytes"])),
			mb(int64(m0["go_memstats_stack_inuse_bytes"])), m0["go_goroutines"])
	}
	if b.want("hub") {
		if err := b.hub(s); err != nil {
			return err
		}
	}
	return nil
}

// inflightRSS holds o.inflight tasks in flight at once (the fake model answers none until
// released) on a site whose max_workers and pool allow them, and returns (RSS in flight − RSS
// before) / tasks.
func (b *bench) inflightRSS() (string, error) {
	n := b.o.inflight
	s, err := b.newSite("sqlite", b.model, fmt.Sprintf("SVC_MAX_WORKERS=%d", n), fmt.Sprintf("SVC_DB_MAX_OPEN_CONNS=%d", n))
	if err != nil {
		return "", err
	}
	defer s.close()
	// The account and agent are made on an API-only process first, so that the measured process
	// never hashes a password (argon2id's 64 MiB would dwarf what the tasks cost); the session
	// stays valid across the restart (sessions live in the database).
	api, err := s.start("api", nil, "serve", "--api-only")
	if err != nil {
		return "", err
	}
	c, err := register(s.base)
	if err != nil {
		api.stop()
		return "", err
	}
	agent, err := c.CreateAgent("Bench", "Answer briefly.", false)
	api.stop()
	if err != nil {
		return "", err
	}
	srv, err := s.start("serve", nil, "serve")
	if err != nil {
		return "", err
	}
	defer srv.stop()
	// A first task warms what a run loads once (model client, driver, caches).
	if _, err := c.CreateTask(agent, "warm up"); err != nil {
		return "", err
	}
	if err := waitCount(s, "status = 'COMPLETED'", 1, 30*time.Second); err != nil {
		return "", err
	}
	time.Sleep(2 * time.Second)
	before, err := anonRSS(srv.cmd.Process.Pid)
	if err != nil {
		return "", err
	}
	m0, err := scrape(s.base)
	if err != nil {
		return "", err
	}
	b.model.hold()
	defer b.model.release()
	if _, err := c.createTasks(agent, n, 8); err != nil {
		return "", err
	}
	deadline := time.Now().Add(60 * time.Second)
	for b.model.open.Load() < int64(n) {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("in-flight RSS: only %d of %d model calls open after 60s", b.model.open.Load(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second)
	during, err := anonRSS(srv.cmd.Process.Pid)
	if err != nil {
		return "", err
	}
	m1, err := scrape(s.base)
	if err != nil {
		return "", err
	}
	b.model.release()
	if err := waitCount(s, "status = 'COMPLETED'", int64(n)+1, 60*time.Second); err != nil {
		return "", err
	}
	per := float64(during-before) / float64(n)
	goPer := (m1["go_memstats_heap_inuse_bytes"] + m1["go_memstats_stack_inuse_bytes"] - m0["go_memstats_heap_inuse_bytes"] - m0["go_memstats_stack_inuse_bytes"]) / float64(n)
	b.note("in flight: %d tasks held by the model at once (max_workers and db_max_open_conns %d): anonymous RSS %s → %s, %s per task; Go heap + stacks in use %s per task (heap %s, stacks %s); goroutines %.0f → %.0f",
		n, n, mb(before), mb(during), kb(per), kb(goPer),
		kb((m1["go_memstats_heap_inuse_bytes"]-m0["go_memstats_heap_inuse_bytes"])/float64(n)),
		kb((m1["go_memstats_stack_inuse_bytes"]-m0["go_memstats_stack_inuse_bytes"])/float64(n)),
		m0["go_goroutines"], m1["go_goroutines"])
	return kb(per), nil
}

func waitCount(s *site, where string, want int64, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		n, err := s.count(where)
		if err != nil {
			return err
		}
		if n >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d tasks with %s after %s, want %d", n, where, bound, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// subscriber is one open subscription of the bench to the hub.
type subscriber struct {
	mu   sync.Mutex
	lat  []float64 // delivery latencies of COMPLETED task events, ms
	seen atomic.Int64
}

// hub runs row 8 on the serving site: one subscriber, o.hubEvents events (one task completed
// per o.hubPeriod, each pushed to user/{id}/tasks), then o.subscribers subscribers and the same
// events. Latency: arrival − the event's updated_at (the commit of the step that completed the
// task; the push follows the commit). Memory: (RSS with the subscribers − RSS before) / count.
func (b *bench) hub(s *site) error {
	c, err := register(s.base)
	if err != nil {
		return err
	}
	agent, err := c.CreateAgent("Hub", "Answer briefly.", false)
	if err != nil {
		return err
	}
	var grant struct {
		Data struct {
			HubURL string `json:"hub_url"`
			Token  string `json:"token"`
		} `json:"data"`
	}
	topic := fmt.Sprintf("user/%d/tasks", c.UserID)
	if err := c.Do(http.MethodGet, "/sse/authorize?topic="+url.QueryEscape(topic), nil, 200, &grant); err != nil {
		return err
	}
	u, err := url.Parse(grant.Data.HubURL)
	if err != nil {
		return err
	}
	u.RawQuery = url.Values{"topic": {topic}}.Encode()
	var connsMu sync.Mutex
	var conns []net.Conn
	defer func() {
		connsMu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		connsMu.Unlock()
	}()
	// open subscribes over a bare TCP connection (one goroutine per subscriber, no HTTP client
	// machinery: the bench shares the cores with the service, so its side must cost little).
	open := func(sub *subscriber) error {
		conn, err := net.DialTimeout("tcp", u.Host, 30*time.Second)
		if err != nil {
			return err
		}
		connsMu.Lock()
		conns = append(conns, conn)
		connsMu.Unlock()
		if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", u.RequestURI(), u.Host, grant.Data.Token); err != nil {
			return err
		}
		br := bufio.NewReaderSize(conn, 4<<10)
		status, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("subscribe: %w", err)
		}
		if !strings.HasPrefix(status, "HTTP/1.1 200") {
			return fmt.Errorf("subscribe: %s", strings.TrimSpace(status))
		}
		chunked := false
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return fmt.Errorf("subscribe: %w", err)
			}
			line = strings.TrimRight(line, "\r\n")
			if line == "" {
				break
			}
			if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Transfer-Encoding") && strings.Contains(strings.ToLower(v), "chunked") {
				chunked = true
			}
		}
		body := br
		if chunked { // a binary that streams through net/http's ResponseWriter
			body = bufio.NewReaderSize(httputil.NewChunkedReader(br), 4<<10)
		}
		go func() {
			for {
				line, err := body.ReadString('\n')
				if err != nil {
					return
				}
				data, ok := strings.CutPrefix(line, "data: ")
				if !ok {
					continue
				}
				now := time.Now()
				sub.seen.Add(1)
				if parseField(data, "status") != "COMPLETED" {
					continue
				}
				at, err := time.Parse(time.RFC3339Nano, parseField(data, "updated_at"))
				if err != nil {
					continue
				}
				sub.mu.Lock()
				sub.lat = append(sub.lat, float64(now.Sub(at))/float64(time.Millisecond))
				sub.mu.Unlock()
			}
		}()
		return nil
	}
	publish := func(k int) error {
		t := time.NewTicker(b.o.hubPeriod)
		defer t.Stop()
		for i := range k {
			if _, err := c.CreateTask(agent, fmt.Sprintf("hub event %d", i)); err != nil {
				return err
			}
			<-t.C
		}
		time.Sleep(2 * time.Second) // the last deliveries
		return nil
	}
	collect := func(subs []*subscriber) (lat []float64, events int64) {
		for _, sub := range subs {
			sub.mu.Lock()
			lat = append(lat, sub.lat...)
			sub.lat = sub.lat[:0]
			sub.mu.Unlock()
			events += sub.seen.Swap(0)
		}
		return lat, events
	}

	// Baseline: one subscriber.
	one := &subscriber{}
	if err := open(one); err != nil {
		return err
	}
	time.Sleep(200 * time.Millisecond)
	if err := publish(b.o.hubEvents); err != nil {
		return err
	}
	lat1, ev1 := collect([]*subscriber{one})

	// Many subscribers.
	time.Sleep(time.Second)
	before, err := anonRSS(s.pid())
	if err != nil {
		return err
	}
	m0, err := scrape(s.base)
	if err != nil {
		return err
	}
	subs := make([]*subscriber, b.o.subscribers)
	var next atomic.Int64
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	t0 := time.Now()
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(subs) {
					return
				}
				subs[i] = &subscriber{}
				if err := open(subs[i]); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		return fmt.Errorf("%d of %d subscriptions failed (file limit %d): %v", f, len(subs), fileLimit(), firstErr.Load())
	}
	b.logf("hub: %d subscribers open in %s", len(subs), time.Since(t0).Round(time.Millisecond))
	time.Sleep(3 * time.Second)
	during, err := anonRSS(s.pid())
	if err != nil {
		return err
	}
	m1, err := scrape(s.base)
	if err != nil {
		return err
	}
	cpu0, self0 := cpuTime(s.pid()), selfCPU()
	if err := publish(b.o.hubEvents); err != nil {
		return err
	}
	cpu1, self1 := cpuTime(s.pid()), selfCPU()
	lat, ev := collect(subs)

	n := float64(len(subs))
	want := int64(len(subs)) * int64(b.o.hubEvents)
	b.add(fmt.Sprintf("embedded SSE hub, %d subscribers, one event per %s", len(subs), b.o.hubPeriod),
		fmt.Sprintf("p99 %.0f ms, %s each", percentile(lat, 99), kb(float64(during-before)/n)),
		fmt.Sprintf("1 subscriber: p99 %.1f ms", percentile(lat1, 99)), "p99 ≤ 100 ms, ≤ 16 KB each")
	b.note("hub, %d subscribers (%.0f per the binary's svc_sse_subscribers): %d of %d COMPLETED events delivered (%d events in all), latency p50 %.1f / p90 %.1f / p99 %.1f / max %.1f ms; anonymous RSS %s → %s; Go heap in use %s, stacks %s per subscriber; goroutines %.0f → %.0f",
		len(subs), m1[`svc_sse_subscribers{stream="hub"}`], len(lat), want, ev, percentile(lat, 50), percentile(lat, 90), percentile(lat, 99), percentile(lat, 100),
		mb(before), mb(during), kb((m1["go_memstats_heap_inuse_bytes"]-m0["go_memstats_heap_inuse_bytes"])/n),
		kb((m1["go_memstats_stack_inuse_bytes"]-m0["go_memstats_stack_inuse_bytes"])/n), m0["go_goroutines"], m1["go_goroutines"])
	if ev > 0 {
		b.note("hub CPU while publishing to %d subscribers: the service %s, the bench's subscribers %s (%.1f / %.1f µs per delivered event; the publishing tasks' own work included in the service's)",
			len(subs), (cpu1 - cpu0).Round(time.Millisecond), (self1 - self0).Round(time.Millisecond),
			float64(cpu1-cpu0)/float64(ev)/1e3, float64(self1-self0)/float64(ev)/1e3)
	}
	b.note("hub, 1 subscriber: %d of %d COMPLETED events (%d in all), latency p50 %.1f / p99 %.1f / max %.1f ms",
		len(lat1), b.o.hubEvents, ev1, percentile(lat1, 50), percentile(lat1, 99), percentile(lat1, 100))
	if int64(len(lat)) < want {
		b.note("hub: %d COMPLETED events were not delivered to some subscriber (or arrived after the 2 s the bench waits)", want-int64(len(lat)))
	}
	return nil
}

func (s *site) pid() int { return s.serving.cmd.Process.Pid }

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func mb(v int64) string { return fmt.Sprintf("%.1f MB", float64(v)/(1<<20)) }
func kb(v float64) string {
	return fmt.Sprintf("%.1f KB", v/1024)
}

// cpuTime is the user + system CPU time a process used so far (/proc/<pid>/stat; 0 when it
// cannot be read).
func cpuTime(pid int) time.Duration {
	d, _ := procCPU(pid)
	return d
}

// selfCPU is the CPU time this process used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
