package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/tools"
)

// Defaults of Options.
const (
	DefaultCallTimeout = 30 * time.Second
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxProcessesPerServer and DefaultMaxProcesses bound the stdio processes: one runs
	// per distinct set of secret values, and each user may set their own.
	DefaultMaxProcessesPerServer = 4
	DefaultMaxProcesses          = 32
)

// clientName and clientVersion identify the service to MCP servers.
const (
	clientName    = "agentsvc"
	clientVersion = "1.0.0"
)

// Options configure a Manager.
type Options struct {
	// Logger receives server lifecycle events and servers' stderr lines; nil means
	// slog.Default(). Secret values are never logged.
	Logger *slog.Logger
	// CallTimeout bounds one tool call, one listing and one connection handshake (the service's
	// tool_http_timeout); 0 means DefaultCallTimeout.
	CallTimeout time.Duration
	// RefreshInterval, when positive, re-lists every server's tools that often and updates the
	// registry given to Sync, for servers that do not send notifications/tools/list_changed.
	RefreshInterval time.Duration
	// IdleTimeout closes a connection unused for that long (a stdio process per distinct set of
	// secret values would otherwise accumulate); 0 means DefaultIdleTimeout, negative never.
	IdleTimeout time.Duration
	// MaxProcessesPerServer and MaxProcesses bound the stdio processes of one server and of all
	// servers (HTTP connections are not processes and are not counted); 0 means the defaults,
	// negative no bound. Beyond a bound the least recently used idle process is stopped for the
	// new one; when every process in the way is busy the call waits up to BusyWait for one to
	// become idle, then fails with a tool error saying the server is busy.
	MaxProcessesPerServer int
	MaxProcesses          int
	// BusyWait is how long a call waits for a process slot; 0 means half of CallTimeout (the
	// wait and the call share CallTimeout, so the call keeps the other half).
	BusyWait time.Duration
	// Net screens the connections to HTTP servers (SSRF): every request goes through
	// netguard.GuardedTransport(Net) unless its host is in AllowedHosts.
	Net netguard.Options
	// AllowedHosts are host names or IP literals (as in the URL, without port) of HTTP servers
	// the caller trusts although they may be private or loopback (an administrator's MCP
	// server on the local network). Their connections are not screened.
	AllowedHosts []string
	// ListSecrets gives the secret values used to list a server's tools (the administrator's
	// global settings, say); nil or an empty map lists without secrets. Calls use the secrets of
	// their own settings cascade.
	ListSecrets func(ServerConfig) map[string]string
}

// Manager owns the connections to the declared MCP servers and the tools registered for them.
// Build one per service (NewManager), declare servers (Add), Sync into the service's registry,
// and Close on shutdown. It is safe for concurrent use.
type Manager struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	closed  bool
	servers map[string]*server // by ServerConfig.id()
	conns   map[string]*conn   // by server id + secrets digest
	reg     *tools.Registry    // the registry of the last Sync, refreshed in the background
	// idled is closed (and replaced) whenever a stdio connection becomes idle or goes away, to
	// wake the calls waiting for a process slot.
	idled chan struct{}

	changed chan string
	done    chan struct{}
	wg      sync.WaitGroup
}

// server is a declared server and the tools registered for it.
type server struct {
	cfg ServerConfig
	// syncMu makes one listing and registry update of the server run at a time, so an older
	// listing is never applied over a newer one.
	syncMu     sync.Mutex
	registered map[string]*Tool // by class; guarded by syncMu

	// home is the server's private folder (HOME, TMPDIR, and the working directory when the
	// declaration names none), made at the first start and removed with the server (removed).
	homeMu  sync.Mutex
	home    string
	removed bool
}

// conn is one session with a server, for one set of secret values.
type conn struct {
	key      string
	srv      *server
	ready    chan struct{} // closed when the handshake ended
	cs       *sdk.ClientSession
	err      error
	dead     atomic.Bool
	lastUsed atomic.Int64 // unix nanoseconds
	inUse    int          // callers holding the connection (session to release); guarded by Manager.mu
}

