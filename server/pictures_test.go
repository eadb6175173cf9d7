package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// pictureBase is the public base of the test engine (the request's host and the prefix).
const pictureBase = "http://localhost:8080" + apitest.Prefix + "/api/v1"

func pictureGIF(t testing.TB) []byte {
	t.Helper()
	img := image.NewPaletted(image.Rect(0, 0, 3, 2), color.Palette{color.Black, color.White})
	var b bytes.Buffer
	if err := gif.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// padded is data followed by zero bytes up to n bytes.
func padded(data []byte, n int) []byte {
	out := make([]byte, n)
	copy(out, data)
	return out
}

func postPicture(t testing.TB, c *apitest.Client, path string, parts ...mediaPart) *apitest.Response {
	t.Helper()
	body, ct := multipartBody(t, parts...)
	return c.Do(apitest.Request{Method: http.MethodPost, Path: path, Body: body, ContentType: ct})
}

func filePart(data []byte) mediaPart { return mediaPart{name: "file", filename: "me.img", data: data} }

// pictureSubject is one kind of picture under test.
type pictureSubject struct {
	upload, get string // POST/DELETE path, GET path
	others      []string
	owner       int64                                  // principal owning the asset
	url         string                                 // expected picture_url
	manager     *apitest.Client                        // may change the picture
	managers    []*apitest.Client                      // further clients that may change it
	viewer      *apitest.Client                        // sees it, may not change it (nil: none)
	invisible   *apitest.Client                        // cannot see it (nil: none)
	pictureURL  func(c *apitest.Client) *string        // the subject's picture_url as c sees it
	response    func(t *testing.T, body []byte) string // checks an upload answer; returns the media id or ""
}

// TestPictures runs every picture operation on users (me), agents and groups: upload, read,
// replace (the old asset and its file go), delete (idempotent), picture_url, the type and size
// rules and the access rules.
func TestPictures(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"me", "agent", "group"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			w := newAgentWorld(t)
			ctx := context.Background()
			var s pictureSubject
			switch kind {
			case "me":
				s = pictureSubject{upload: "/me/picture/image", get: "/me/picture",
					others: []string{fmt.Sprintf("/users/%d/picture", w.ownerU.Id)},
					owner:  w.ownerU.PrincipalId, url: fmt.Sprintf("%s/users/%d/picture", pictureBase, w.ownerU.Id),
					manager: w.owner, viewer: nil, invisible: nil,
					pictureURL: func(c *apitest.Client) *string {
						var r gen.UserResponse
						w.admin.Get(fmt.Sprintf("/users/%d", w.ownerU.Id)).Expect(t, 200).Decode(t, &r) // administrators only
						var me gen.UserResponse
						w.owner.Get("/auth/me").Expect(t, 200).Decode(t, &me)
						if !sameURL(me.Data.User.PictureUrl, r.Data.User.PictureUrl) {
							t.Fatalf("/auth/me picture_url %v, /users/{id} %v", me.Data.User.PictureUrl, r.Data.User.PictureUrl)
						}
						return r.Data.User.PictureUrl
					},
					response: func(t *testing.T, body []byte) string {
						var r gen.PictureResponse
						if err := json.Unmarshal(body, &r); err != nil {
							t.Fatal(err)
						}
						m := r.Data.Media
						if !m.Keep || m.ExpiresAt != nil || m.Kind != "image" || m.PrincipalId != w.ownerU.PrincipalId {
							t.Fatalf("picture asset = %+v", m)
						}
						return m.Id
					}}
			case "agent":
				ag := mkAgent(t, w.owner, map[string]any{"name": "Pic", "principal_id": w.teamP})
				p := fmt.Sprintf("/agents/%d/picture", ag.Id)
				s = pictureSubject{upload: p + "/image", get: p, owner: w.teamP, url: pictureBase + p,
					manager: w.owner, managers: []*apitest.Client{w.gadmin, w.admin}, viewer: w.member, invisible: w.stranger,
					pictureURL: func(c *apitest.Client) *string {
						u := getAgent(t, c, ag.Id).PictureUrl
						for _, a := range listAgents(t, c, "") {
							if a.Id == ag.Id && !sameURL(a.PictureUrl, u) {
								t.Fatalf("listed picture_url %v, read %v", a.PictureUrl, u)
							}
						}
						return u
					},
					response: func(t *testing.T, body []byte) string {
						var r gen.AgentResponse
						if err := json.Unmarshal(body, &r); err != nil {
							t.Fatal(err)
						}
						if r.Data.Agent.Id != ag.Id || r.Data.Agent.PictureUrl == nil || *r.Data.Agent.PictureUrl != pictureBase+p {
							t.Fatalf("upload answer = %+v", r.Data.Agent)
						}
						return ""
					}}
			case "group":
				p := fmt.Sprintf("/groups/%d/picture", w.team)
				s = pictureSubject{upload: p + "/image", get: p, owner: w.teamP, url: pictureBase + p,
					manager: w.owner, managers: []*apitest.Client{w.gadmin, w.admin}, viewer: w.member, invisible: w.stranger,
					pictureURL: func(c *apitest.Client) *string {
						var r gen.GroupResponse
						c.Get(fmt.Sprintf("/groups/%d", w.team)).Expect(t, 200).Decode(t, &r)
						return r.Data.Group.PictureUrl
					},
					response: func(t *testing.T, body []byte) string {
						var r gen.GroupResponse
						if err := json.Unmarshal(body, &r); err != nil {
							t.Fatal(err)
						}
						if r.Data.Group.Id != w.team || r.Data.Group.PictureUrl == nil || *r.Data.Group.PictureUrl != pictureBase+p {
							t.Fatalf("upload answer = %+v", r.Data.Group)
						}
						return ""
					}}
			}
			readers := append([]*apitest.Client{s.manager}, s.managers...)
			if s.viewer != nil {
				readers = append(readers, s.viewer)
			}
			gets := append([]string{s.get}, s.others...)
			if kind == "me" {
				readers = []*apitest.Client{w.owner}
			}

			// No picture yet.
			for _, g := range gets {
				w.owner.Get(g).Expect(t, 404, "NOT_FOUND")
			}
			if u := s.pictureURL(s.manager); u != nil {
				t.Fatalf("picture_url before upload = %q", *u)
			}

			// Errors leave no picture and no asset behind.
			before := assetsOf(t, w, s.owner)
			svg := []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"></svg>`)
			for _, tc := range []struct {
				name   string
				c      *apitest.Client
				parts  []mediaPart
				noCSRF bool
				status int
				code   string
			}{
				{"svg", s.manager, []mediaPart{filePart(svg)}, false, 415, "UNSUPPORTED_MEDIA_TYPE"},
				{"text", s.manager, []mediaPart{filePart([]byte("just some words"))}, false, 415, "UNSUPPORTED_MEDIA_TYPE"},
				{"pdf", s.manager, []mediaPart{filePart([]byte("%PDF-1.4\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\n"))}, false, 415, "UNSUPPORTED_MEDIA_TYPE"},
				{"5 MiB + 1", s.manager, []mediaPart{filePart(padded(mediaPNG(t, 2, 2), 5<<20+1))}, false, 413, "PAYLOAD_TOO_LARGE"},
				{"no file part", s.manager, []mediaPart{{name: "other", data: []byte("x")}}, false, 400, "BAD_REQUEST"},
				{"empty file", s.manager, []mediaPart{filePart(nil)}, false, 400, "BAD_REQUEST"},
				{"anonymous", w.env.Client(), []mediaPart{filePart(mediaPNG(t, 2, 2))}, false, 401, "UNAUTHENTICATED"},
				{"no csrf", s.manager, []mediaPart{filePart(mediaPNG(t, 2, 2))}, true, 403, ""},
			} {
				body, ct := multipartBody(t, tc.parts...)
				r := tc.c.Do(apitest.Request{Method: http.MethodPost, Path: s.upload, Body: body, ContentType: ct, NoCSRF: tc.noCSRF})
				if r.Status != tc.status || (tc.code != "" && r.Code() != tc.code) {
					t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Body, tc.status, tc.code)
				}
			}
			if s.viewer != nil {
				postPicture(t, s.viewer, s.upload, filePart(mediaPNG(t, 2, 2))).Expect(t, 403, "FORBIDDEN")
				s.viewer.Delete(s.upload).Expect(t, 403, "FORBIDDEN")
			}
			if s.invisible != nil {
				postPicture(t, s.invisible, s.upload, filePart(mediaPNG(t, 2, 2))).Expect(t, 404, "NOT_FOUND")
				s.invisible.Delete(s.upload).Expect(t, 404, "NOT_FOUND")
				s.invisible.Get(s.get).Expect(t, 404, "NOT_FOUND")
			}
			if after := assetsOf(t, w, s.owner); after != before {
				t.Fatalf("failed uploads left assets: %d → %d", before, after)
			}
			if u := s.pictureURL(s.manager); u != nil {
				t.Fatalf("picture_url after failed uploads = %q", *u)
			}

			// Upload, read, replace.
			first := padded(mediaPNG(t, 4, 3), 5<<20) // exactly 5 MiB is accepted
			r := postPicture(t, s.manager, s.upload, filePart(first)).Expect(t, 200)
			if id := s.response(t, r.Body); id != "" {
				if _, err := w.env.App.Store.MediaAsset(ctx, id); err != nil {
					t.Fatalf("uploaded asset: %v", err)
				}
			}
			firstID := pictureAsset(t, w, kind, s)
			firstFile := assetFile(t, w, firstID)
			for _, c := range readers {
				if u := s.pictureURL(c); !sameURL(u, &s.url) {
					t.Fatalf("picture_url = %v, want %s", u, s.url)
				}
				for _, g := range gets {
					got := c.Get(g).Expect(t, 200)
					if !bytes.Equal(got.Body, first) || got.Header.Get("Content-Type") != "image/png" ||
						got.Header.Get("X-Content-Type-Options") != "nosniff" {
						t.Fatalf("GET %s: %d bytes, %v", g, len(got.Body), got.Header)
					}
				}
			}
			if kind == "me" { // any signed-in user reads a user's picture
				w.stranger.Get(s.others[0]).Expect(t, 200)
				w.env.Client().Get(s.others[0]).Expect(t, 401)
			}
			second := pictureGIF(t)
			for i, c := range append([]*apitest.Client{s.manager}, s.managers...) {
				postPicture(t, c, s.upload, filePart(second)).Expect(t, 200)
				id := pictureAsset(t, w, kind, s)
				if got := s.manager.Get(s.get).Expect(t, 200); !bytes.Equal(got.Body, second) || got.Header.Get("Content-Type") != "image/gif" {
					t.Fatalf("after replacement %d: %d bytes %s", i, len(got.Body), got.Header.Get("Content-Type"))
				}
				if _, err := w.env.App.Store.MediaAsset(ctx, firstID); !errors.Is(err, svcerr.ErrNotFound) {
					t.Fatalf("the replaced asset %s is still there: %v", firstID, err)
				}
				if _, err := os.Stat(firstFile); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the replaced file %s is still there: %v", firstFile, err)
				}
				firstID, firstFile = id, assetFile(t, w, id)
			}

			// Delete, twice.
			if s.viewer != nil {
				s.viewer.Delete(s.upload).Expect(t, 403)
			}
			s.manager.Delete(s.upload).Expect(t, 200)
			for _, g := range gets {
				s.manager.Get(g).Expect(t, 404, "NOT_FOUND")
			}
			if u := s.pictureURL(s.manager); u != nil {
				t.Fatalf("picture_url after delete = %q", *u)
			}
			if _, err := w.env.App.Store.MediaAsset(ctx, firstID); !errors.Is(err, svcerr.ErrNotFound) {
				t.Fatalf("the deleted picture's asset is still there: %v", err)
			}
			if _, err := os.Stat(firstFile); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the deleted picture's file is still there: %v", err)
			}
			var d gen.DeletedResponse
			s.manager.Delete(s.upload).Expect(t, 200).Decode(t, &d)
			if !d.Data.Deleted {
				t.Fatal("second delete: deleted = false")
			}
		})
	}
}

