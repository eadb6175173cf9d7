package server

import (
	"net/http"
	"sync"

	"github.com/agentsvc/svc/internal/group"
	"github.com/agentsvc/svc/internal/netguard"
	"github.com/agentsvc/svc/store"
)

// llmClients hands out the HTTP client of model calls. Global configurations (administrators
// only) are trusted and use the drivers' default client; group configurations go through
// netguard: every request is screened and connects only to public addresses or the hosts of
// llm_allowed_hosts, so a base URL whose name is re-pointed at an internal address after it
// was written (DNS rebinding) is refused at dial time. One client per value of the setting,
// so connections are pooled.
type llmClients struct {
	net     netguard.Options
	mu      sync.Mutex
	allowed string
	client  *http.Client
}

// For returns the client for configuration c under the current llm_allowed_hosts (nil: the
// driver's default client).
func (l *llmClients) For(c *store.LLMConfig, allowedHosts string) *http.Client {
	if c.IsGlobal || c.Driver == store.LLMDriverScripted {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.client == nil || l.allowed != allowedHosts {
		l.allowed = allowedHosts
		l.client = &http.Client{Transport: netguard.GuardedTransport(group.LLMNet(l.net, allowedHosts))}
	}
	return l.client
}
