package mailqueue_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/domain/mail"
	"github.com/agentsvc/svc/internal/domain/mail/mailtest"
	"github.com/agentsvc/svc/internal/jobs/mailqueue"
	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// switchable sends over SMTP to the address it holds at each message, as the app's sender
// reads the effective mail configuration per message.
type switchable struct {
	mu   sync.Mutex
	addr *net.TCPAddr
}

func (s *switchable) set(a *net.TCPAddr) { s.mu.Lock(); s.addr = a; s.mu.Unlock() }

func (s *switchable) Send(ctx context.Context, m mail.Message) error {
	s.mu.Lock()
	a := s.addr
	s.mu.Unlock()
	snd, err := mail.NewSMTP(mail.SMTPConfig{Host: a.IP.String(), Port: a.Port, Encryption: mail.EncryptionNone,
		From: "svc@example.test", Timeout: 2 * time.Second})
	if err != nil {
		return err
	}
	return snd.Send(ctx, m)
}

// deadAddr is a loopback port nothing listens on.
func deadAddr(t *testing.T) *net.TCPAddr {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().(*net.TCPAddr)
	_ = ln.Close()
	return a
}

func enqueue(t *testing.T, s *store.Store, to, subject string) {
	t.Helper()
	if err := s.EnqueueMail(context.Background(), store.NewMail{To: to, Subject: subject, Text: "Body of " + subject, Kind: "test"}); err != nil {
		t.Fatal(err)
	}
}

func states(t *testing.T, s *store.Store) map[string]int {
	t.Helper()
	ms, err := s.Mails(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, m := range ms {
		out[m.State]++
	}
	return out
}

// TestDownThenUpAcrossRestart: while the SMTP server is down mails stay queued with their
// attempts and errors; a new dispatcher (a restarted process) on the same store delivers
// them once the server answers, each exactly once, and the configuration change (a new
// address) applies to the mails already queued.
func TestDownThenUpAcrossRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	s := storetest.NewWithClock(t, clock.Now)
	sender := &switchable{addr: deadAddr(t)}
	first := &mailqueue.Dispatcher{Store: s, Sender: sender, Clock: clock, Timeout: 5 * time.Second}
	enqueue(t, s, "ada@example.com", "one")
	enqueue(t, s, "bob@example.com", "two")
	if n, err := first.Drain(ctx); err != nil || n != 2 {
		t.Fatalf("Drain while down = %d, %v", n, err)
	}
	ms, _ := s.Mails(ctx, "")
	for _, m := range ms {
		if m.State != store.MailPending || m.Attempts != 1 || m.LastError == nil || m.LeaseUntil != nil {
			t.Fatalf("after a failed attempt: %+v", m)
		}
	}
	if n, err := first.Drain(ctx); err != nil || n != 0 {
		t.Fatalf("retried before due: %d, %v", n, err)
	}

	// The server comes up and the process restarts: a new dispatcher on the same store.
	smtp := mailtest.Start(t)
	sender.set(&net.TCPAddr{IP: net.ParseIP(smtp.Host()), Port: smtp.Port()})
	clock.Advance(store.MailBackoff.Delays[0])
	second := &mailqueue.Dispatcher{Store: s, Sender: sender, Clock: clock}
	if n, err := second.Drain(ctx); err != nil || n != 2 {
		t.Fatalf("Drain when up = %d, %v", n, err)
	}
	got := smtp.WaitFor(t, 2, 5*time.Second)
	if len(got) != 2 || states(t, s)[store.MailDelivered] != 2 {
		t.Fatalf("delivered %d, states %v", len(got), states(t, s))
	}
	// Nothing is sent twice: later passes, hours later, find nothing.
	clock.Advance(24 * time.Hour)
	if n, err := second.Drain(ctx); err != nil || n != 0 {
		t.Fatalf("Drain after delivery = %d, %v", n, err)
	}
	if n := len(smtp.Messages()); n != 2 {
		t.Fatalf("%d messages received, want 2", n)
	}
}

// hang is an SMTP server that accepts connections and never answers.
func hang(t *testing.T) *net.TCPAddr {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().(*net.TCPAddr)
}

// TestSlowServerIsBounded: an SMTP server that never answers costs one attempt of Timeout,
// recorded as a failure; the background loop keeps going and stops cleanly.
func TestSlowServerIsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	s := storetest.NewWithClock(t, clock.Now)
	sender := &switchable{addr: hang(t)}
	d := &mailqueue.Dispatcher{Store: s, Sender: sender, Clock: clock, Timeout: 300 * time.Millisecond}
	enqueue(t, s, "ada@example.com", "slow")
	start := time.Now()
	d.Start(ctx)
	clock.WaitForTimers(t, 1) // the first pass ran and the loop waits
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the attempt took %s", took)
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	ms, _ := s.Mails(ctx, "")
	if ms[0].State != store.MailPending || ms[0].Attempts != 1 || ms[0].LastError == nil {
		t.Fatalf("after a hung attempt: %+v", ms[0])
	}
	t.Logf("recorded error: %s", *ms[0].LastError)
}

// TestNotifyAndStopDrain: a running dispatcher sends a mail queued after Start as soon as it
// is told, and Stop returns once it is idle.
func TestNotifyAndStopDrain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	s := storetest.NewWithClock(t, clock.Now)
	smtp := mailtest.Start(t)
	sender := &switchable{addr: &net.TCPAddr{IP: net.ParseIP(smtp.Host()), Port: smtp.Port()}}
	d := &mailqueue.Dispatcher{Store: s, Sender: sender, Clock: clock, Poll: time.Hour}
	d.Start(ctx)
	clock.WaitForTimers(t, 1)
	enqueue(t, s, "ada@example.com", "hello")
	d.Notify()
	got := smtp.WaitFor(t, 1, 5*time.Second)
	if got[0].Subject != "hello" || got[0].TextBody != "Body of hello\n" && got[0].TextBody != "Body of hello" {
		t.Fatalf("received %+v", got[0])
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if st := states(t, s); st[store.MailDelivered] != 1 {
		t.Fatalf("states = %v", st)
	}
}
