package mail

import (
	"context"
	"net"

	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// ConnectFailed is the one answer of a test message whose connection failed, whatever the
// cause (refused, cut, timed out, not an SMTP server, TLS): telling them apart would map the
// network behind the service. The cause goes to the service log.
const ConnectFailed = "the mail server could not be reached or did not answer as an SMTP server; the service log has the cause"

// ScreenSMTP decides how the service connects to c's mail_host. A host an administrator saved
// over the API (source: the stored layer) must pass the outbound screen (netguard, with base's
// resolver and exemptions) unless mail_allowed_hosts lists it: ScreenSMTP checks it now,
// connecting to nothing, and returns the screening dial function for the sender (which checks
// again at the connection, against DNS rebinding). A host from the file or the environment is
// the operator's: nil dial, nil error. Errors: ErrInvalid naming mail_allowed_hosts.
func ScreenSMTP(ctx context.Context, source config.Source, c *config.Config, base netguard.Options) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	if source != config.SourceStored {
		return nil, nil
	}
	allowed, err := netguard.ParseHostList(c.MailAllowedHosts)
	if err != nil { // the loader validated it
		return nil, err
	}
	opts := netguard.Options{Resolver: base.Resolver, AllowLoopback: base.AllowLoopback, Exempt: base.Exempt.With(allowed)}
	if _, err := netguard.CheckHost(ctx, c.MailHost, opts); err != nil {
		msg := "mail host refused"
		if pub, _, ok := svcerr.Public(err); ok {
			msg = pub
		}
		return nil, svcerr.New(svcerr.ErrInvalid, "%s: a mail host saved here must be public unless the operator lists it in mail_allowed_hosts", msg)
	}
	return netguard.NewDialer(opts).DialContext, nil
}
