package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

type mediaFixture struct {
	s     *store.Store
	clock *testkit.Clock
	user  *store.User
	other *store.User
	agent *store.Agent
	sub   *store.Agent // another agent of the same principal (sub-agent target)
	n     int
}

func newMediaFixture(t *testing.T) *mediaFixture {
	t.Helper()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	f := &mediaFixture{s: s, clock: clock, user: storetest.User(t, s), other: storetest.User(t, s)}
	f.agent = storetest.Agent(t, s, f.user.PrincipalID)
	f.sub = storetest.Agent(t, s, f.user.PrincipalID)
	return f
}

// asset creates an asset of principal p; mod adjusts it first.
func (f *mediaFixture) asset(t *testing.T, p int64, mod func(a *store.MediaAsset)) *store.MediaAsset {
	t.Helper()
	f.n++
	exp := f.clock.Now().Add(24 * time.Hour)
	a := store.MediaAsset{
		ID: fmt.Sprintf("med_test%04d", f.n), PrincipalID: p, Filename: "f.png", MimeType: "image/png",
		Kind: store.MediaKindImage, Size: 10, SHA256: strings.Repeat("a", 64), StorageKey: fmt.Sprintf("te/med_test%04d", f.n),
		ExpiresAt: &exp,
	}
	if mod != nil {
		mod(&a)
	}
	got, err := f.s.CreateMediaAsset(context.Background(), a)
	if err != nil {
		t.Fatalf("CreateMediaAsset: %v", err)
	}
	return got
}

func (f *mediaFixture) task(t *testing.T, agentID int64, parent *int64) *store.Task {
	t.Helper()
	tk, err := f.s.CreateTask(context.Background(), store.NewTask{
		AgentID: agentID, PrincipalID: f.user.PrincipalID, UserID: f.user.ID, ParentTaskID: parent, Prompt: "x", MaxSteps: 3,
	})
	if err != nil {
		t.Fatalf("CreateTask: %v", err)
	}
	return tk
}

func TestCreateAndReadMediaAsset(t *testing.T) {
	t.Parallel()
	f := newMediaFixture(t)
	ctx := context.Background()
	w, h := 3, 2
	a := f.asset(t, f.user.PrincipalID, func(a *store.MediaAsset) {
		a.Width, a.Height, a.UploadedBy, a.AgentID = &w, &h, &f.user.ID, &f.agent.ID
	})
	got, err := f.s.MediaAsset(ctx, a.ID)
	if err != nil || got.ID != a.ID || *got.Width != 3 || *got.Height != 2 || *got.UploadedBy != f.user.ID ||
		*got.AgentID != f.agent.ID || got.Keep || got.ExpiresAt == nil || !got.CreatedAt.Equal(t0.Truncate(time.Microsecond)) {
		t.Fatalf("MediaAsset = %+v, %v", got, err)
	}
	_, err = f.s.MediaAsset(ctx, "med_missing")
	wantErr(t, err, svcerr.ErrNotFound)
	_, err = f.s.MediaAssetAt(ctx, a.ID, t0.Add(25*time.Hour))
	wantErr(t, err, svcerr.ErrNotFound)
	_, err = f.s.MediaAsset(ctx, strings.Repeat("x", 65))
	wantErr(t, err, svcerr.ErrNotFound)

	// A kept asset has no expiry even when one is given.
	k := f.asset(t, f.user.PrincipalID, func(a *store.MediaAsset) { a.Keep = true })
	if k.ExpiresAt != nil || !k.Keep {
		t.Fatalf("kept asset = %+v", k)
	}

	for name, mod := range map[string]func(a *store.MediaAsset){
		// The row's shape is package media's (checkAsset, tested there); the store refuses the
		// references its foreign keys do not find.
		"unknown principal": func(a *store.MediaAsset) { a.PrincipalID = 99999 },
		"unknown agent":     func(a *store.MediaAsset) { x := int64(99999); a.AgentID = &x },
	} {
		t.Run(name, func(t *testing.T) {
			a := store.MediaAsset{ID: "med_bad", PrincipalID: f.user.PrincipalID, Filename: "x", MimeType: "image/png",
				Kind: store.MediaKindImage, SHA256: strings.Repeat("b", 64), StorageKey: "x/y"}
			mod(&a)
			_, err := f.s.CreateMediaAsset(ctx, a)
			wantErr(t, err, svcerr.ErrInvalid)
		})
	}
	_, err = f.s.CreateMediaAsset(ctx, store.MediaAsset{ID: a.ID, PrincipalID: f.user.PrincipalID, Filename: "x",
		MimeType: "image/png", Kind: store.MediaKindImage, SHA256: strings.Repeat("b", 64), StorageKey: "x/y"})
	wantErr(t, err, svcerr.ErrConflict)
}

