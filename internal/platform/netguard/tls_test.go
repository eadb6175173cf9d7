package netguard_test

import (
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentsvc/svc/internal/platform/netguard"
)

// TestRootCAsAndGuardedTransport: an httptest TLS server is trusted only through
// Options.RootCAs, and GuardedTransport screens every request like Client does.
func TestRootCAsAndGuardedTransport(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	cases := []struct {
		name    string
		opts    netguard.Options
		ok      bool
		blocked bool
	}{
		{"trusted through RootCAs", netguard.Options{AllowLoopback: true, RootCAs: pool}, true, false},
		{"system roots do not know the test certificate", netguard.Options{AllowLoopback: true}, false, false},
		{"loopback refused before connecting", netguard.Options{RootCAs: pool}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &http.Client{Transport: netguard.GuardedTransport(tc.opts)}
			resp, err := c.Get(srv.URL)
			if err == nil {
				resp.Body.Close()
			}
			if tc.ok != (err == nil) || errors.Is(err, netguard.ErrBlocked) != tc.blocked {
				t.Fatalf("Get = %v, want ok=%v blocked=%v", err, tc.ok, tc.blocked)
			}
			if tc.ok && resp.StatusCode != http.StatusNoContent {
				t.Fatalf("status %d", resp.StatusCode)
			}
		})
	}
}
