package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// errOf drops the storage keys of DeleteUser and DeleteGroup.
func errOf(_ []string, err error) error { return err }

func keysOf(as ...*store.MediaAsset) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.StorageKey
	}
	slices.Sort(out)
	return out
}

func sorted(keys []string) []string {
	out := slices.Clone(keys)
	slices.Sort(out)
	return out
}

func TestDeleteUserReturnsMediaKeys(t *testing.T) {
	t.Parallel()
	f := newMediaFixture(t)
	ctx := context.Background()
	u := f.user
	kept := f.asset(t, u.PrincipalID, func(a *store.MediaAsset) { a.Keep = true })
	unkept := f.asset(t, u.PrincipalID, nil)
	derived := f.asset(t, u.PrincipalID, func(a *store.MediaAsset) { a.ParentID = &kept.ID; a.AgentID = &f.agent.ID })
	attached := f.asset(t, u.PrincipalID, nil)
	tk := f.task(t, f.agent.ID, nil)
	if err := f.s.AttachTaskMedia(ctx, tk.ID, 1, []string{attached.ID}); err != nil {
		t.Fatal(err)
	}
	userPic := f.asset(t, u.PrincipalID, func(a *store.MediaAsset) { a.Keep = true })
	agentPic := f.asset(t, u.PrincipalID, func(a *store.MediaAsset) { a.Keep = true })
	for _, p := range []struct {
		subject store.PictureSubject
		id      int64
		media   string
	}{{store.PictureOfUser, u.ID, userPic.ID}, {store.PictureOfAgent, f.agent.ID, agentPic.ID}} {
		if _, err := f.s.SetPicture(ctx, p.subject, p.id, &p.media, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Another user's asset derived from and uploaded by the user stays (references cleared).
	theirs := f.asset(t, f.other.PrincipalID, func(a *store.MediaAsset) { a.Keep = true; a.ParentID = &kept.ID; a.UploadedBy = &u.ID })
	// A group the user is the last owner of refuses the deletion: nothing is returned or removed.
	g := storetest.Group(t, f.s, u)
	team := f.asset(t, g.PrincipalID, func(a *store.MediaAsset) { a.UploadedBy = &u.ID })

	keys, err := f.s.DeleteUser(ctx, u.ID)
	if !errors.Is(err, svcerr.ErrConflict) || keys != nil {
		t.Fatalf("refused DeleteUser = %v, %v", keys, err)
	}
	if _, err := f.s.MediaAsset(ctx, kept.ID); err != nil {
		t.Fatalf("a refused deletion removed an asset: %v", err)
	}
	keys, err = f.s.DeleteGroup(ctx, g.ID)
	if err != nil || !slices.Equal(sorted(keys), keysOf(team)) {
		t.Fatalf("DeleteGroup = %v, %v; want %v", keys, err, keysOf(team))
	}

	keys, err = f.s.DeleteUser(ctx, u.ID)
	if want := keysOf(kept, unkept, derived, attached, userPic, agentPic); err != nil || !slices.Equal(sorted(keys), want) {
		t.Fatalf("DeleteUser = %v, %v; want %v", keys, err, want)
	}
	if n := countRows(t, f.s, "media_assets", "principal_id = ?", u.PrincipalID); n != 0 {
		t.Fatalf("%d asset rows of the deleted user remain", n)
	}
	got, err := f.s.MediaAsset(ctx, theirs.ID)
	if err != nil || got.ParentID != nil || got.UploadedBy != nil {
		t.Fatalf("the other user's asset = %+v, %v", got, err)
	}
	keys, err = f.s.DeleteUser(ctx, u.ID)
	if !errors.Is(err, svcerr.ErrNotFound) || keys != nil {
		t.Fatalf("second DeleteUser = %v, %v", keys, err)
	}
	// The other user goes with its own asset; a user without assets gives no keys.
	if keys, err := f.s.DeleteUser(ctx, f.other.ID); err != nil || keys == nil || len(keys) != 1 || keys[0] != theirs.StorageKey {
		t.Fatalf("DeleteUser(other) = %v, %v", keys, err)
	}
	lonely := storetest.User(t, f.s)
	if keys, err := f.s.DeleteUser(ctx, lonely.ID); err != nil || len(keys) != 0 {
		t.Fatalf("DeleteUser without assets = %v, %v", keys, err)
	}
}

func TestDeleteGroupReturnsMediaKeys(t *testing.T) {
	t.Parallel()
	f := newMediaFixture(t)
	ctx := context.Background()
	g := storetest.Group(t, f.s, f.user)
	keep := storetest.Group(t, f.s, f.user)
	pic := f.asset(t, g.PrincipalID, func(a *store.MediaAsset) { a.Keep = true })
	if _, err := f.s.SetPicture(ctx, store.PictureOfGroup, g.ID, &pic.ID, nil); err != nil {
		t.Fatal(err)
	}
	upload := f.asset(t, g.PrincipalID, func(a *store.MediaAsset) { a.UploadedBy = &f.user.ID })
	other := f.asset(t, keep.PrincipalID, nil)
	mine := f.asset(t, f.user.PrincipalID, nil)

	// Refused while the group owns an agent: no keys, nothing removed.
	bot := storetest.Agent(t, f.s, g.PrincipalID, storetest.AgentNamed("bot"))
	keys, err := f.s.DeleteGroup(ctx, g.ID)
	if !errors.Is(err, svcerr.ErrInvalidState) || keys != nil {
		t.Fatalf("refused DeleteGroup = %v, %v", keys, err)
	}
	if _, err := f.s.MediaAsset(ctx, pic.ID); err != nil {
		t.Fatalf("a refused deletion removed the picture: %v", err)
	}
	if err := f.s.DeleteAgent(ctx, bot.ID, nil); err != nil {
		t.Fatal(err)
	}

	keys, err = f.s.DeleteGroup(ctx, g.ID)
	if want := keysOf(pic, upload); err != nil || !slices.Equal(sorted(keys), want) {
		t.Fatalf("DeleteGroup = %v, %v; want %v", keys, err, want)
	}
	if n := countRows(t, f.s, "media_assets", "principal_id = ?", g.PrincipalID); n != 0 {
		t.Fatalf("%d asset rows of the deleted group remain", n)
	}
	for _, a := range []*store.MediaAsset{other, mine} {
		if _, err := f.s.MediaAsset(ctx, a.ID); err != nil {
			t.Fatalf("asset %s of another principal: %v", a.ID, err)
		}
	}
	if keys, err := f.s.DeleteGroup(ctx, g.ID); !errors.Is(err, svcerr.ErrNotFound) || keys != nil {
		t.Fatalf("second DeleteGroup = %v, %v", keys, err)
	}
}

func TestDeleteAgentExpiresPicture(t *testing.T) {
	t.Parallel()
	f := newMediaFixture(t)
	ctx := context.Background()
	pic := f.asset(t, f.user.PrincipalID, func(a *store.MediaAsset) { a.Keep = true })
	subPic := f.asset(t, f.user.PrincipalID, func(a *store.MediaAsset) { a.Keep = true })
	for _, p := range []struct {
		id    int64
		media string
	}{{f.agent.ID, pic.ID}, {f.sub.ID, subPic.ID}} {
		if _, err := f.s.SetPicture(ctx, store.PictureOfAgent, p.id, &p.media, nil); err != nil {
			t.Fatal(err)
		}
	}
	produced := f.asset(t, f.user.PrincipalID, func(a *store.MediaAsset) { a.Keep = true; a.AgentID = &f.agent.ID })

	// A refused deletion changes nothing.
	refused := errors.New("refused")
	if err := f.s.DeleteAgent(ctx, f.agent.ID, func(*store.Agent) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("refused DeleteAgent: %v", err)
	}
	if got, err := f.s.MediaAsset(ctx, pic.ID); err != nil || !got.Keep || got.ExpiresAt != nil {
		t.Fatalf("picture after a refused deletion = %+v, %v", got, err)
	}

	f.clock.Advance(time.Minute)
	if err := f.s.DeleteAgent(ctx, f.agent.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.MediaAsset(ctx, pic.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("the deleted agent's picture is still live: %v", err)
	}
	keys, err := f.s.SweepExpiredMedia(ctx, f.clock.Now(), 10)
	if err != nil || !slices.Equal(keys, []string{pic.StorageKey}) {
		t.Fatalf("SweepExpiredMedia = %v, %v; want the picture", keys, err)
	}
	if n := countRows(t, f.s, "media_assets", "id = ?", pic.ID); n != 0 {
		t.Fatal("the swept picture row remains")
	}
	if got, err := f.s.MediaAsset(ctx, subPic.ID); err != nil || !got.Keep {
		t.Fatalf("the other agent's picture = %+v, %v", got, err)
	}
	if got, err := f.s.MediaAsset(ctx, produced.ID); err != nil || !got.Keep || got.AgentID != nil {
		t.Fatalf("an asset the agent produced = %+v, %v", got, err)
	}
}

func TestMediaStorageKeys(t *testing.T) {
	t.Parallel()
	f := newMediaFixture(t)
	ctx := context.Background()
	live := f.asset(t, f.user.PrincipalID, nil)
	expired := f.asset(t, f.user.PrincipalID, func(a *store.MediaAsset) { e := f.clock.Now(); a.ExpiresAt = &e })
	got, err := f.s.MediaStorageKeys(ctx, []string{live.ID, expired.ID, "med_missing", ""})
	if err != nil || len(got) != 2 || got[live.ID] != live.StorageKey || got[expired.ID] != expired.StorageKey {
		t.Fatalf("MediaStorageKeys = %v, %v", got, err)
	}
	if got, err := f.s.MediaStorageKeys(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("MediaStorageKeys(nil) = %v, %v", got, err)
	}
}