// NewManager returns a Manager with no servers and starts its background loop (periodic refresh,
// list-change notifications, idle connections), which Close stops. No server is contacted until
// a listing or a call needs it.
func NewManager(opts Options) *Manager {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxProcessesPerServer == 0 {
		opts.MaxProcessesPerServer = DefaultMaxProcessesPerServer
	}
	if opts.MaxProcesses == 0 {
		opts.MaxProcesses = DefaultMaxProcesses
	}
	if opts.BusyWait <= 0 {
		opts.BusyWait = opts.CallTimeout / 2
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	m := &Manager{opts: opts, log: log.With("component", "mcp"), servers: map[string]*server{},
		conns: map[string]*conn{}, idled: make(chan struct{}), changed: make(chan string, 64), done: make(chan struct{})}
	m.wg.Add(1)
	go m.background()
	return m
}

// Add declares a server. It fails with an error wrapping svcerr.ErrInvalid for a declaration
// that breaks a rule (see ServerConfig.Validate), svcerr.ErrConflict when the plugin already
// declares a server of that name (or one whose tool names would clash with it), and
// svcerr.ErrUnavailable after Close. Its tools are registered by the next Sync.
func (m *Manager) Add(cfg ServerConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.Args = slices.Clone(cfg.Args)
	cfg.Secrets = slices.Clone(cfg.Secrets)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return svcerr.New(svcerr.ErrUnavailable, "mcp: the manager is closed")
	}
	for _, s := range m.servers {
		if s.cfg.Slug == cfg.Slug && (s.cfg.Name == cfg.Name || sanitize(s.cfg.Name) == sanitize(cfg.Name)) {
			return svcerr.New(svcerr.ErrConflict, "mcp server %q of plugin %q: the plugin already declares server %q", cfg.Name, cfg.Slug, s.cfg.Name)
		}
	}
	m.servers[cfg.id()] = &server{cfg: cfg, registered: map[string]*Tool{}}
	return nil
}

// Remove forgets every server of plugin slug (an uninstalled or updated plugin): their
// connections are closed (stdio processes stopped) and their tools unregistered from the
// registry of the last Sync. Removing a plugin that declares nothing does nothing.
func (m *Manager) Remove(slug string) {
	m.mu.Lock()
	var gone []*server
	for id, s := range m.servers {
		if s.cfg.Slug == slug {
			gone = append(gone, s)
			delete(m.servers, id)
		}
	}
	for _, c := range m.conns {
		if c.srv.cfg.Slug == slug {
			m.retire(c)
		}
	}
	reg := m.reg
	m.mu.Unlock()
	for _, s := range gone {
		s.syncMu.Lock()
		for class := range s.registered {
			if reg != nil {
				reg.Unregister(class)
			}
			delete(s.registered, class)
		}
		s.syncMu.Unlock()
		m.removeHome(s)
		m.log.Info("mcp server removed", "server", s.cfg.id())
	}
}

// Servers returns the declared servers ordered by plugin slug and name.
func (m *Manager) Servers() []ServerConfig {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ServerConfig, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s.cfg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id() < out[j].id() })
	return out
}

// errClosed is returned by every use after Close.
func errClosed() error { return svcerr.New(svcerr.ErrUnavailable, "mcp: the manager is closed") }

