package media

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"path"
	"strings"
	"time"

	"github.com/HugoSmits86/nativewebp"
	"golang.org/x/image/draw"

	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// Derivative operations and output formats.
const (
	OpResize  = "resize"
	OpConvert = "convert"

	FormatJPEG = "jpeg"
	FormatPNG  = "png"
	FormatWebP = "webp"
	FormatGIF  = "gif"
)

var formats = []string{FormatJPEG, FormatPNG, FormatWebP, FormatGIF}

// DerivativeOptions says what derivatives can be made of one asset.
type DerivativeOptions struct {
	Operations     []string // empty when the asset cannot be transformed
	Formats        []string
	MaxWidth       int
	MaxHeight      int
	MinQuality     int
	MaxQuality     int
	DefaultQuality int
}

// DeriveRequest is one derivative operation (see Derive).
type DeriveRequest struct {
	Operation string // OpResize or OpConvert
	Width     *int   // resize: fit inside this width
	Height    *int   // resize: fit inside this height
	Format    string // output format; "" keeps the source's (resize only)
	Quality   *int   // jpeg only (webp output is lossless); nil: limits.DefaultQuality
	// UploadedBy is the user asking for the derivative.
	UploadedBy *int64
}

// sourceFormat returns the decodable image format of an asset and its pixel size, checking the
// pixel cap from the header alone. ok is false for anything but a decodable image within the cap.
func (s *Service) sourceFormat(ctx context.Context, a *store.MediaAsset) (format string, cfg image.Config, ok bool, err error) {
	if a.Kind != store.MediaKindImage {
		return "", cfg, false, nil
	}
	f, err := s.Open(ctx, a)
	if err != nil {
		return "", cfg, false, err
	}
	defer f.Close()
	cfg, format, derr := image.DecodeConfig(f)
	if derr != nil || cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > s.MaxPixels {
		return "", cfg, false, nil
	}
	return format, cfg, true, nil
}

// DerivativeOptions lists what Derive accepts for a: every operation and format for a
// decodable image within the pixel cap, nothing otherwise. Errors: I/O errors (the file is
// missing).
func (s *Service) DerivativeOptions(ctx context.Context, a *store.MediaAsset) (DerivativeOptions, error) {
	o := DerivativeOptions{Operations: []string{}, Formats: []string{}, MaxWidth: limits.MaxDerivativeSide,
		MaxHeight: limits.MaxDerivativeSide, MinQuality: limits.MinQuality, MaxQuality: limits.MaxQuality, DefaultQuality: limits.DefaultQuality}
	_, _, ok, err := s.sourceFormat(ctx, a)
	if err != nil {
		return o, err
	}
	if ok {
		o.Operations = []string{OpResize, OpConvert}
		o.Formats = append([]string(nil), formats...)
	}
	return o, nil
}

func invalid(format string, args ...any) error { return svcerr.New(svcerr.ErrInvalid, format, args...) }

