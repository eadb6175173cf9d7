package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// mediaPNG is a w × h PNG.
func mediaPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, 0, color.NRGBA{R: uint8(x), A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// mediaPart is one part of a multipart body: a file when filename is set, a field otherwise.
type mediaPart struct {
	name, filename string
	data           []byte
}

// multipartBody encodes parts and returns the body and its Content-Type.
func multipartBody(t testing.TB, parts ...mediaPart) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		if p.filename != "" {
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.name, p.filename))
			h.Set("Content-Type", "application/octet-stream")
		} else {
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q`, p.name))
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = pw.Write(p.data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), w.FormDataContentType()
}

func uploadMedia(t testing.TB, c *apitest.Client, parts ...mediaPart) *apitest.Response {
	t.Helper()
	body, ct := multipartBody(t, parts...)
	return c.Do(apitest.Request{Method: http.MethodPost, Path: "/media", Body: body, ContentType: ct})
}

func mustUpload(t *testing.T, c *apitest.Client, parts ...mediaPart) gen.MediaAsset {
	t.Helper()
	var r gen.MediaResponse
	uploadMedia(t, c, parts...).Expect(t, http.StatusCreated).Decode(t, &r)
	return r.Data.Media
}

// mediaWorld: admin (first account), owner, a group "team" owned by owner with member (member)
// and gadmin (admin), and a stranger outside it.
type mediaWorld struct {
	env                                    *apitest.Env
	admin, owner, member, gadmin, stranger *apitest.Client
	ownerU, memberU, gadminU, strangerU    gen.User
	teamP                                  int64
	teamAsset, strangerAsset               *store.MediaAsset
}

func newMediaWorld(t *testing.T, env ...string) *mediaWorld {
	t.Helper()
	w := &mediaWorld{env: apitest.New(t, env...)}
	w.admin, _ = w.env.UserClient("root@example.com")
	w.owner, w.ownerU = w.env.UserClient("owner@example.com")
	w.member, w.memberU = w.env.UserClient("member@example.com")
	w.gadmin, w.gadminU = w.env.UserClient("gadmin@example.com")
	w.stranger, w.strangerU = w.env.UserClient("stranger@example.com")
	_, w.teamP = mkGroup(t, w.owner, "team", map[int64]string{w.memberU.Id: "member", w.gadminU.Id: "admin"})
	w.teamAsset = w.save(t, w.teamP, "team.png", mediaPNG(t, 8, 4), nil)
	w.strangerAsset = w.save(t, w.strangerU.PrincipalId, "theirs.txt", []byte("private notes"), nil)
	return w
}

// save stores an asset directly through the media service (owners the API cannot produce:
// groups, agents' chats).
func (w *mediaWorld) save(t *testing.T, principal int64, name string, data []byte, mod func(*media.NewAsset)) *store.MediaAsset {
	t.Helper()
	na := media.NewAsset{PrincipalID: principal, Filename: name, Data: bytes.NewReader(data)}
	if mod != nil {
		mod(&na)
	}
	a, err := w.env.App.Media.Save(context.Background(), na)
	if err != nil {
		t.Fatalf("save %s: %v", name, err)
	}
	return a
}

func TestUploadMediaAsset(t *testing.T) {
	t.Parallel()
	w := newMediaWorld(t)
	now := w.env.Clock.Now()
	img := mediaPNG(t, 12, 7)

	a := mustUpload(t, w.owner, mediaPart{name: "file", filename: "dir/shot.pdf", data: img})
	if !strings.HasPrefix(a.Id, "med_") || a.PrincipalId != w.ownerU.PrincipalId || a.Filename != "shot.pdf" ||
		a.MimeType != "image/png" || a.Kind != "image" || a.Size != int64(len(img)) || *a.Width != 12 || *a.Height != 7 ||
		a.Keep || a.ExpiresAt == nil || !a.ExpiresAt.Equal(now.Add(24*time.Hour)) || a.ParentId != nil || !a.CreatedAt.Equal(now) {
		t.Fatalf("uploaded = %+v", a)
	}
	for name, parts := range map[string][]mediaPart{
		"keep after the file":  {{name: "file", filename: "a.txt", data: []byte("hello")}, {name: "keep", data: []byte("true")}},
		"keep before the file": {{name: "keep", data: []byte("true")}, {name: "file", filename: "a.txt", data: []byte("hello")}},
	} {
		k := mustUpload(t, w.owner, parts...)
		if !k.Keep || k.ExpiresAt != nil || k.MimeType != "text/plain" || k.Kind != "document" {
			t.Errorf("%s: %+v", name, k)
		}
	}
	if k := mustUpload(t, w.owner, mediaPart{name: "keep", data: []byte("false")}, mediaPart{name: "file", filename: "a", data: []byte("x")}); k.Keep {
		t.Errorf("keep=false kept: %+v", k)
	}

	big := append(mediaPNG(t, 2, 2), make([]byte, 16<<20)...)
	listed := func() string {
		t.Helper()
		var r gen.MediaListResponse
		w.owner.Get("/media?per_page=100").Expect(t, 200).Decode(t, &r)
		return mediaIDs(r.Data.Media)
	}
	before := listed()
	for _, tc := range []struct {
		name   string
		c      *apitest.Client
		parts  []mediaPart
		status int
		code   string
	}{
		{"no file part", w.owner, []mediaPart{{name: "keep", data: []byte("true")}}, 400, "BAD_REQUEST"},
		{"empty form", w.owner, nil, 400, "BAD_REQUEST"},
		{"html", w.owner, []mediaPart{{name: "file", filename: "a.png", data: []byte("<!DOCTYPE html><html><body>x</body></html>")}}, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"executable", w.owner, []mediaPart{{name: "file", filename: "a.pdf", data: []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00")}}, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"image over 16 MiB", w.owner, []mediaPart{{name: "file", filename: "big.png", data: big}}, 413, "PAYLOAD_TOO_LARGE"},
		{"bad keep", w.owner, []mediaPart{{name: "keep", data: []byte("maybe")}, {name: "file", filename: "a", data: []byte("x")}}, 400, "BAD_REQUEST"},
		{"unknown part", w.owner, []mediaPart{{name: "other", data: []byte("x")}, {name: "file", filename: "a", data: []byte("x")}}, 400, "BAD_REQUEST"},
		{"anonymous", w.env.Client(), []mediaPart{{name: "file", filename: "a", data: []byte("x")}}, 401, "UNAUTHENTICATED"},
		{"empty file part", w.owner, []mediaPart{{name: "file", filename: "a.txt", data: []byte{}}}, 400, "BAD_REQUEST"},
		{"second file part", w.owner, []mediaPart{{name: "file", filename: "a.txt", data: []byte("one")}, {name: "file", filename: "b.txt", data: []byte("two")}}, 400, "BAD_REQUEST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uploadMedia(t, tc.c, tc.parts...).Expect(t, tc.status, tc.code)
		})
	}
	if after := listed(); after != before {
		t.Fatalf("refused uploads left assets: %s, want %s", after, before)
	}
	if msg := string(uploadMedia(t, w.owner, mediaPart{name: "keep", data: []byte("true")}).Body); !strings.Contains(msg, "part `file` is missing") {
		t.Fatalf("missing file part answered %s", msg)
	}
	// Without the CSRF token: 403.
	body, ct := multipartBody(t, mediaPart{name: "file", filename: "a", data: []byte("x")})
	w.owner.Do(apitest.Request{Method: http.MethodPost, Path: "/media", Body: body, ContentType: ct, NoCSRF: true}).Expect(t, 403, "CSRF_TOKEN_INVALID")
	// Not multipart at all: 415; no body: 400.
	w.owner.Post("/media", map[string]any{"file": "x"}).Expect(t, 415, "UNSUPPORTED_MEDIA_TYPE")
	w.owner.Do(apitest.Request{Method: http.MethodPost, Path: "/media"}).Expect(t, 400, "BAD_REQUEST")

	// The stored bytes are the uploaded ones.
	got, err := w.env.App.Media.Asset(context.Background(), a.Id)
	if err != nil || got.Size != int64(len(img)) {
		t.Fatalf("stored = %+v, %v", got, err)
	}
}

func mediaIDs(ms []gen.MediaAsset) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Id)
	}
	return strings.Join(out, ",")
}

func TestListMediaAssets(t *testing.T) {
	t.Parallel()
	w := newMediaWorld(t)
	var mine []string
	for i := range 3 {
		w.env.Clock.Advance(time.Second)
		data := []byte(fmt.Sprintf("note %d", i))
		if i == 1 {
			data = mediaPNG(t, 3, 3)
		}
		mine = append(mine, mustUpload(t, w.owner, mediaPart{name: "file", filename: "f", data: data}).Id)
	}
	team, theirs := w.teamAsset.ID, w.strangerAsset.ID
	list := func(c *apitest.Client, query string) string {
		t.Helper()
		var r gen.MediaListResponse
		c.Get("/media"+query).Expect(t, 200).Decode(t, &r)
		return mediaIDs(r.Data.Media)
	}
	pid := func(ids ...int64) string {
		v := url.Values{}
		for _, id := range ids {
			v.Add("principal_id[]", fmt.Sprint(id))
		}
		return v.Encode()
	}
	join := func(ids ...string) string { return strings.Join(ids, ",") }
	for _, tc := range []struct {
		name  string
		c     *apitest.Client
		query string
		want  string
	}{
		{"everything visible", w.owner, "", join(mine[2], mine[1], mine[0], team)},
		{"paged", w.owner, "?per_page=2&page=2", join(mine[0], team)},
		{"kind", w.owner, "?kind=image", join(mine[1], team)},
		{"own principal", w.owner, "?" + pid(w.ownerU.PrincipalId), join(mine[2], mine[1], mine[0])},
		{"out of scope dropped", w.owner, "?" + pid(w.teamP, w.strangerU.PrincipalId), team},
		{"nothing left", w.owner, "?" + pid(w.strangerU.PrincipalId), ""},
		{"unknown principal", w.owner, "?" + pid(99999), ""},
		{"member sees the group's", w.member, "", team},
		{"stranger sees own", w.stranger, "", theirs},
		{"administrator narrows to anyone", w.admin, "?" + pid(w.strangerU.PrincipalId), theirs},
	} {
		if got := list(tc.c, tc.query); got != tc.want {
			t.Errorf("%s: listed %s, want %s", tc.name, got, tc.want)
		}
	}
	w.owner.Get("/media?kind=sticker").Expect(t, 422, "VALIDATION_ERROR")
	w.owner.Get("/media?principal_id[]=x").Expect(t, 422, "VALIDATION_ERROR")
	w.env.Client().Get("/media").Expect(t, 401, "UNAUTHENTICATED")

	// Unkept assets disappear after 24 hours.
	w.env.Clock.Advance(25 * time.Hour)
	if got := list(w.owner, ""); got != "" {
		t.Fatalf("after expiry: %s", got)
	}
}

func TestSetMediaAssetKeep(t *testing.T) {
	t.Parallel()
	w := newMediaWorld(t)
	mine := mustUpload(t, w.owner, mediaPart{name: "file", filename: "f", data: []byte("x")})
	keep := func(c *apitest.Client, id string, v any) *apitest.Response {
		return c.Post("/media/"+id+"/keep", map[string]any{"keep": v})
	}
	var r gen.MediaResponse
	keep(w.owner, mine.Id, true).Expect(t, 200).Decode(t, &r)
	if !r.Data.Media.Keep || r.Data.Media.ExpiresAt != nil {
		t.Fatalf("kept = %+v", r.Data.Media)
	}
	keep(w.owner, mine.Id, true).Expect(t, 200) // same value: accepted
	for _, tc := range []struct {
		name   string
		c      *apitest.Client
		id     string
		status int
		code   string
	}{
		{"group member may not manage", w.member, w.teamAsset.ID, 403, "FORBIDDEN"},
		{"stranger cannot see", w.stranger, mine.Id, 404, "NOT_FOUND"},
		{"missing", w.owner, "med_nope", 404, "NOT_FOUND"},
		{"group admin", w.gadmin, w.teamAsset.ID, 200, ""},
		{"group owner", w.owner, w.teamAsset.ID, 200, ""},
		{"administrator", w.admin, w.strangerAsset.ID, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keep(tc.c, tc.id, true).Expect(t, tc.status, tc.code)
		})
	}
	keep(w.owner, mine.Id, "yes").Expect(t, 422, "VALIDATION_ERROR")
	w.owner.Post("/media/"+mine.Id+"/keep", "{").Expect(t, 400, "BAD_REQUEST")
	w.env.Client().Post("/media/"+mine.Id+"/keep", map[string]any{"keep": true}).Expect(t, 401, "UNAUTHENTICATED")

	// Kept assets outlive the retention; unkeeping restarts it from now.
	w.env.Clock.Advance(48 * time.Hour)
	keep(w.owner, mine.Id, false).Expect(t, 200).Decode(t, &r)
	if r.Data.Media.Keep || r.Data.Media.ExpiresAt == nil || !r.Data.Media.ExpiresAt.Equal(w.env.Clock.Now().Add(24*time.Hour)) {
		t.Fatalf("unkept = %+v", r.Data.Media)
	}
	w.env.Clock.Advance(24 * time.Hour)
	keep(w.owner, mine.Id, true).Expect(t, 404, "NOT_FOUND")
	if n, err := w.env.App.Media.Sweep(context.Background()); err != nil || n < 1 {
		t.Fatalf("Sweep = %d, %v", n, err)
	}
}

func TestMediaDerivatives(t *testing.T) {
	t.Parallel()
	w := newMediaWorld(t)
	src := mustUpload(t, w.owner, mediaPart{name: "file", filename: "photo.png", data: mediaPNG(t, 40, 20)}, mediaPart{name: "keep", data: []byte("true")})
	doc := mustUpload(t, w.owner, mediaPart{name: "file", filename: "a.txt", data: []byte("text")})

	var o gen.MediaDerivativeOptionsResponse
	w.owner.Get("/media/"+src.Id+"/derivatives/options").Expect(t, 200).Decode(t, &o)
	if len(o.Data.Options.Operations) != 2 || len(o.Data.Options.Formats) != 4 || o.Data.Options.MaxWidth != 8192 || o.Data.Options.DefaultQuality != 85 {
		t.Fatalf("options = %+v", o.Data.Options)
	}
	w.member.Get("/media/"+w.teamAsset.ID+"/derivatives/options").Expect(t, 200) // visible through the group
	w.owner.Get("/media/"+doc.Id+"/derivatives/options").Expect(t, 200).Decode(t, &o)
	if len(o.Data.Options.Operations) != 0 || len(o.Data.Options.Formats) != 0 {
		t.Fatalf("document options = %+v", o.Data.Options)
	}
	w.stranger.Get("/media/"+src.Id+"/derivatives/options").Expect(t, 404, "NOT_FOUND")
	w.owner.Get("/media/med_nope/derivatives/options").Expect(t, 404, "NOT_FOUND")
	w.env.Client().Get("/media/"+src.Id+"/derivatives/options").Expect(t, 401, "UNAUTHENTICATED")

	derive := func(c *apitest.Client, id string, body map[string]any) *apitest.Response {
		return c.Post("/media/"+id+"/derivatives", body)
	}
	for _, tc := range []struct {
		name string
		body map[string]any
		mime string
		w, h int
	}{
		{"resize", map[string]any{"operation": "resize", "width": 10}, "image/png", 10, 5},
		{"resize to jpeg", map[string]any{"operation": "resize", "height": 4, "format": "jpeg", "quality": 40}, "image/jpeg", 8, 4},
		{"convert webp", map[string]any{"operation": "convert", "format": "webp"}, "image/webp", 40, 20},
		{"convert gif", map[string]any{"operation": "convert", "format": "gif"}, "image/gif", 40, 20},
	} {
		var r gen.MediaResponse
		derive(w.owner, src.Id, tc.body).Expect(t, 201).Decode(t, &r)
		d := r.Data.Media
		if d.MimeType != tc.mime || *d.Width != tc.w || *d.Height != tc.h || d.ParentId == nil || *d.ParentId != src.Id ||
			d.PrincipalId != src.PrincipalId || !d.Keep || d.ExpiresAt != nil || d.Kind != "image" {
			t.Errorf("%s: derivative = %+v", tc.name, d)
		}
	}
	// A group member derives from the group's asset: owned by the group, unkept like its source.
	var r gen.MediaResponse
	derive(w.member, w.teamAsset.ID, map[string]any{"operation": "convert", "format": "jpeg"}).Expect(t, 201).Decode(t, &r)
	if r.Data.Media.PrincipalId != w.teamP || r.Data.Media.Keep || r.Data.Media.ExpiresAt == nil || !r.Data.Media.ExpiresAt.Equal(*w.teamAsset.ExpiresAt) {
		t.Fatalf("group derivative = %+v", r.Data.Media)
	}
	for _, tc := range []struct {
		name   string
		c      *apitest.Client
		id     string
		body   map[string]any
		status int
		code   string
	}{
		{"not an image", w.owner, doc.Id, map[string]any{"operation": "convert", "format": "png"}, 422, "VALIDATION_ERROR"},
		{"resize without size", w.owner, src.Id, map[string]any{"operation": "resize"}, 422, "VALIDATION_ERROR"},
		{"convert without format", w.owner, src.Id, map[string]any{"operation": "convert"}, 422, "VALIDATION_ERROR"},
		{"too wide", w.owner, src.Id, map[string]any{"operation": "resize", "width": 9000}, 422, "VALIDATION_ERROR"},
		{"unknown format", w.owner, src.Id, map[string]any{"operation": "convert", "format": "bmp"}, 422, "VALIDATION_ERROR"},
		{"invisible", w.stranger, src.Id, map[string]any{"operation": "convert", "format": "png"}, 404, "NOT_FOUND"},
		{"missing", w.owner, "med_nope", map[string]any{"operation": "convert", "format": "png"}, 404, "NOT_FOUND"},
		{"anonymous", w.env.Client(), src.Id, map[string]any{"operation": "convert", "format": "png"}, 401, "UNAUTHENTICATED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			derive(tc.c, tc.id, tc.body).Expect(t, tc.status, tc.code)
		})
	}
	w.owner.Post("/media/"+src.Id+"/derivatives", "not json").Expect(t, 400, "BAD_REQUEST")
}

func TestListAllowedMediaTypes(t *testing.T) {
	t.Parallel()
	w := newMediaWorld(t)
	var r gen.MediaAllowedTypesResponse
	w.member.Get("/media/allowed-types").Expect(t, 200).Decode(t, &r)
	kinds := map[string]gen.AllowedMediaKind{}
	for _, k := range r.Data.Kinds {
		kinds[string(k.Kind)] = k
	}
	img := kinds["image"]
	if img.MaxSize != 16<<20 || !strings.Contains(strings.Join(img.MimeTypes, ","), "image/png") || kinds["document"].MaxSize == 0 {
		t.Fatalf("kinds = %+v", r.Data.Kinds)
	}
	w.env.Client().Get("/media/allowed-types").Expect(t, 401, "UNAUTHENTICATED")
}

func TestResolveMediaAssets(t *testing.T) {
	t.Parallel()
	w := newMediaWorld(t)
	if _, err := w.env.App.Media.SetKeep(context.Background(), w.teamAsset.ID, true, nil); err != nil {
		t.Fatal(err)
	}
	a := mustUpload(t, w.owner, mediaPart{name: "file", filename: "a", data: []byte("a")})
	w.env.Clock.Advance(23 * time.Hour)
	b := mustUpload(t, w.owner, mediaPart{name: "file", filename: "b", data: []byte("b")})
	w.env.Clock.Advance(2 * time.Hour) // a has expired
	resolve := func(c *apitest.Client, ids []string) gen.ResolveMediaResponse {
		t.Helper()
		var r gen.ResolveMediaResponse
		c.Post("/media/resolve", map[string]any{"ids": ids}).Expect(t, 200).Decode(t, &r)
		return r
	}
	r := resolve(w.owner, []string{w.strangerAsset.ID, b.Id, w.teamAsset.ID, "med_nope", b.Id, a.Id})
	if got := mediaIDs(r.Data.Media); got != b.Id+","+w.teamAsset.ID {
		t.Fatalf("media = %s", got)
	}
	if got := strings.Join(r.Data.Missing, ","); got != w.strangerAsset.ID+",med_nope,"+a.Id {
		t.Fatalf("missing = %s", got)
	}
	r = resolve(w.owner, []string{})
	if len(r.Data.Media) != 0 || len(r.Data.Missing) != 0 {
		t.Fatalf("empty = %+v", r)
	}
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprint("med_", i)
	}
	w.owner.Post("/media/resolve", map[string]any{"ids": many}).Expect(t, 422, "VALIDATION_ERROR")
	w.owner.Post("/media/resolve", map[string]any{}).Expect(t, 422, "VALIDATION_ERROR")
	w.owner.Post("/media/resolve", "[").Expect(t, 400, "BAD_REQUEST")
	w.owner.Do(apitest.Request{Method: http.MethodPost, Path: "/media/resolve", Body: map[string]any{"ids": []string{}}, NoCSRF: true}).Expect(t, 403, "CSRF_TOKEN_INVALID")
	w.env.Client().Post("/media/resolve", map[string]any{"ids": []string{}}).Expect(t, 401, "UNAUTHENTICATED")
}

// TestExpiredUploadsAreSwept: housekeeping (client mode: POST /worker/housekeeping; the server
// daemon runs the same sweep with its chores) removes unkept uploads past their expiry with their
// files, and leaves kept ones.
func TestExpiredUploadsAreSwept(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_WORKER_RUNTIME_MODE=client")
	c, _ := env.UserClient("ada@example.com")
	temp := mustUpload(t, c, mediaPart{name: "file", filename: "temp.png", data: mediaPNG(t, 4, 4)})
	kept := mustUpload(t, c, mediaPart{name: "file", filename: "kept.png", data: mediaPNG(t, 4, 4)},
		mediaPart{name: "keep", data: []byte("true")})
	ctx := context.Background()
	tempRow, err := env.App.Store.MediaAsset(ctx, temp.Id)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(env.App.Media.Dir(), filepath.FromSlash(tempRow.StorageKey))
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("uploaded file: %v", err)
	}

	env.Clock.Advance(25 * time.Hour)
	c.Post("/worker/housekeeping", nil).Expect(t, http.StatusOK)
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("expired upload's file still there: %v", err)
	}
	// At the zero instant nothing has expired yet: only a deleted row answers not found.
	if _, err := env.App.Store.MediaAssetAt(ctx, temp.Id, time.Time{}); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("expired upload's row: %v", err)
	}
	var r gen.ResolveMediaResponse
	c.Post("/media/resolve", map[string]any{"ids": []string{temp.Id, kept.Id}}).Expect(t, http.StatusOK).Decode(t, &r)
	if len(r.Data.Media) != 1 || r.Data.Media[0].Id != kept.Id || len(r.Data.Missing) != 1 || r.Data.Missing[0] != temp.Id {
		t.Fatalf("resolve after sweep = %+v", r.Data)
	}
}
