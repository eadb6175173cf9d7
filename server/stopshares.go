package server

import (
	"context"
	"time"
)

// stopShares divides a stop's grace (shutdown_grace_seconds) among its parts, in the order
// they end: the steps in flight (and, beside them, the HTTP requests in flight; event streams
// and claims end at once, needing no share), the hand-back of the steps cancelled when theirs
// ended, the outboxes' deliveries in flight, and the trace exporter's flush. Each part gets a
// deadline of its own, so a part that overruns cannot leave the next an ended context (the
// outboxes used to get the daemon's expired one, and reported deliveries in flight that were
// not).
type stopShares struct {
	Steps    time.Duration // from the signal
	HandBack time.Duration // after Steps
	Outboxes time.Duration // from the daemon's end, cut at the Flush's start
	Flush    time.Duration // the last of the grace
}

// sharesOf divides grace: the outboxes a fifth (at most 5 s: a delivery in flight is bounded
// by its own timeout, and an unanswered one is delivered again from the durable outbox), the
// hand-back a fifth too (at most 5 s: a few small writes, but on a loaded database they are
// what keeps a task from waiting for the reaper — a tenth, 0.6 s of a 6 s grace, was overrun
// in CI on MariaDB), the flush a tenth (at most 2 s: one export), the steps the rest (13 s of
// the default 25 s).
func sharesOf(grace time.Duration) stopShares {
	sh := stopShares{
		HandBack: min(grace/5, 5*time.Second),
		Outboxes: min(grace/5, 5*time.Second),
		Flush:    min(grace/10, 2*time.Second),
	}
	sh.Steps = max(grace-sh.HandBack-sh.Outboxes-sh.Flush, 0)
	return sh
}

// until is ctx ending at t too; the zero shares (a stop without a deadline) leave ctx as it is.
func (sh stopShares) until(ctx context.Context, t time.Time) (context.Context, context.CancelFunc) {
	if sh == (stopShares{}) {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, t)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// RequestGrace is how long the HTTP server's shutdown waits for the requests in flight, out of
// a stop's grace: the steps' share, which it runs beside (App.Stop); event streams and push
// subscriptions end at once and take none of it.
func RequestGrace(grace time.Duration) time.Duration { return sharesOf(grace).Steps }
