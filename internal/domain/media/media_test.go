package media_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HugoSmits86/nativewebp"

	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

var t0 = time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)

type fixture struct {
	svc   *media.Service
	st    *store.Store
	clock *testkit.Clock
	dir   string
	user  *store.User
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := testkit.NewClock(t0)
	st := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, st)
	dir := filepath.Join(t.TempDir(), "media")
	return &fixture{svc: media.New(st, dir, clock.Now), st: st, clock: clock, dir: dir, user: u}
}

func pngBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{R: uint8(x), G: uint8(y), B: 100, A: 200})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encoded(t testing.TB, format string, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	var b bytes.Buffer
	var err error
	switch format {
	case "jpeg":
		err = jpeg.Encode(&b, img, nil)
	case "gif":
		err = gif.Encode(&b, img, nil)
	case "webp":
		err = nativewebp.Encode(&b, img, nil)
	default:
		return pngBytes(t, w, h)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func category(err error) error {
	for _, c := range []error{svcerr.ErrUnsupportedMediaType, svcerr.ErrTooLarge, svcerr.ErrInvalid, svcerr.ErrNotFound, svcerr.ErrBadRequest} {
		if errors.Is(err, c) {
			return c
		}
	}
	return err
}

func TestSaveDetectsTypeAndLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	pdf := []byte("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n")
	for _, tc := range []struct {
		name     string
		data     []byte
		filename string
		max      int64
		mime     string
		kind     string
		err      error
	}{
		{"png named pdf", pngBytes(t, 4, 3), "x.pdf", 0, "image/png", store.MediaKindImage, nil},
		{"jpeg", encoded(t, "jpeg", 5, 5), "a.jpg", 0, "image/jpeg", store.MediaKindImage, nil},
		{"gif", encoded(t, "gif", 5, 5), "a.gif", 0, "image/gif", store.MediaKindImage, nil},
		{"webp", encoded(t, "webp", 5, 5), "a.webp", 0, "image/webp", store.MediaKindImage, nil},
		{"pdf", pdf, "r.pdf", 0, "application/pdf", store.MediaKindDocument, nil},
		{"text", []byte("hello world\n"), "", 0, "text/plain", store.MediaKindDocument, nil},
		{"html refused", []byte("<!DOCTYPE html><html><script>alert(1)</script></html>"), "a.txt", 0, "", "", svcerr.ErrUnsupportedMediaType},
		{"binary refused", []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "a.png", 0, "", "", svcerr.ErrUnsupportedMediaType},
		{"over MaxBytes", bytes.Repeat([]byte("a"), 5000), "big.txt", 4096, "", "", svcerr.ErrTooLarge},
		{"over MaxBytes in head", bytes.Repeat([]byte("a"), 200), "big.txt", 100, "", "", svcerr.ErrTooLarge},
		{"at MaxBytes", bytes.Repeat([]byte("a"), 4096), "ok.txt", 4096, "text/plain", store.MediaKindDocument, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := f.svc.Save(ctx, media.NewAsset{PrincipalID: f.user.PrincipalID, Filename: tc.filename,
				Data: bytes.NewReader(tc.data), MaxBytes: tc.max, UploadedBy: &f.user.ID})
			if tc.err != nil {
				if category(err) != tc.err {
					t.Fatalf("Save error = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Save: %v", err)
			}
			if a.MimeType != tc.mime || a.Kind != tc.kind || a.Size != int64(len(tc.data)) || !strings.HasPrefix(a.ID, "med_") ||
				len(a.ID) != 30 || a.Keep || a.ExpiresAt == nil || !a.ExpiresAt.Equal(t0.Add(media.Retention)) {
				t.Fatalf("asset = %+v", a)
			}
			if tc.kind == store.MediaKindImage && (a.Width == nil || a.Height == nil) {
				t.Fatalf("image without size: %+v", a)
			}
			rc, err := f.svc.Open(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(rc)
			rc.Close()
			if !bytes.Equal(got, tc.data) {
				t.Fatalf("stored bytes differ")
			}
		})
	}
	a, err := f.svc.Save(ctx, media.NewAsset{PrincipalID: f.user.PrincipalID, Filename: "../../etc/pass\"wd", Data: bytes.NewReader(pngBytes(t, 2, 2)), Keep: true})
	if err != nil || a.Filename != "passwd" || a.ExpiresAt != nil || !a.Keep || *a.Width != 2 {
		t.Fatalf("kept asset = %+v, %v", a, err)
	}
	// No temporary files are left behind by refused uploads.
	_ = filepath.WalkDir(f.dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".upload-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

func TestSaveKindLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	img, _ := media.KindOf("image/png")
	data := append(pngBytes(t, 2, 2), make([]byte, img.MaxSize)...)
	_, err := f.svc.Save(context.Background(), media.NewAsset{PrincipalID: f.user.PrincipalID, Data: bytes.NewReader(data)})
	if category(err) != svcerr.ErrTooLarge {
		t.Fatalf("Save over the image limit = %v", err)
	}
}

func TestAllowed(t *testing.T) {
	t.Parallel()
	kinds := media.Allowed()
	if len(kinds) == 0 {
		t.Fatal("empty table")
	}
	seen := map[string]bool{}
	for _, k := range kinds {
		if seen[k.Kind] || len(k.MimeTypes) == 0 || k.MaxSize <= 0 {
			t.Errorf("bad row %+v", k)
		}
		seen[k.Kind] = true
	}
	kinds[0].MimeTypes[0] = "changed/type"
	if media.Allowed()[0].MimeTypes[0] == "changed/type" {
		t.Fatal("Allowed returns the shared table")
	}
	if k, ok := media.KindOf("Image/PNG; x=1"); !ok || k.Kind != store.MediaKindImage {
		t.Fatalf("KindOf = %+v, %v", k, ok)
	}
	if _, ok := media.KindOf("text/html"); ok {
		t.Fatal("text/html allowed")
	}
}

func TestSweepRemovesFiles(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	gone, err := f.svc.Save(ctx, media.NewAsset{PrincipalID: f.user.PrincipalID, Data: strings.NewReader("temporary")})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := f.svc.Save(ctx, media.NewAsset{PrincipalID: f.user.PrincipalID, Data: strings.NewReader("kept")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.SetKeep(ctx, kept.ID, true, nil); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(media.Retention - time.Second)
	if n, err := f.svc.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("early Sweep = %d, %v", n, err)
	}
	f.clock.Advance(time.Second)
	if n, err := f.svc.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, filepath.FromSlash(gone.StorageKey))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("swept file still there: %v", err)
	}
	if _, err := f.svc.Asset(ctx, gone.ID); category(err) != svcerr.ErrNotFound {
		t.Fatalf("swept asset = %v", err)
	}
	rc, err := f.svc.Open(ctx, kept)
	if err != nil {
		t.Fatalf("kept file: %v", err)
	}
	rc.Close()
	// Unkeeping sets a new expiry from now.
	a, err := f.svc.SetKeep(ctx, kept.ID, false, nil)
	if err != nil || a.ExpiresAt == nil || !a.ExpiresAt.Equal(f.clock.Now().Add(media.Retention)) {
		t.Fatalf("unkeep = %+v, %v", a, err)
	}
}

func TestDerivatives(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	src, err := f.svc.Save(ctx, media.NewAsset{PrincipalID: f.user.PrincipalID, Filename: "photo.png", Data: bytes.NewReader(pngBytes(t, 200, 100))})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := f.svc.Save(ctx, media.NewAsset{PrincipalID: f.user.PrincipalID, Data: strings.NewReader("just text")})
	if err != nil {
		t.Fatal(err)
	}
	opts, err := f.svc.DerivativeOptions(ctx, src)
	if err != nil || len(opts.Operations) != 2 || len(opts.Formats) != 4 || opts.DefaultQuality != 85 {
		t.Fatalf("options = %+v, %v", opts, err)
	}
	opts, err = f.svc.DerivativeOptions(ctx, doc)
	if err != nil || len(opts.Operations) != 0 || len(opts.Formats) != 0 {
		t.Fatalf("document options = %+v, %v", opts, err)
	}
	ip := func(v int) *int { return &v }
	for _, tc := range []struct {
		name   string
		req    media.DeriveRequest
		mime   string
		w, h   int
		suffix string
		err    error
	}{
		{"resize width", media.DeriveRequest{Operation: "resize", Width: ip(50)}, "image/png", 50, 25, ".png", nil},
		{"resize height", media.DeriveRequest{Operation: "resize", Height: ip(10)}, "image/png", 20, 10, ".png", nil},
		{"resize box", media.DeriveRequest{Operation: "resize", Width: ip(100), Height: ip(10)}, "image/png", 20, 10, ".png", nil},
		{"no upscale", media.DeriveRequest{Operation: "resize", Width: ip(4000)}, "image/png", 200, 100, ".png", nil},
		{"resize to jpeg", media.DeriveRequest{Operation: "resize", Width: ip(40), Format: "jpeg", Quality: ip(50)}, "image/jpeg", 40, 20, ".jpg", nil},
		{"convert gif", media.DeriveRequest{Operation: "convert", Format: "gif"}, "image/gif", 200, 100, ".gif", nil},
		{"convert webp", media.DeriveRequest{Operation: "convert", Format: "webp"}, "image/webp", 200, 100, ".webp", nil},
		{"resize without size", media.DeriveRequest{Operation: "resize"}, "", 0, 0, "", svcerr.ErrInvalid},
		{"convert without format", media.DeriveRequest{Operation: "convert"}, "", 0, 0, "", svcerr.ErrInvalid},
		{"unknown op", media.DeriveRequest{Operation: "crop"}, "", 0, 0, "", svcerr.ErrInvalid},
		{"bad format", media.DeriveRequest{Operation: "convert", Format: "bmp"}, "", 0, 0, "", svcerr.ErrInvalid},
		{"too wide", media.DeriveRequest{Operation: "resize", Width: ip(9000)}, "", 0, 0, "", svcerr.ErrInvalid},
		{"quality", media.DeriveRequest{Operation: "convert", Format: "jpeg", Quality: ip(0)}, "", 0, 0, "", svcerr.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := f.svc.Derive(ctx, src, tc.req)
			if tc.err != nil {
				if category(err) != tc.err {
					t.Fatalf("Derive error = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Derive: %v", err)
			}
			if d.MimeType != tc.mime || *d.Width != tc.w || *d.Height != tc.h || d.ParentID == nil || *d.ParentID != src.ID ||
				d.PrincipalID != src.PrincipalID || d.Keep || d.ExpiresAt == nil || !d.ExpiresAt.Equal(*src.ExpiresAt) ||
				d.Filename != "photo"+tc.suffix {
				t.Fatalf("derivative = %+v", d)
			}
		})
	}
	if _, err := f.svc.Derive(ctx, doc, media.DeriveRequest{Operation: "convert", Format: "png"}); category(err) != svcerr.ErrInvalid {
		t.Fatalf("derive a document = %v", err)
	}
	// Decompression bombs are refused from the header.
	small := media.New(f.st, f.dir, f.clock.Now)
	small.MaxPixels = 100
	if _, err := small.Derive(ctx, src, media.DeriveRequest{Operation: "convert", Format: "png"}); category(err) != svcerr.ErrInvalid {
		t.Fatalf("derive over the pixel cap = %v", err)
	}
	if o, err := small.DerivativeOptions(ctx, src); err != nil || len(o.Operations) != 0 {
		t.Fatalf("options over the pixel cap = %+v, %v", o, err)
	}
}