func TestListMedia(t *testing.T) {
	t.Parallel()
	f := newMediaFixture(t)
	ctx := context.Background()
	var mine []string
	for i := range 5 {
		a := f.asset(t, f.user.PrincipalID, func(a *store.MediaAsset) {
			if i%2 == 1 {
				a.Kind, a.MimeType = store.MediaKindDocument, "application/pdf"
			}
		})
		mine = append(mine, a.ID)
		f.clock.Advance(time.Second)
	}
	theirs := f.asset(t, f.other.PrincipalID, nil)
	expired := f.asset(t, f.user.PrincipalID, func(a *store.MediaAsset) {
		e := f.clock.Now().Add(-time.Second)
		a.ExpiresAt = &e
	})

	ids := func(as []store.MediaAsset) string {
		var out []string
		for _, a := range as {
			out = append(out, a.ID)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		name string
		q    store.MediaQuery
		want []string
	}{
		{"mine newest first", store.MediaQuery{PrincipalIDs: []int64{f.user.PrincipalID}}, []string{mine[4], mine[3], mine[2], mine[1], mine[0]}},
		{"page 2", store.MediaQuery{PrincipalIDs: []int64{f.user.PrincipalID}, Page: 2, PerPage: 2}, []string{mine[2], mine[1]}},
		{"kind", store.MediaQuery{PrincipalIDs: []int64{f.user.PrincipalID}, Kind: store.MediaKindDocument}, []string{mine[3], mine[1]}},
		{"both principals", store.MediaQuery{PrincipalIDs: []int64{f.user.PrincipalID, f.other.PrincipalID}, PerPage: 2}, []string{theirs.ID, mine[4]}},
		{"no principals", store.MediaQuery{}, nil},
		{"huge page", store.MediaQuery{PrincipalIDs: []int64{f.user.PrincipalID}, Page: 1 << 40}, nil},
	} {
		got, err := f.s.ListMedia(ctx, tc.q)
		if err != nil || ids(got) != strings.Join(tc.want, ",") {
			t.Errorf("%s: ListMedia = %s, %v; want %v", tc.name, ids(got), err, tc.want)
		}
	}
	m, err := f.s.MediaAssets(ctx, []string{mine[0], expired.ID, "nope", ""})
	if err != nil || len(m) != 1 || m[mine[0]] == nil {
		t.Fatalf("MediaAssets = %v, %v", m, err)
	}
}

func TestSetMediaKeepAndSweep(t *testing.T) {
	t.Parallel()
	f := newMediaFixture(t)
	ctx := context.Background()
	a := f.asset(t, f.user.PrincipalID, nil)
	b := f.asset(t, f.user.PrincipalID, nil)
	attached := f.asset(t, f.user.PrincipalID, nil)
	tk := f.task(t, f.agent.ID, nil)
	if err := f.s.AttachTaskMedia(ctx, tk.ID, 1, []string{attached.ID, attached.ID}); err != nil {
		t.Fatalf("AttachTaskMedia: %v", err)
	}
	if err := f.s.AttachTaskMedia(ctx, tk.ID, 1, []string{attached.ID}); err != nil {
		t.Fatalf("AttachTaskMedia again: %v", err)
	}
	wantErr(t, f.s.AttachTaskMedia(ctx, tk.ID, 2, []string{"med_missing"}), svcerr.ErrInvalid)

	// check refuses: nothing changes.
	_, err := f.s.SetMediaKeep(ctx, a.ID, true, f.clock.Now(), time.Hour, func(*store.MediaAsset) error {
		return svcerr.New(svcerr.ErrForbidden, "no")
	})
	wantErr(t, err, svcerr.ErrForbidden)
	got, err := f.s.SetMediaKeep(ctx, a.ID, true, f.clock.Now(), time.Hour, nil)
	if err != nil || !got.Keep || got.ExpiresAt != nil {
		t.Fatalf("keep = %+v, %v", got, err)
	}
	_, err = f.s.SetMediaKeep(ctx, "med_missing", true, f.clock.Now(), time.Hour, nil)
	wantErr(t, err, svcerr.ErrNotFound)

	// Time passes: b expires; a is kept; attached lives through its chat.
	f.clock.Advance(25 * time.Hour)
	_, err = f.s.MediaAsset(ctx, b.ID)
	wantErr(t, err, svcerr.ErrNotFound)
	_, err = f.s.SetMediaKeep(ctx, b.ID, true, f.clock.Now(), time.Hour, nil)
	wantErr(t, err, svcerr.ErrNotFound)
	if _, err := f.s.MediaAsset(ctx, attached.ID); err != nil {
		t.Fatalf("attached asset: %v", err)
	}
	keys, err := f.s.SweepExpiredMedia(ctx, f.clock.Now(), 10)
	if err != nil || len(keys) != 1 || keys[0] != b.StorageKey {
		t.Fatalf("SweepExpiredMedia = %v, %v", keys, err)
	}
	keys, err = f.s.SweepExpiredMedia(ctx, f.clock.Now(), 10)
	if err != nil || len(keys) != 0 {
		t.Fatalf("second sweep = %v, %v", keys, err)
	}

	// Unkeep a: it expires at the given time; the chat goes away: attached is swept.
	exp := f.clock.Now().Add(time.Hour)
	got, err = f.s.SetMediaKeep(ctx, a.ID, false, f.clock.Now(), time.Hour, nil)
	if err != nil || got.Keep || got.ExpiresAt == nil || !got.ExpiresAt.Equal(exp.Truncate(time.Microsecond)) {
		t.Fatalf("unkeep = %+v, %v", got, err)
	}
	if err := f.s.DeleteTask(ctx, tk.ID); err != nil {
		t.Fatalf("DeleteTask: %v", err)
	}
	f.clock.Advance(2 * time.Hour)
	keys, err = f.s.SweepExpiredMedia(ctx, f.clock.Now(), 1)
	if err != nil || len(keys) != 1 {
		t.Fatalf("limited sweep = %v, %v", keys, err)
	}
	keys2, err := f.s.SweepExpiredMedia(ctx, f.clock.Now(), 0)
	if err != nil || len(keys2) != 1 || keys2[0] == keys[0] {
		t.Fatalf("sweep rest = %v, %v", keys2, err)
	}
}

func TestMediaReadableByAgent(t *testing.T) {
	t.Parallel()
	f := newMediaFixture(t)
	ctx := context.Background()
	other := storetest.Agent(t, f.s, f.other.PrincipalID, storetest.AgentNamed("Stranger"))
	chat := f.task(t, f.agent.ID, nil)
	child := f.task(t, f.sub.ID, &chat.ID)
	grandchild := f.task(t, f.sub.ID, &child.ID)
	subOwn := f.task(t, f.sub.ID, nil) // a chat of the sub agent itself, not below ours
	strangerChat := f.task(t, other.ID, nil)

	produced := f.asset(t, f.user.PrincipalID, func(a *store.MediaAsset) { a.AgentID = &f.agent.ID })
	inChat := f.asset(t, f.user.PrincipalID, func(a *store.MediaAsset) { a.TaskID = &chat.ID })
	inSub := f.asset(t, f.user.PrincipalID, func(a *store.MediaAsset) { a.AgentID, a.TaskID = &f.sub.ID, &grandchild.ID })
	attached := f.asset(t, f.other.PrincipalID, nil)
	attachedSub := f.asset(t, f.other.PrincipalID, nil)
	notOurs := f.asset(t, f.user.PrincipalID, func(a *store.MediaAsset) { a.AgentID, a.TaskID = &f.sub.ID, &subOwn.ID })
	stranger := f.asset(t, f.other.PrincipalID, func(a *store.MediaAsset) { a.AgentID, a.TaskID = &other.ID, &strangerChat.ID })
	attachedElsewhere := f.asset(t, f.other.PrincipalID, nil)
	expired := f.asset(t, f.user.PrincipalID, func(a *store.MediaAsset) {
		a.AgentID = &f.agent.ID
		e := f.clock.Now().Add(-time.Minute)
		a.ExpiresAt = &e
	})
	for _, l := range []struct {
		task int64
		id   string
	}{{chat.ID, attached.ID}, {child.ID, attachedSub.ID}, {strangerChat.ID, attachedElsewhere.ID}} {
		if err := f.s.AttachTaskMedia(ctx, l.task, 1, []string{l.id}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		id   string
		ok   bool
	}{
		{"produced by the agent", produced.ID, true},
		{"in its chat", inChat.ID, true},
		{"in a sub-agent task of its chat", inSub.ID, true},
		{"attached to its chat", attached.ID, true},
		{"attached to a sub-agent task", attachedSub.ID, true},
		{"another chat of the sub agent", notOurs.ID, false},
		{"another agent's", stranger.ID, false},
		{"attached to another agent's chat", attachedElsewhere.ID, false},
		{"expired", expired.ID, false},
		{"missing", "med_missing", false},
	} {
		got, err := f.s.MediaReadableByAgent(ctx, f.agent.ID, tc.id)
		if tc.ok && (err != nil || got.ID != tc.id) {
			t.Errorf("%s: MediaReadableByAgent = %v, %v; want the asset", tc.name, got, err)
		}
		if !tc.ok && (got != nil || !isNotFound(err)) {
			t.Errorf("%s: MediaReadableByAgent = %v, %v; want not found", tc.name, got, err)
		}
	}
	// The sub agent reaches what it produced, not its parent's chat.
	if _, err := f.s.MediaReadableByAgent(ctx, f.sub.ID, inSub.ID); err != nil {
		t.Errorf("sub agent, own output: %v", err)
	}
	if _, err := f.s.MediaReadableByAgent(ctx, f.sub.ID, inChat.ID); !isNotFound(err) {
		t.Errorf("sub agent, parent's chat: %v", err)
	}
}

func isNotFound(err error) bool {
	_, kind, ok := svcerr.Public(err)
	return ok && kind == svcerr.ErrNotFound
}
