package picture_test

import (
	"bytes"
	"errors"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/HugoSmits86/nativewebp"

	"github.com/agentsvc/svc/internal/domain/picture"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

func TestCheckType(t *testing.T) {
	t.Parallel()
	img := image.NewNRGBA(image.Rect(0, 0, 2, 2))
	enc := func(f func(*bytes.Buffer) error) []byte {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"png", enc(func(b *bytes.Buffer) error { return png.Encode(b, img) }), true},
		{"jpeg", enc(func(b *bytes.Buffer) error { return jpeg.Encode(b, img, nil) }), true},
		{"gif", enc(func(b *bytes.Buffer) error { return gif.Encode(b, img, nil) }), true},
		{"webp", enc(func(b *bytes.Buffer) error { return nativewebp.Encode(b, img, nil) }), true},
		{"svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"></svg>`), false},
		{"svg with xml prolog", []byte(`<?xml version="1.0"?>` + "\n" + `<svg xmlns="http://www.w3.org/2000/svg"></svg>`), false},
		{"html", []byte(`<html><body><img src=x onerror=alert(1)></body></html>`), false},
		{"text", []byte("hello"), false},
		{"pdf", []byte("%PDF-1.7\n"), false},
		{"bmp", []byte("BM\x3a\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00\x28\x00\x00\x00"), false},
		{"empty", nil, false},
	} {
		err := picture.CheckType(tc.data)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, svcerr.ErrUnsupportedMediaType)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// FuzzCheckType: any bytes are accepted only as one of the four picture types, never panic.
func FuzzCheckType(f *testing.F) {
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Add([]byte("GIF89a"))
	f.Add([]byte("<svg"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := picture.CheckType(b); err != nil && !errors.Is(err, svcerr.ErrUnsupportedMediaType) {
			t.Fatal(err)
		}
	})
}