// TestPictureNotFound: unknown subjects answer 404.
func TestPictureNotFound(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	png := mediaPNG(t, 2, 2)
	for _, path := range []string{"/users/999999/picture", "/agents/999999/picture", "/agents/abc/picture", "/groups/999999/picture",
		fmt.Sprintf("/users/%d/picture", w.memberU.Id)} {
		w.admin.Get(path).Expect(t, 404, "NOT_FOUND")
	}
	for _, path := range []string{"/agents/999999/picture/image", "/agents/abc/picture/image", "/groups/999999/picture/image"} {
		postPicture(t, w.admin, path, filePart(png)).Expect(t, 404, "NOT_FOUND")
		w.admin.Delete(path).Expect(t, 404, "NOT_FOUND")
	}
}

// TestAgentPictureFollowsVisibility: a personal agent's picture is read by its owner only (and
// administrators); its owner's group fellows do not see it.
func TestAgentPictureFollowsVisibility(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	ag := mkAgent(t, w.owner, map[string]any{"name": "Mine"})
	p := fmt.Sprintf("/agents/%d/picture", ag.Id)
	var r gen.AgentResponse
	postPicture(t, w.owner, p+"/image", filePart(mediaPNG(t, 2, 2))).Expect(t, 200).Decode(t, &r)
	if r.Data.Agent.PictureUrl == nil || *r.Data.Agent.PictureUrl != pictureBase+p {
		t.Fatalf("picture_url = %v", r.Data.Agent.PictureUrl)
	}
	w.owner.Get(p).Expect(t, 200)
	w.admin.Get(p).Expect(t, 200)
	w.member.Get(p).Expect(t, 404)
	postPicture(t, w.member, p+"/image", filePart(mediaPNG(t, 2, 2))).Expect(t, 404)
	if n := assetsOf(t, w, w.ownerU.PrincipalId); n != 1 {
		t.Fatalf("owner's assets = %d, want the picture", n)
	}
}