// session returns a live session with srv for these secret values, starting the server (or
// reconnecting) when there is none or the last one died; the caller holds it until release.
// A new stdio process needs a slot below MaxProcessesPerServer and MaxProcesses: the least
// recently used idle process in the way is stopped, and when all of them are busy the caller
// waits (at most BusyWait) for one to become idle. The handshake is shared by concurrent callers
// and bounded by CallTimeout, not by ctx: a caller that gives up does not fail the others.
// Errors: svcerr.ErrUnavailable when the server cannot be started or reached (or after Close),
// svcerr.ErrRateLimited (wrapping errBusy) when no process slot freed in time,
// svcerr.ErrInvalid with netguard.ErrBlocked when an HTTP URL is refused by the screen, or ctx's
// error.
func (m *Manager) session(ctx context.Context, srv *server, secrets map[string]string) (*conn, error) {
	key := srv.cfg.id() + "\x00" + digest(secrets)
	var busy <-chan time.Time
	m.mu.Lock()
	for {
		if m.closed {
			m.mu.Unlock()
			return nil, errClosed()
		}
		c := m.conns[key]
		if c != nil && c.dead.Load() {
			m.retire(c)
			c = nil
		}
		if c != nil {
			c.inUse++
			m.mu.Unlock()
			return m.await(ctx, c)
		}
		if srv.cfg.isHTTP() || m.makeRoom(srv) {
			c = &conn{key: key, srv: srv, ready: make(chan struct{}), inUse: 1}
			c.lastUsed.Store(time.Now().UnixNano())
			m.conns[key] = c
			m.wg.Add(1)
			go m.connect(c, maps.Clone(secrets))
			m.mu.Unlock()
			return m.await(ctx, c)
		}
		// Every process in the way is busy: wait for one to become idle or go away.
		if busy == nil {
			t := time.NewTimer(m.opts.BusyWait)
			defer t.Stop()
			busy = t.C
		}
		idled := m.idled
		m.mu.Unlock()
		select {
		case <-idled:
		case <-busy:
			return nil, fmt.Errorf("mcp server %s: %w: %w", srv.cfg.id(), svcerr.ErrRateLimited, errBusy)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		m.mu.Lock()
	}
}

// errBusy is the reason of a call that found every process slot of its server busy.
var errBusy = errors.New("every process of the server is busy with other calls; try again later")

// await waits for the handshake of c, which the caller holds; on failure c is released.
func (m *Manager) await(ctx context.Context, c *conn) (*conn, error) {
	select {
	case <-c.ready:
	case <-ctx.Done():
		m.release(c)
		return nil, ctx.Err()
	}
	if c.err != nil {
		m.release(c)
		return nil, c.err
	}
	c.lastUsed.Store(time.Now().UnixNano())
	return c, nil
}

// release ends a caller's hold of c (from session); an idle stdio connection wakes the callers
// waiting for a process slot.
func (m *Manager) release(c *conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c.inUse--
	c.lastUsed.Store(time.Now().UnixNano())
	if c.inUse == 0 && !c.srv.cfg.isHTTP() {
		m.wake()
	}
}

// wake wakes the callers waiting for a process slot. The caller holds m.mu.
func (m *Manager) wake() {
	close(m.idled)
	m.idled = make(chan struct{})
}

// makeRoom reports whether a new stdio process of srv fits under the bounds, stopping the least
// recently used idle process in the way when one is needed: one of srv's when srv is at its
// bound, any server's when the total is. It reports false when every candidate is busy. The
// caller holds m.mu.
func (m *Manager) makeRoom(srv *server) bool {
	for {
		var mine, all int
		var lruMine, lruAll *conn
		for _, c := range m.conns {
			if c.srv.cfg.isHTTP() {
				continue
			}
			all++
			idle := c.inUse == 0 && !c.dead.Load()
			if idle && (lruAll == nil || c.lastUsed.Load() < lruAll.lastUsed.Load()) {
				lruAll = c
			}
			if c.srv == srv {
				mine++
				if idle && (lruMine == nil || c.lastUsed.Load() < lruMine.lastUsed.Load()) {
					lruMine = c
				}
			}
		}
		victim := (*conn)(nil)
		switch {
		case m.opts.MaxProcessesPerServer > 0 && mine >= m.opts.MaxProcessesPerServer:
			victim = lruMine
		case m.opts.MaxProcesses > 0 && all >= m.opts.MaxProcesses:
			victim = lruAll
		default:
			return true
		}
		if victim == nil {
			return false
		}
		m.log.Info("mcp server process stopped for another (process limit)", "server", victim.srv.cfg.id())
		m.retire(victim)
	}
}

// Stats counts the connections of the Manager: stdio processes (running or starting) and those
// of them serving a call or listing right now.
type Stats struct {
	Processes int
	Busy      int
}

// Stats returns the current counts (for metrics and tests).
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	var st Stats
	for _, c := range m.conns {
		if c.srv.cfg.isHTTP() {
			continue
		}
		st.Processes++
		if c.inUse > 0 {
			st.Busy++
		}
	}
	return st
}

