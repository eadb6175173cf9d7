package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func newMail(to, subject string) store.NewMail {
	return store.NewMail{To: to, Subject: subject, Text: "Hello.\n", HTML: "<p>Hello.</p>", Kind: store.MailKindAccount}
}

func mailIDs(ms []store.Mail) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func TestEnqueueMailValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	for name, m := range map[string]store.NewMail{
		"no recipient":      {Subject: "s", Text: "t", Kind: "account"},
		"two-line to":       {To: "a@example.com\r\nBcc: b@example.com", Subject: "s", Kind: "account"},
		"two-line subject":  {To: "a@example.com", Subject: "s\nBcc: x", Kind: "account"},
		"no kind":           {To: "a@example.com", Subject: "s"},
		"bad kind":          {To: "a@example.com", Subject: "s", Kind: "Account!"},
		"oversize subject":  {To: "a@example.com", Subject: strings.Repeat("x", store.MaxMailSubjectLen+1), Kind: "account"},
		"invalid utf8 text": {To: "a@example.com", Subject: "s", Text: "\xff", Kind: "account"},
	} {
		if err := s.EnqueueMail(ctx, m); !errors.Is(err, svcerr.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if ms, err := s.Mails(ctx, ""); err != nil || len(ms) != 0 {
		t.Fatalf("refused mails were queued: %+v, %v", ms, err)
	}
	if err := s.EnqueueMail(ctx, newMail(" ada@example.com ", "Verify")); err != nil {
		t.Fatal(err)
	}
	ms, err := s.Mails(ctx, "ada@example.com")
	if err != nil || len(ms) != 1 {
		t.Fatalf("Mails = %+v, %v", ms, err)
	}
	m := ms[0]
	if m.To != "ada@example.com" || m.Subject != "Verify" || m.Text != "Hello.\n" || m.HTML != "<p>Hello.</p>" ||
		m.Kind != store.MailKindAccount || m.State != store.MailPending || m.Attempts != 0 || m.LeaseUntil != nil {
		t.Fatalf("queued mail = %+v", m)
	}
}

func TestClaimMailsLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	for i := range 3 {
		if err := s.EnqueueMail(ctx, newMail("ada@example.com", fmt.Sprint("m", i))); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	all, _ := s.Mails(ctx, "")
	ids := mailIDs(all)

	got, err := s.ClaimMails(ctx, "d1", 2, time.Minute)
	if err != nil || fmt.Sprint(mailIDs(got)) != fmt.Sprint(ids[:2]) {
		t.Fatalf("first claim = %v, %v; want %v", mailIDs(got), err, ids[:2])
	}
	if got[0].LeaseUntil == nil || !got[0].LeaseUntil.Equal(clock.Now().Add(time.Minute).Truncate(time.Microsecond)) || got[0].Subject != "m0" {
		t.Fatalf("claimed mail = %+v", got[0])
	}
	got2, err := s.ClaimMails(ctx, "d2", 25, time.Minute)
	if err != nil || fmt.Sprint(mailIDs(got2)) != fmt.Sprint(ids[2:]) {
		t.Fatalf("second claim = %v, %v; want %v", mailIDs(got2), err, ids[2:])
	}
	if got3, err := s.ClaimMails(ctx, "d3", 25, time.Minute); err != nil || len(got3) != 0 {
		t.Fatalf("everything leased, claim = %v, %v", mailIDs(got3), err)
	}

	// Delivered: never claimed again; a second finish and an unknown id are refused.
	if _, err := s.FinishMail(ctx, got[0].ID, *got[0].LeaseUntil, true, ""); err != nil {
		t.Fatal(err)
	}
	_, err = s.FinishMail(ctx, got[0].ID, *got[0].LeaseUntil, true, "")
	wantErr(t, err, svcerr.ErrInvalidState)
	_, err = s.FinishMail(ctx, 99999, *got[0].LeaseUntil, true, "")
	wantErr(t, err, svcerr.ErrNotFound)

	// An expired lease is taken over; the old holder's finish is refused (fencing).
	clock.Advance(time.Minute + time.Second)
	again, err := s.ClaimMails(ctx, "d4", 25, time.Minute)
	if err != nil || fmt.Sprint(mailIDs(again)) != fmt.Sprint(ids[1:]) {
		t.Fatalf("claim after expiry = %v, %v; want %v", mailIDs(again), err, ids[1:])
	}
	_, err = s.FinishMail(ctx, got[1].ID, *got[1].LeaseUntil, true, "")
	wantErr(t, err, svcerr.ErrInvalidState)
	if _, err := s.FinishMail(ctx, again[0].ID, *again[0].LeaseUntil, true, ""); err != nil {
		t.Fatal(err)
	}
	ms, _ := s.Mails(ctx, "")
	if ms[1].State != store.MailDelivered || ms[1].FinishedAt == nil || ms[1].LeaseUntil != nil || ms[1].Attempts != 0 {
		t.Fatalf("delivered row = %+v", ms[1])
	}
	for _, bad := range []struct {
		worker string
		lease  time.Duration
	}{{"", time.Minute}, {"w", 0}} {
		_, err := s.ClaimMails(ctx, bad.worker, 1, bad.lease)
		wantErr(t, err, svcerr.ErrInvalid)
	}
}

func TestMailRetryScheduleAndGiveUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	if err := s.EnqueueMail(ctx, newMail("ada@example.com", "Reset")); err != nil {
		t.Fatal(err)
	}
	want := store.MailBackoff.Delays
	if want[0] != 30*time.Second || want[4] != 8*time.Minute || store.MailBackoff.MaxAttempts() != len(want)+1 {
		t.Fatalf("MailBackoff = %v", want)
	}
	last := store.MailBackoff.MaxAttempts()
	for attempt := 1; attempt <= last; attempt++ {
		got, err := s.ClaimMails(ctx, "d", 25, time.Minute)
		if err != nil || len(got) != 1 || got[0].Attempts != attempt-1 {
			t.Fatalf("attempt %d: claim = %+v, %v", attempt, got, err)
		}
		gaveUp, err := s.FinishMail(ctx, got[0].ID, *got[0].LeaseUntil, false, fmt.Sprintf("dial: refused (attempt %d)\x00", attempt))
		if err != nil || gaveUp != (attempt == last) {
			t.Fatalf("attempt %d: FinishMail = %v, %v", attempt, gaveUp, err)
		}
		m := must1(t, s)
		if m.Attempts != attempt || m.LastError == nil || *m.LastError != fmt.Sprintf("dial: refused (attempt %d)", attempt) || m.LeaseUntil != nil {
			t.Fatalf("attempt %d: row = %+v", attempt, m)
		}
		if attempt == last {
			if m.State != store.MailFailed || m.FinishedAt == nil {
				t.Fatalf("after the last failure: %+v", m)
			}
			break
		}
		if m.State != store.MailPending || !m.NextAttemptAt.Equal(clock.Now().Add(want[attempt-1]).Truncate(time.Microsecond)) {
			t.Fatalf("attempt %d: next attempt %v, want now+%v", attempt, m.NextAttemptAt, want[attempt-1])
		}
		clock.Advance(want[attempt-1] - time.Second)
		if early, err := s.ClaimMails(ctx, "d", 25, time.Minute); err != nil || len(early) != 0 {
			t.Fatalf("attempt %d: claimed before due: %+v, %v", attempt, early, err)
		}
		clock.Advance(time.Second)
	}
	clock.Advance(24 * time.Hour)
	if got, err := s.ClaimMails(ctx, "d", 25, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("failed mail claimed: %+v, %v", got, err)
	}
}