func sameURL(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// assetsOf counts the live assets of a principal.
func assetsOf(t *testing.T, w *agentWorld, principal int64) int {
	t.Helper()
	n := 0
	for page := 1; ; page++ {
		list, err := w.env.App.Media.List(context.Background(), store.MediaQuery{PrincipalIDs: []int64{principal}, Page: page, PerPage: 100})
		if err != nil {
			t.Fatal(err)
		}
		n += len(list)
		if len(list) < 100 {
			return n
		}
	}
}

// pictureAsset reads the current picture's media id of the subject from the store.
func pictureAsset(t *testing.T, w *agentWorld, kind string, s pictureSubject) string {
	t.Helper()
	ctx := context.Background()
	var id *string
	switch kind {
	case "me":
		u, err := w.env.App.Store.UserByID(ctx, w.ownerU.Id)
		if err != nil {
			t.Fatal(err)
		}
		id = u.PictureMediaID
	case "agent":
		var aid int64
		fmt.Sscanf(strings.TrimPrefix(s.get, "/agents/"), "%d", &aid)
		a, err := w.env.App.Store.Agent(ctx, aid, 0)
		if err != nil {
			t.Fatal(err)
		}
		id = a.PictureMediaID
	case "group":
		g, err := w.env.App.Store.GroupByID(ctx, w.team)
		if err != nil {
			t.Fatal(err)
		}
		id = g.PictureMediaID
	}
	if id == nil {
		t.Fatal("no picture stored")
	}
	m, err := w.env.App.Store.MediaAsset(ctx, *id)
	if err != nil {
		t.Fatal(err)
	}
	if m.PrincipalID != s.owner || !m.Keep || m.Kind != "image" {
		t.Fatalf("picture asset = %+v, want a kept image of principal %d", m, s.owner)
	}
	return *id
}

// assetFile is the path of an asset's file, which must exist.
func assetFile(t *testing.T, w *agentWorld, id string) string {
	t.Helper()
	m, err := w.env.App.Store.MediaAsset(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(w.env.App.Media.Dir(), filepath.FromSlash(m.StorageKey))
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}
