package media_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/domain/media"
)

func TestSweepOrphans(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if n, err := f.svc.SweepOrphans(ctx); err != nil || n != 0 {
		t.Fatalf("SweepOrphans without a directory = %d, %v", n, err)
	}
	a, err := f.svc.Save(ctx, media.NewAsset{PrincipalID: f.user.PrincipalID, Data: strings.NewReader("has a row")})
	if err != nil {
		t.Fatal(err)
	}
	expired, err := f.svc.Save(ctx, media.NewAsset{PrincipalID: f.user.PrincipalID, Data: strings.NewReader("expired row")})
	if err != nil {
		t.Fatal(err)
	}
	old := f.clock.Now().Add(-media.OrphanAge - time.Minute)
	young := f.clock.Now().Add(-media.OrphanAge + time.Minute)
	file := func(key string, mtime time.Time) string {
		t.Helper()
		p := filepath.Join(f.dir, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, key string
		mtime     time.Time
		gone      bool
	}{
		{"asset file", a.StorageKey, old, false},
		{"expired asset file (Sweep's job)", expired.StorageKey, old, false},
		{"old orphan", "zz/med_zzzzzzzzzzzzzzzzzzzzzzzzzz", old, true},
		{"orphan under another asset's id", "yy/" + a.ID, old, true},
		{"young orphan (upload in flight)", "zz/med_yyyyyyyyyyyyyyyyyyyyyyyyyy", young, false},
		{"old temporary upload", "zz/.upload-123", old, true},
		{"young temporary upload", "zz/.upload-456", young, false},
		{"unknown file", "zz/notes.txt", old, false},
		{"inline file a killed request left", ".inline/svc-inline-1", old, true},
		{"inline file of a request in flight", ".inline/svc-inline-2", young, false},
		{"hidden directory", ".trash/med_zzzzzzzzzzzzzzzzzzzzzzzzzz", old, false},
		{"top-level file", "med_zzzzzzzzzzzzzzzzzzzzzzzzzz", old, false},
	} {
		p := file(tc.key, tc.mtime)
		t.Cleanup(func() {
			if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) != tc.gone {
				t.Errorf("%s (%s): removed %v, want %v", tc.name, tc.key, !tc.gone, tc.gone)
			}
		})
	}
	if n, err := f.svc.SweepOrphans(ctx); err != nil || n != 4 {
		t.Fatalf("SweepOrphans = %d, %v; want 4", n, err)
	}
	if n, err := f.svc.SweepOrphans(ctx); err != nil || n != 0 {
		t.Fatalf("second SweepOrphans = %d, %v", n, err)
	}
}

// Sweep runs the orphan scan on its first call and then once a day.
func TestSweepRunsOrphanScanDaily(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	orphan := func(name string) string {
		t.Helper()
		p := filepath.Join(f.dir, "zz", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		mt := f.clock.Now().Add(-media.OrphanAge - time.Minute)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	first := orphan("med_aaaaaaaaaaaaaaaaaaaaaaaaaa")
	if n, err := f.svc.Sweep(ctx); err != nil || n != 0 || exists(first) {
		t.Fatalf("first Sweep = %d, %v; orphan left %v", n, err, exists(first))
	}
	second := orphan("med_bbbbbbbbbbbbbbbbbbbbbbbbbb")
	f.clock.Advance(23 * time.Hour)
	if _, err := f.svc.Sweep(ctx); err != nil || !exists(second) {
		t.Fatalf("Sweep within the day: %v; orphan removed %v", err, !exists(second))
	}
	f.clock.Advance(time.Hour)
	if _, err := f.svc.Sweep(ctx); err != nil || exists(second) {
		t.Fatalf("Sweep a day later: %v; orphan left %v", err, exists(second))
	}
}
