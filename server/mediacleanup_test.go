package server_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
)

// TestDeletedSubjectsLoseMediaFiles: deleting a user or a group removes the files of its media
// assets (pictures included) at once; deleting an agent expires its picture, which the next
// sweep removes with its file. Other principals' files stay.
func TestDeletedSubjectsLoseMediaFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// prepare creates the subject with a picture and assets through the API and returns the
		// storage keys that must go, and the deletion path.
		prepare func(t *testing.T, w *mediaWorld) (keys []string, path string)
		del     func(w *mediaWorld) *apitest.Client
		sweep   bool // the files go with the next sweep, not at once
	}{
		{"user", func(t *testing.T, w *mediaWorld) ([]string, string) {
			up := mustUpload(t, w.stranger, mediaPart{name: "file", filename: "a.txt", data: []byte("mine")})
			postPicture(t, w.stranger, "/me/picture/image", filePart(mediaPNG(t, 2, 2))).Expect(t, 200)
			u, err := w.env.App.Store.UserByID(context.Background(), w.strangerU.Id)
			if err != nil || u.PictureMediaID == nil {
				t.Fatalf("user picture: %+v, %v", u, err)
			}
			return []string{keyOf(t, w, up.Id), keyOf(t, w, *u.PictureMediaID), w.strangerAsset.StorageKey},
				fmt.Sprintf("/users/%d", w.strangerU.Id)
		}, func(w *mediaWorld) *apitest.Client { return w.admin }, false},
		{"group", func(t *testing.T, w *mediaWorld) ([]string, string) {
			g, gp := mkGroup(t, w.owner, "doomed", nil)
			postPicture(t, w.owner, fmt.Sprintf("/groups/%d/picture/image", g), filePart(mediaPNG(t, 2, 2))).Expect(t, 200)
			gr, err := w.env.App.Store.GroupByID(context.Background(), g)
			if err != nil || gr.PictureMediaID == nil {
				t.Fatalf("group picture: %+v, %v", gr, err)
			}
			a := w.save(t, gp, "g.txt", []byte("group notes"), nil)
			return []string{keyOf(t, w, *gr.PictureMediaID), a.StorageKey}, fmt.Sprintf("/groups/%d", g)
		}, func(w *mediaWorld) *apitest.Client { return w.owner }, false},
		{"agent", func(t *testing.T, w *mediaWorld) ([]string, string) {
			ag := mkAgent(t, w.owner, map[string]any{"name": "Pic"})
			postPicture(t, w.owner, fmt.Sprintf("/agents/%d/picture/image", ag.Id), filePart(mediaPNG(t, 2, 2))).Expect(t, 200)
			a, err := w.env.App.Store.Agent(context.Background(), ag.Id, 0)
			if err != nil || a.PictureMediaID == nil {
				t.Fatalf("agent picture: %+v, %v", a, err)
			}
			return []string{keyOf(t, w, *a.PictureMediaID)}, fmt.Sprintf("/agents/%d", ag.Id)
		}, func(w *mediaWorld) *apitest.Client { return w.owner }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newMediaWorld(t)
			keys, path := tc.prepare(t, w)
			mine := mustUpload(t, w.owner, mediaPart{name: "file", filename: "keep.txt", data: []byte("stays")}, mediaPart{name: "keep", data: []byte("true")})
			survivors := []string{w.teamAsset.StorageKey, keyOf(t, w, mine.Id)}
			exists := func(key string) bool {
				_, err := os.Stat(filepath.Join(w.env.App.Media.Dir(), filepath.FromSlash(key)))
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
				return err == nil
			}
			for _, k := range append(keys, survivors...) {
				if !exists(k) {
					t.Fatalf("file %s missing before the deletion", k)
				}
			}
			tc.del(w).Delete(path).Expect(t, 200)
			if tc.sweep {
				for _, k := range keys {
					if !exists(k) {
						t.Fatalf("file %s removed before the sweep", k)
					}
				}
				if n, err := w.env.App.Media.Sweep(context.Background()); err != nil || n != len(keys) {
					t.Fatalf("Sweep = %d, %v; want %d", n, err, len(keys))
				}
			}
			for _, k := range keys {
				if exists(k) {
					t.Errorf("file %s of the deleted %s remains", k, tc.name)
				}
			}
			for _, k := range survivors {
				if !exists(k) {
					t.Errorf("file %s of another subject was removed", k)
				}
			}
		})
	}
}

// keyOf returns the storage key of a live asset.
func keyOf(t *testing.T, w *mediaWorld, id string) string {
	t.Helper()
	a, err := w.env.App.Store.MediaAsset(context.Background(), id)
	if err != nil {
		t.Fatalf("asset %s: %v", id, err)
	}
	return a.StorageKey
}
