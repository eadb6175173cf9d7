package store

import (
	"math"
	"slices"
	"testing"
)

// TestWakePayloads: a commit naming more tasks than one notification holds is split, every
// payload within PostgreSQL's 8000 bytes, the flags sent once; another store decodes them all,
// and the sender skips its own.
func TestWakePayloads(t *testing.T) {
	ids := make([]int64, 2*maxWakeIDs+50)
	for i := range ids {
		ids[i] = math.MaxInt64 - int64(i) // the longest ids
	}
	c := Commit{EventTasks: ids, TaskQueued: true, Noticed: true}
	ps := wakePayloads("me", c)
	if len(ps) != 3 {
		t.Fatalf("%d payloads, want 3", len(ps))
	}
	sender, other := &Store{wake: wake{origin: "me"}}, &Store{wake: wake{origin: "you"}}
	var got []int64
	for i, p := range ps {
		if len(p) > 8000 {
			t.Fatalf("payload %d: %d bytes", i, len(p))
		}
		if _, ok := sender.WakeCommit(p); ok {
			t.Fatalf("the sender took its own payload %d", i)
		}
		d, ok := other.WakeCommit(p)
		if !ok {
			t.Fatalf("payload %d not decoded: %s", i, p)
		}
		if d.TaskQueued != (i == 0) || d.Noticed != (i == 0) || d.MailQueued {
			t.Fatalf("payload %d flags: %+v", i, d)
		}
		got = append(got, d.EventTasks...)
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("ids: got %d, want %d", len(got), len(ids))
	}
	if ps := wakePayloads("me", Commit{MailQueued: true}); len(ps) != 1 {
		t.Fatalf("a commit without events: %d payloads", len(ps))
	} else if d, ok := other.WakeCommit(ps[0]); !ok || !d.MailQueued {
		t.Fatalf("mail: %+v %v", d, ok)
	}
	for _, bad := range []string{"", "{", `{"o":"you"}`, string(make([]byte, 8001))} {
		if d, ok := other.WakeCommit(bad); ok {
			t.Fatalf("%q decoded as %+v", bad, d)
		}
	}
}

// FuzzWakeCommit: any payload on the channel (another deployment's, a hand-sent NOTIFY) decodes
// without panicking, and what decodes encodes back to the same commit.
func FuzzWakeCommit(f *testing.F) {
	for _, p := range wakePayloads("a", Commit{EventTasks: []int64{1, 2}, TaskQueued: true}) {
		f.Add(p)
	}
	f.Add(`{"o":"b","m":true}`)
	f.Add(`{"o":1,"e":"x"}`)
	s := &Store{wake: wake{origin: "me"}}
	f.Fuzz(func(t *testing.T, p string) {
		c, ok := s.WakeCommit(p)
		if !ok {
			return
		}
		back, ok := s.WakeCommit(wakePayloads("other", c)[0])
		if !ok || back.TaskQueued != c.TaskQueued || back.MailQueued != c.MailQueued || back.Noticed != c.Noticed {
			t.Fatalf("%q: %+v then %+v", p, c, back)
		}
	})
}