// liveSession is session for a tool call: a stdio server's session is pinged first, and when
// the ping fails at the transport (the process died while idle, before its exit was noticed)
// the server is restarted at once, so the call is not lost to a crash it could not have caused.
// A ping cannot run a tool, so this never executes a call twice; a server that dies during the
// call itself still fails that call. HTTP servers are not pinged (a request to a gone server
// fails before it is delivered, and each ping would be a network round trip). The caller
// releases the connection. Errors: those of session.
func (m *Manager) liveSession(ctx context.Context, srv *server, secrets map[string]string) (*conn, error) {
	c, err := m.session(ctx, srv, secrets)
	if err != nil || srv.cfg.isHTTP() {
		return c, err
	}
	perr := c.cs.Ping(ctx, &sdk.PingParams{})
	var rpcErr *jsonrpc.Error
	if perr == nil || ctx.Err() != nil || errors.As(perr, &rpcErr) {
		return c, nil // alive (a server that answers the ping with an error is alive too)
	}
	m.log.Warn("mcp server did not answer a ping; restarting it", "server", srv.cfg.id(), "err", perr)
	m.drop(c)
	m.release(c)
	return m.session(ctx, srv, secrets)
}

// retire forgets a dead or idle connection and closes it in the background (which reaps a
// stdio process). The caller holds m.mu.
func (m *Manager) retire(c *conn) {
	if m.conns[c.key] == c {
		delete(m.conns, c.key)
		if !c.srv.cfg.isHTTP() {
			m.wake()
		}
	}
	c.dead.Store(true)
	if c.cs != nil {
		cs := c.cs
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			_ = cs.Close()
		}()
	}
}

// drop marks a connection dead after a transport failure, so that the next use reconnects.
func (m *Manager) drop(c *conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.retire(c)
}

// connect runs the handshake of c and, once connected, watches the session: when the server
// ends it (a crashed process, a closed HTTP session) the connection is retired.
func (m *Manager) connect(c *conn, secrets map[string]string) {
	defer m.wg.Done()
	cfg := c.srv.cfg
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.CallTimeout)
	defer cancel()
	cs, err := m.dial(ctx, c.srv, secrets)
	m.mu.Lock()
	if err != nil {
		c.err = err
		if m.conns[c.key] == c {
			delete(m.conns, c.key)
			if !cfg.isHTTP() {
				m.wake()
			}
		}
		c.dead.Store(true)
		m.mu.Unlock()
		close(c.ready)
		m.log.Warn("mcp server did not start", "server", cfg.id(), "err", err)
		return
	}
	c.cs = cs
	if m.closed || m.conns[c.key] != c {
		// Closed (or retired) while connecting: nobody will use it.
		c.err = errClosed()
		c.dead.Store(true)
		m.mu.Unlock()
		close(c.ready)
		_ = cs.Close()
		return
	}
	m.mu.Unlock()
	close(c.ready)
	m.log.Info("mcp server connected", "server", cfg.id())
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		_ = cs.Wait()
		if !c.dead.Load() {
			m.log.Warn("mcp server connection ended; the next use reconnects", "server", cfg.id())
		}
		m.drop(c)
	}()
}

// dial starts a stdio server or connects to an HTTP one and runs the MCP handshake.
func (m *Manager) dial(ctx context.Context, srv *server, secrets map[string]string) (*sdk.ClientSession, error) {
	cfg := srv.cfg
	id := cfg.id()
	client := sdk.NewClient(&sdk.Implementation{Name: clientName, Version: clientVersion}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case m.changed <- id:
			default: // a refresh is queued already
			}
		},
	})
	var transport sdk.Transport
	if cfg.isHTTP() {
		t, err := m.httpTransport(ctx, cfg, secrets)
		if err != nil {
			return nil, err
		}
		transport = t
	} else {
		cmd, err := m.command(srv, secrets)
		if err != nil {
			return nil, err
		}
		transport = &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		if errors.Is(err, netguard.ErrBlocked) {
			return nil, fmt.Errorf("mcp server %s: %w", id, err)
		}
		return nil, fmt.Errorf("mcp server %s: %w: %w", id, svcerr.ErrUnavailable, err)
	}
	return cs, nil
}

