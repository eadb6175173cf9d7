package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentsvc/svc/internal/netguard"
	"github.com/agentsvc/svc/store"
)

// TestLLMClientsScreenGroupConfigs: model calls of group configurations connect to public
// addresses and llm_allowed_hosts only, checked at dial time (a base URL screened when written
// may resolve elsewhere later); global and scripted configurations use the default client.
func TestLLMClientsScreenGroupConfigs(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	t.Cleanup(srv.Close)
	l := &llmClients{}
	if l.For(&store.LLMConfig{Driver: store.LLMDriverOpenAI, IsGlobal: true}, "") != nil ||
		l.For(&store.LLMConfig{Driver: store.LLMDriverScripted}, "") != nil {
		t.Fatal("global and scripted configurations must use the default client")
	}
	group := &store.LLMConfig{Driver: store.LLMDriverOpenAI}
	if _, err := l.For(group, "").Get(srv.URL); !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("loopback call of a group configuration: %v, want blocked", err)
	}
	resp, err := l.For(group, "127.0.0.1").Get(srv.URL)
	if err != nil {
		t.Fatalf("call to an allowed host: %v", err)
	}
	resp.Body.Close()
	if c := l.For(group, "127.0.0.1"); c != l.For(group, "127.0.0.1") {
		t.Fatal("the client is rebuilt for an unchanged setting")
	}
}
