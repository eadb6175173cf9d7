package chat

import (
	"context"

	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// ScreenCallback screens a callback_url before a chat is queued: an absolute https URL of at
// most 2048 characters whose host resolves only to public addresses (outside private,
// loopback, link-local and carrier-grade NAT ranges). Only net.AllowLoopback (tests) and
// net.Resolver are taken from net. It returns the screened URL in its normalised form.
// Errors: ErrInvalid "callback_url: …".
func ScreenCallback(ctx context.Context, raw string, net netguard.Options) (string, error) {
	t, err := netguard.CheckURL(ctx, raw, netguard.Options{
		RequireHTTPS: true, MaxLength: limits.URLLen, AllowLoopback: net.AllowLoopback, Resolver: net.Resolver,
	})
	if err != nil {
		return "", svcerr.New(svcerr.ErrInvalid, "callback_url: %s", err.Error())
	}
	out := t.URL.String()
	if len(out) > limits.URLLen {
		return "", svcerr.New(svcerr.ErrInvalid, "callback_url: URL is longer than %d characters", limits.URLLen)
	}
	return out, nil
}