func must1(t *testing.T, s *store.Store) store.Mail {
	t.Helper()
	ms, err := s.Mails(context.Background(), "")
	if err != nil || len(ms) != 1 {
		t.Fatalf("Mails = %+v, %v", ms, err)
	}
	return ms[0]
}

// TestCreateTokenQueuesMail: a link's mail commits with its token, or neither does.
func TestCreateTokenQueuesMail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s)
	tok := store.Token{Kind: store.TokenReset, UserID: u.ID, Selector: "abcdefghijklmnop", VerifierDigest: hookDigest,
		ExpiresAt: time.Now().Add(time.Hour)}
	if err := s.CreateToken(ctx, tok, newMail(u.Email, "Reset your password")); err != nil {
		t.Fatal(err)
	}
	if m := must1(t, s); m.Subject != "Reset your password" || m.To != u.Email {
		t.Fatalf("queued = %+v", m)
	}
	// The token fails (no such user): no mail.
	tok.UserID, tok.Selector = 999999, "qrstuvwxyzabcdef"
	if err := s.CreateToken(ctx, tok, newMail("ghost@example.com", "Reset")); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("CreateToken for a missing user = %v", err)
	}
	// The mail fails: no token.
	tok.UserID = u.ID
	if err := s.CreateToken(ctx, tok, store.NewMail{To: u.Email, Subject: "x", Kind: ""}); !errors.Is(err, svcerr.ErrInvalid) {
		t.Fatalf("CreateToken with a bad mail = %v", err)
	}
	if _, err := s.TokenBySelector(ctx, tok.Selector); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("token of a refused mail = %v", err)
	}
	must1(t, s)
}

// TestClaimMailsConcurrent: two dispatchers on separate connection pools never receive the same
// mail, and together they claim all of them.
func TestClaimMailsConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stores := storetest.NewShared(t, 2)
	const n = 40
	for i := range n {
		if err := stores[0].EnqueueMail(ctx, newMail(fmt.Sprintf("u%d@example.com", i), "hi")); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[int64]string{}
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := fmt.Sprintf("d%d", i)
			for {
				got, err := st.ClaimMails(ctx, w, 3, time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, m := range got {
					if prev, dup := seen[m.ID]; dup {
						t.Errorf("mail %d claimed by %s and %s", m.ID, prev, w)
					}
					seen[m.ID] = w
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d mails, want %d", len(seen), n)
	}
}