// Derive makes a new asset from the image src: resize scales it to fit inside Width × Height
// keeping the aspect ratio (never larger than the source), optionally re-encoding to Format;
// convert re-encodes it to Format at its size. The derivative belongs to src's principal, has
// src as parent, and inherits keep (and expires_at when unkept). Errors: ErrInvalid (request
// outside the options, or src supports no operation), ErrTooLarge (the result exceeds the
// image limit), I/O errors.
func (s *Service) Derive(ctx context.Context, src *store.MediaAsset, req DeriveRequest) (*store.MediaAsset, error) {
	switch req.Operation {
	case OpResize:
		if req.Width == nil && req.Height == nil {
			return nil, invalid("resize needs width or height")
		}
	case OpConvert:
		if req.Format == "" {
			return nil, invalid("convert needs format")
		}
	default:
		return nil, invalid("operation must be %s or %s", OpResize, OpConvert)
	}
	for _, v := range []*int{req.Width, req.Height} {
		if v != nil && (*v < 1 || *v > limits.MaxDerivativeSide) {
			return nil, invalid("width and height must be 1 to %d", limits.MaxDerivativeSide)
		}
	}
	if req.Format != "" && !contains(formats, req.Format) {
		return nil, invalid("format must be one of %s", strings.Join(formats, ", "))
	}
	quality := limits.DefaultQuality
	if req.Quality != nil {
		if *req.Quality < limits.MinQuality || *req.Quality > limits.MaxQuality {
			return nil, invalid("quality must be %d to %d", limits.MinQuality, limits.MaxQuality)
		}
		quality = *req.Quality
	}
	srcFormat, cfg, ok, err := s.sourceFormat(ctx, src)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, invalid("this asset supports no derivative operation (not a decodable image within %d pixels)", s.MaxPixels)
	}
	format := req.Format
	if format == "" {
		format = srcFormat
	}
	img, err := s.decode(ctx, src)
	if err != nil {
		return nil, err
	}
	if req.Operation == OpResize {
		w, h := fitInside(cfg.Width, cfg.Height, req.Width, req.Height)
		if w != img.Bounds().Dx() || h != img.Bounds().Dy() {
			dst := image.NewNRGBA(image.Rect(0, 0, w, h))
			draw.CatmullRom.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
			img = dst
		}
	}
	var buf bytes.Buffer
	if err := encode(&buf, img, format, quality); err != nil {
		return nil, fmt.Errorf("media: encode %s: %w", format, err)
	}
	imgKind, _ := KindOf("image/png")
	if int64(buf.Len()) > imgKind.MaxSize {
		return nil, tooLarge(imgKind.MaxSize)
	}
	parent := src.ID
	var exp *time.Time // an unkept source's expiry, unless it is kept alive by a chat past it
	if src.ExpiresAt != nil && src.ExpiresAt.After(s.now()) {
		exp = src.ExpiresAt
	}
	return s.save(ctx, NewAsset{
		PrincipalID: src.PrincipalID, Filename: derivedName(src.Filename, format), Data: &buf,
		UploadedBy: req.UploadedBy, Keep: src.Keep, ParentID: &parent,
	}, exp)
}

func (s *Service) decode(ctx context.Context, a *store.MediaAsset) (image.Image, error) {
	f, err := s.Open(ctx, a)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, _, err := image.Decode(io.Reader(f))
	if err != nil {
		return nil, invalid("the image could not be decoded")
	}
	return img, nil
}

// fitInside scales w × h to fit inside maxW × maxH (nil: unbounded) keeping the aspect ratio,
// never enlarging; each side is at least 1.
func fitInside(w, h int, maxW, maxH *int) (int, int) {
	scale := 1.0
	if maxW != nil {
		scale = math.Min(scale, float64(*maxW)/float64(w))
	}
	if maxH != nil {
		scale = math.Min(scale, float64(*maxH)/float64(h))
	}
	if scale >= 1 {
		return w, h
	}
	nw := max(1, int(math.Round(float64(w)*scale)))
	nh := max(1, int(math.Round(float64(h)*scale)))
	if maxW != nil {
		nw = min(nw, *maxW)
	}
	if maxH != nil {
		nh = min(nh, *maxH)
	}
	return nw, nh
}

func encode(w io.Writer, img image.Image, format string, quality int) error {
	switch format {
	case FormatJPEG:
		return jpeg.Encode(w, onWhite(img), &jpeg.Options{Quality: quality})
	case FormatPNG:
		return png.Encode(w, img)
	case FormatGIF:
		return gif.Encode(w, img, nil)
	case FormatWebP:
		return nativewebp.Encode(w, img, nil)
	}
	return invalid("format must be one of %s", strings.Join(formats, ", "))
}

// onWhite flattens transparency onto white (JPEG has no alpha channel).
func onWhite(img image.Image) image.Image {
	b := img.Bounds()
	dst := image.NewRGBA(b)
	draw.Draw(dst, b, image.NewUniform(color.White), image.Point{}, draw.Src)
	draw.Draw(dst, b, img, b.Min, draw.Over)
	return dst
}

// derivedName replaces the extension of name with the format's.
func derivedName(name, format string) string {
	ext := "." + format
	if format == FormatJPEG {
		ext = ".jpg"
	}
	base := strings.TrimSuffix(name, path.Ext(name))
	if base == "" {
		base = "image"
	}
	if r := []rune(base); len(r)+len(ext) > limits.FilenameLen {
		base = string(r[:limits.FilenameLen-len(ext)])
	}
	return base + ext
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
