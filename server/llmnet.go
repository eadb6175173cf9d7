package server

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/domain/group"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/store"
)

// llmClients hands out the HTTP clients and the drivers of model calls, each built once and
// reused, so a step reuses the connections (and TLS sessions) of the steps before it.
//
// Global configurations (administrators only) are trusted: one client on a clone of Go's
// default transport. Group configurations go through netguard: every request is screened and
// connects only to public addresses or the hosts of llm_allowed_hosts, so a base URL whose name
// is re-pointed at an internal address after it was written (DNS rebinding) is refused at dial
// time; one client per value of the setting. Both keep idle connections for twice the
// worker count per host (idle), or concurrent steps close and reopen connections.
//
// Drivers are cached per configuration id and rebuilt when the configuration (or a setting
// that shapes its driver) changes: the key hashes what the driver is built from.
type llmClients struct {
	net  netguard.Options
	idle int // idle connections kept per host: twice the worker count, at least 8

	mu      sync.Mutex
	global  *http.Client
	allowed string
	client  *http.Client
	drivers map[int64]cachedDriver
}

type cachedDriver struct {
	key [sha256.Size]byte
	d   llm.Driver
}

// maxCachedDrivers bounds the driver cache (configurations deleted since stay in it until it
// is cleared).
const maxCachedDrivers = 1024

func newLLMClients(net netguard.Options, workers int) *llmClients {
	// Twice the workers: a run's next call can start before the connection of its previous one
	// is back in the pool (the transport then dials); kept, that connection serves later calls.
	return &llmClients{net: net, idle: max(2*workers, netguard.DefaultMaxIdleConnsPerHost)}
}

// For returns the client for configuration c under the current llm_allowed_hosts (nil for the
// scripted driver, which makes no calls).
func (l *llmClients) For(c *store.LLMConfig, allowedHosts string) *http.Client {
	if c.Driver == store.LLMDriverScripted {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	idle := max(l.idle, netguard.DefaultMaxIdleConnsPerHost)
	if c.IsGlobal {
		if l.global == nil {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.MaxIdleConnsPerHost = idle
			tr.MaxIdleConns = max(tr.MaxIdleConns, 4*idle)
			l.global = &http.Client{Transport: tr}
		}
		return l.global
	}
	if l.client == nil || l.allowed != allowedHosts {
		l.allowed = allowedHosts
		opts := group.LLMNet(l.net, allowedHosts)
		opts.MaxIdleConnsPerHost = idle
		l.client = &http.Client{Transport: netguard.GuardedTransport(opts)}
	}
	return l.client
}

// driver returns the cached driver of configuration c when key (driverKey) is unchanged, else
// the one build makes, cached. Scripted configurations are not cached (a script is read
// when its driver is built).
func (l *llmClients) driver(c *store.LLMConfig, key [sha256.Size]byte, build func() (llm.Driver, error)) (llm.Driver, error) {
	if c.Driver == store.LLMDriverScripted {
		return build()
	}
	l.mu.Lock()
	e, ok := l.drivers[c.ID]
	l.mu.Unlock()
	if ok && e.key == key {
		return e.d, nil
	}
	d, err := build()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drivers == nil || len(l.drivers) >= maxCachedDrivers {
		l.drivers = map[int64]cachedDriver{}
	}
	l.drivers[c.ID] = cachedDriver{key: key, d: d}
	return d, nil
}

// driverKey hashes what the driver of c is built from: the stored configuration (its sealed
// key included, never opened here) and the settings llm_timeout and llm_allowed_hosts.
func driverKey(c *store.LLMConfig, llmTimeout int, allowedHosts string) [sha256.Size]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%d\x00%s\x00%s\x00%t\x00%s\x00%d\x00%q\x00", c.ID, c.UpdatedAt.UnixNano(), c.Driver, c.Model,
		c.IsGlobal, c.APIKeySealed, llmTimeout, allowedHosts)
	if c.BaseURL != nil {
		fmt.Fprintf(h, "base=%q\x00", *c.BaseURL)
	}
	if c.Temperature != nil {
		fmt.Fprintf(h, "temp=%v\x00", *c.Temperature)
	}
	if c.MaxTokensOutput != nil {
		fmt.Fprintf(h, "max=%d\x00", *c.MaxTokensOutput)
	}
	if c.Timeout != nil {
		fmt.Fprintf(h, "timeout=%d\x00", *c.Timeout)
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
