package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func TestSetPicture(t *testing.T) {
	t.Parallel()
	f := newMediaFixture(t)
	ctx := context.Background()
	g := storetest.Group(t, f.s, f.user)
	// picture reads the subject's picture id and updated_at.
	picture := func(t *testing.T, subject store.PictureSubject, id int64) (*string, time.Time) {
		t.Helper()
		switch subject {
		case store.PictureOfUser:
			u, err := f.s.UserByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return u.PictureMediaID, u.UpdatedAt
		case store.PictureOfAgent:
			a, err := f.s.Agent(ctx, id, 0)
			if err != nil {
				t.Fatal(err)
			}
			return a.PictureMediaID, a.UpdatedAt
		default:
			gr, err := f.s.GroupByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return gr.PictureMediaID, gr.UpdatedAt
		}
	}
	for _, tc := range []struct {
		subject   store.PictureSubject
		id        int64
		principal int64
		fk        bool // picture_media_id references media_assets
	}{
		{store.PictureOfUser, f.user.ID, f.user.PrincipalID, true},
		{store.PictureOfAgent, f.agent.ID, f.agent.PrincipalID, true},
		{store.PictureOfGroup, g.ID, g.PrincipalID, false},
	} {
		t.Run(string(tc.subject), func(t *testing.T) {
			a := f.asset(t, tc.principal, func(a *store.MediaAsset) { a.Keep = true })
			b := f.asset(t, tc.principal, func(a *store.MediaAsset) { a.Keep = true })

			if _, err := f.s.SetPicture(ctx, tc.subject, 999999, &a.ID, nil); !errors.Is(err, svcerr.ErrNotFound) {
				t.Fatalf("unknown subject: %v", err)
			}
			var seen int64
			refused := errors.New("refused")
			_, err := f.s.SetPicture(ctx, tc.subject, tc.id, &a.ID, func(p int64) error { seen = p; return refused })
			if !errors.Is(err, refused) || seen != tc.principal {
				t.Fatalf("check: err %v, principal %d want %d", err, seen, tc.principal)
			}
			if id, _ := picture(t, tc.subject, tc.id); id != nil {
				t.Fatalf("a refused write set the picture to %s", *id)
			}
			if tc.fk {
				missing := "med_missing"
				if _, err := f.s.SetPicture(ctx, tc.subject, tc.id, &missing, nil); !errors.Is(err, svcerr.ErrInvalid) {
					t.Fatalf("unknown asset: %v", err)
				}
			}

			f.clock.Advance(time.Minute)
			key, err := f.s.SetPicture(ctx, tc.subject, tc.id, &a.ID, nil)
			if id, at := picture(t, tc.subject, tc.id); err != nil || key != "" || id == nil || *id != a.ID || !at.Equal(f.clock.Now().Truncate(time.Microsecond)) {
				t.Fatalf("set: key %q err %v picture %v at %v", key, err, id, at)
			}
			if key, err := f.s.SetPicture(ctx, tc.subject, tc.id, &a.ID, nil); err != nil || key != "" {
				t.Fatalf("same picture again: %q %v", key, err)
			}
			if _, err := f.s.MediaAsset(ctx, a.ID); err != nil {
				t.Fatalf("setting the same picture again removed it: %v", err)
			}
			key, err = f.s.SetPicture(ctx, tc.subject, tc.id, &b.ID, nil)
			if id, _ := picture(t, tc.subject, tc.id); err != nil || key != a.StorageKey || id == nil || *id != b.ID {
				t.Fatalf("replace: key %q err %v picture %v", key, err, id)
			}
			if _, err := f.s.MediaAsset(ctx, a.ID); !errors.Is(err, svcerr.ErrNotFound) {
				t.Fatalf("the replaced asset is still there: %v", err)
			}
			key, err = f.s.SetPicture(ctx, tc.subject, tc.id, nil, nil)
			if id, _ := picture(t, tc.subject, tc.id); err != nil || key != b.StorageKey || id != nil {
				t.Fatalf("clear: key %q err %v picture %v", key, err, id)
			}
			if _, err := f.s.MediaAsset(ctx, b.ID); !errors.Is(err, svcerr.ErrNotFound) {
				t.Fatalf("the cleared asset is still there: %v", err)
			}
			if key, err := f.s.SetPicture(ctx, tc.subject, tc.id, nil, nil); err != nil || key != "" {
				t.Fatalf("clear again: %q %v", key, err)
			}
		})
	}
}

func TestDiscardMediaAsset(t *testing.T) {
	t.Parallel()
	f := newMediaFixture(t)
	ctx := context.Background()
	a := f.asset(t, f.user.PrincipalID, func(a *store.MediaAsset) { a.Keep = true })
	if key, err := f.s.DiscardMediaAsset(ctx, a.ID); err != nil || key != a.StorageKey {
		t.Fatalf("discard: %q %v", key, err)
	}
	if _, err := f.s.MediaAsset(ctx, a.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("the discarded asset is still there: %v", err)
	}
	if key, err := f.s.DiscardMediaAsset(ctx, a.ID); err != nil || key != "" {
		t.Fatalf("discard again: %q %v", key, err)
	}
}