// stderrLog logs a stdio server's stderr line by line (lines are capped).
type stderrLog struct {
	log    *slog.Logger
	server string
	mu     sync.Mutex
	buf    []byte
}

const maxStderrLine = 2048

func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			if len(w.buf) > maxStderrLine {
				w.emit(w.buf)
				w.buf = w.buf[:0]
			}
			return len(p), nil
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

func (w *stderrLog) emit(line []byte) {
	if len(line) > maxStderrLine {
		line = line[:maxStderrLine]
	}
	if s := strings.TrimSpace(string(line)); s != "" {
		w.log.Info("mcp server stderr", "server", w.server, "line", s)
	}
}

var _ io.Writer = (*stderrLog)(nil)

// digest identifies a set of secret values without keeping them: connections are keyed by it.
func digest(secrets map[string]string) string {
	if len(secrets) == 0 {
		return ""
	}
	keys := make([]string, 0, len(secrets))
	for k := range secrets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(secrets[k]), secrets[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// background refreshes tool lists (on list-change notifications and every RefreshInterval) and
// closes idle connections, until Close.
func (m *Manager) background() {
	defer m.wg.Done()
	var refresh <-chan time.Time
	if m.opts.RefreshInterval > 0 {
		t := time.NewTicker(m.opts.RefreshInterval)
		defer t.Stop()
		refresh = t.C
	}
	var idle <-chan time.Time
	if m.opts.IdleTimeout > 0 {
		t := time.NewTicker(min(m.opts.IdleTimeout/2, time.Minute))
		defer t.Stop()
		idle = t.C
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-m.done
		cancel()
	}()
	for {
		select {
		case <-m.done:
			return
		case id := <-m.changed:
			m.refresh(ctx, id)
		case <-refresh:
			m.refresh(ctx, "")
		case <-idle:
			m.closeIdle()
		}
	}
}

// refresh re-syncs the registry of the last Sync: one server (id) or all ("").
func (m *Manager) refresh(ctx context.Context, id string) {
	m.mu.Lock()
	reg := m.reg
	var srvs []*server
	for sid, s := range m.servers {
		if id == "" || sid == id {
			srvs = append(srvs, s)
		}
	}
	m.mu.Unlock()
	if reg == nil {
		return
	}
	for _, s := range srvs {
		if err := m.syncServer(ctx, reg, s); err != nil && ctx.Err() == nil {
			m.log.Warn("mcp tool list refresh failed", "server", s.cfg.id(), "err", err)
		}
	}
}

// closeIdle stops the connections unused for IdleTimeout; one serving a call is not idle.
func (m *Manager) closeIdle() {
	cutoff := time.Now().Add(-m.opts.IdleTimeout).UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.conns {
		select {
		case <-c.ready:
		default:
			continue // still connecting
		}
		if c.inUse == 0 && c.lastUsed.Load() < cutoff {
			m.log.Info("mcp server connection idle; closing", "server", c.srv.cfg.id())
			m.retire(c)
		}
	}
}

// Close stops the background loop and every server (stdio processes get their stdin closed,
// then SIGTERM, then SIGKILL) and waits for them. Tools stay registered; their calls fail with a
// tool error. It returns nil, or ctx's error (wrapping svcerr.ErrUnavailable) when the servers
// did not stop in time. Close is idempotent.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if !m.closed {
		m.closed = true
		close(m.done)
		for _, c := range m.conns {
			m.retire(c)
		}
	}
	srvs := slices.Collect(maps.Values(m.servers))
	m.mu.Unlock()
	stopped := make(chan struct{})
	go func() {
		m.wg.Wait()
		for _, s := range srvs {
			m.removeHome(s)
		}
		close(stopped)
	}()
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mcp: servers still stopping: %w: %w", svcerr.ErrUnavailable, ctx.Err())
	}
}
