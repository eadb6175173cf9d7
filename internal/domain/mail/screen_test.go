package mail_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/domain/mail"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/netguard"
)

// tableResolver answers from a table and fails for every other name: no DNS traffic.
type tableResolver map[string][]netip.Addr

func (r tableResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if as, ok := r[host]; ok {
		return as, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// TestScreenSMTP: the screen's decision on a saved mail host, made without connecting: private,
// loopback, documentation-range and unresolvable hosts are refused (naming mail_allowed_hosts),
// listed ones and public ones pass; hosts from the file or environment are not screened.
func TestScreenSMTP(t *testing.T) {
	t.Parallel()
	base := netguard.Options{Resolver: tableResolver{
		"relay.internal.test": {netip.MustParseAddr("10.1.2.3")},
		"smtp.public.test":    {netip.MustParseAddr("93.184.216.34")},
	}}
	for _, tt := range []struct {
		source  config.Source
		host    string
		allowed string
		ok      bool
	}{
		{config.SourceStored, "127.0.0.1", "", false},
		{config.SourceStored, "localhost", "", false},
		{config.SourceStored, "192.0.2.10", "", false},
		{config.SourceStored, "relay.internal.test", "", false},
		{config.SourceStored, "unknown.internal.test", "", false},
		{config.SourceStored, "relay.internal.test", "10.0.0.0/8", true},
		{config.SourceStored, "relay.internal.test", "relay.internal.test", true},
		{config.SourceStored, "127.0.0.1", "127.0.0.1", true},
		{config.SourceStored, "192.0.2.10", "127.0.0.1", false},
		{config.SourceStored, "smtp.public.test", "", true},
		{config.SourceEnvironment, "127.0.0.1", "", true},
		{config.SourceFile, "relay.internal.test", "", true},
	} {
		c := &config.Config{MailHost: tt.host, MailAllowedHosts: tt.allowed}
		dial, err := mail.ScreenSMTP(context.Background(), tt.source, c, base)
		if tt.ok != (err == nil) {
			t.Errorf("%s %s (allowed %q): err %v, want ok=%v", tt.source, tt.host, tt.allowed, err, tt.ok)
			continue
		}
		if err != nil && (!strings.Contains(err.Error(), "mail_allowed_hosts") || strings.Contains(err.Error(), "10.1.2.3")) {
			t.Errorf("%s: refusal %q, want one naming mail_allowed_hosts and no resolved address", tt.host, err)
		}
		if screened := dial != nil; err == nil && screened != (tt.source == config.SourceStored) {
			t.Errorf("%s %s: screening dialer = %v", tt.source, tt.host, screened)
		}
	}
}
