package media_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/png"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/store/storetest"
)

// benchPayload is 1 MiB of incompressible bytes (deterministic).
func benchPayload() []byte {
	r := rand.NewChaCha8([32]byte{7})
	p := make([]byte, media.MiB)
	_, _ = r.Read(p)
	return p
}

// BenchmarkParseDataURL measures decoding a data URL carrying 1 MiB (an inline file of a chat
// start): the size pre-check, whitespace removal and base64 decoding. SetBytes is the decoded
// size, so MB/s is file bytes per second. "wrapped" breaks the base64 into 76-column lines
// (as MIME encoders do).
func BenchmarkParseDataURL(b *testing.B) {
	payload := benchPayload()
	enc := base64.StdEncoding.EncodeToString(payload)
	var wrapped strings.Builder
	for i := 0; i < len(enc); i += 76 {
		wrapped.WriteString(enc[i:min(i+76, len(enc))])
		wrapped.WriteString("\r\n")
	}
	for _, tc := range []struct{ name, url string }{
		{"base64", "data:application/octet-stream;base64," + enc},
		{"base64-wrapped", "data:application/octet-stream;base64," + wrapped.String()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				mt, data, err := media.ParseDataURL(tc.url)
				if err != nil || mt != "application/octet-stream" || len(data) != len(payload) {
					b.Fatalf("ParseDataURL = %q, %d bytes, %v", mt, len(data), err)
				}
			}
		})
	}
}

// BenchmarkSave measures Service.Save of a 1 MiB PNG: type detection, the allowed-table check,
// the atomic write (temporary file, SHA-256 while copying, fsync, rename), reading the image
// size, and the asset row. Files accumulate in the benchmark's temporary directory.
func BenchmarkSave(b *testing.B) {
	st := storetest.New(b)
	ctx := context.Background()
	u := storetest.User(b, st)
	svc := media.New(st, filepath.Join(b.TempDir(), "media"), nil)
	// Noise does not compress: 512×512 NRGBA encodes to a little over 1 MiB.
	img := image.NewNRGBA(image.Rect(0, 0, 512, 512))
	copy(img.Pix, benchPayload())
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		b.Fatal(err)
	}
	file := buf.Bytes()
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	for b.Loop() {
		a, err := svc.Save(ctx, media.NewAsset{PrincipalID: u.PrincipalID, Filename: "chart.png", Data: bytes.NewReader(file)})
		if err != nil || a.MimeType != "image/png" || a.Size != int64(len(file)) || a.Width == nil || *a.Width != 512 {
			b.Fatalf("Save = %+v, %v", a, err)
		}
	}
}
