// Package media stores media assets: files uploaded by users or through an agent's key,
// produced by agents, or derived from other assets. The bytes live on disk below one directory
// (storage/media by default), written atomically; the rows live in the store. The type of a
// file is detected from its content bytes and checked against the allowed-types table, which is
// also every agent's accept list. Unkept assets expire Retention after upload and are removed
// by Sweep.
package media

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gabriel-vasile/mimetype"

	// Image decoders for DecodeConfig and derivatives.
	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"

	_ "golang.org/x/image/webp"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// Error categories of the package (the svcerr sentinels, so that errors.Is works with either).
var (
	ErrUnsupportedMediaType = svcerr.ErrUnsupportedMediaType
	ErrTooLarge             = svcerr.ErrTooLarge
	ErrNotFound             = svcerr.ErrNotFound
)

// Retention is how long an unkept asset lives after upload (or after its keep flag is cleared).
const Retention = 24 * time.Hour

// MiB is 2^20 bytes.
const MiB = 1 << 20

// IDPrefix starts every media id: med_ followed by 26 lowercase base32 characters (128 random
// bits).
const IDPrefix = "med_"

// sniffLen is how many leading bytes type detection reads.
const sniffLen = 3072

// Kind is one row of the allowed-types table: an asset kind, its accepted MIME types and the
// largest accepted file of that kind.
type Kind struct {
	Kind      string
	MimeTypes []string
	MaxSize   int64
}

// allowed is the allowed-types table (also every agent's accept list).
var allowed = []Kind{
	{Kind: store.MediaKindImage, MaxSize: 16 * MiB, MimeTypes: []string{"image/jpeg", "image/png", "image/gif", "image/webp"}},
	{Kind: store.MediaKindAudio, MaxSize: 32 * MiB, MimeTypes: []string{"audio/mpeg", "audio/wav", "audio/ogg", "audio/flac", "audio/aac", "audio/x-m4a", "audio/mp4"}},
	{Kind: store.MediaKindVideo, MaxSize: 32 * MiB, MimeTypes: []string{"video/mp4", "video/webm", "video/quicktime"}},
	{Kind: store.MediaKindDocument, MaxSize: 16 * MiB, MimeTypes: []string{
		"application/pdf", "text/plain", "text/csv", "text/markdown", "application/json",
		"application/vnd.openxmlformats-officedocument.wordprocessingml.document",
		"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
		"application/vnd.openxmlformats-officedocument.presentationml.presentation",
		"application/vnd.oasis.opendocument.text", "application/vnd.oasis.opendocument.spreadsheet",
	}},
}

// Store is what the service needs of the store; *store.Store satisfies it.
type Store interface {
	access.Memberships
	CreateMediaAsset(ctx context.Context, a store.MediaAsset) (*store.MediaAsset, error)
	DiscardMediaAsset(ctx context.Context, id string) (string, error)
	ListMedia(ctx context.Context, q store.MediaQuery) ([]store.MediaAsset, error)
	MediaAssetAt(ctx context.Context, id string, now time.Time) (*store.MediaAsset, error)
	MediaAssetsAt(ctx context.Context, ids []string, now time.Time) (map[string]*store.MediaAsset, error)
	MediaReadableByAgentAt(ctx context.Context, agentID int64, mediaID string, now time.Time) (*store.MediaAsset, error)
	MediaStorageKeys(ctx context.Context, ids []string) (map[string]string, error)
	SetMediaKeep(ctx context.Context, id string, keep bool, now time.Time, retention time.Duration, check store.MediaCheck) (*store.MediaAsset, error)
	SweepExpiredMedia(ctx context.Context, now time.Time, limit int) ([]string, error)
}

// Service stores and reads media assets.
type Service struct {
	st  Store
	dir string
	now func() time.Time
	log *slog.Logger
	// MaxPixels caps the decoded size of images (width × height) read for derivatives; larger
	// ones are refused before decoding (decompression bombs).
	MaxPixels int64

	orphanMu       sync.Mutex
	lastOrphanScan time.Time // when Sweep last ran SweepOrphans (zero: never)
}

// DefaultMaxPixels is the default Service.MaxPixels (about 40 megapixels).
const DefaultMaxPixels = 40_000_000

// New returns the service storing files below dir ("" means storage/media); clock nil means
// time.Now. The directory is created on first write.
func New(st Store, dir string, clock func() time.Time) *Service {
	if dir == "" {
		dir = filepath.Join("storage", "media")
	}
	if clock == nil {
		clock = time.Now
	}
	return &Service{st: st, dir: dir, now: clock, log: slog.New(slog.DiscardHandler), MaxPixels: DefaultMaxPixels}
}

// WithLogger sets the logger of sweep failures and returns s.
func (s *Service) WithLogger(l *slog.Logger) *Service {
	if l != nil {
		s.log = l
	}
	return s
}

// Dir is the storage directory.
func (s *Service) Dir() string { return s.dir }

// Allowed returns the allowed-types table (a copy), one entry per kind that accepts a type.
func (s *Service) Allowed() []Kind { return Allowed() }

// Allowed returns the allowed-types table (a copy).
func Allowed() []Kind {
	out := make([]Kind, len(allowed))
	for i, k := range allowed {
		out[i] = Kind{Kind: k.Kind, MimeTypes: slices.Clone(k.MimeTypes), MaxSize: k.MaxSize}
	}
	return out
}

// KindOf returns the allowed-table row of a MIME type (parameters ignored), or false.
func KindOf(mimeType string) (Kind, bool) {
	mt := baseType(mimeType)
	for _, k := range allowed {
		if slices.Contains(k.MimeTypes, mt) {
			return k, true
		}
	}
	return Kind{}, false
}

// MaxUploadBytes is the largest file any kind accepts.
func MaxUploadBytes() int64 {
	var m int64
	for _, k := range allowed {
		m = max(m, k.MaxSize)
	}
	return m
}

func baseType(mt string) string {
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

// Detect returns the MIME type (without parameters) of content starting with head.
func Detect(head []byte) string {
	if len(head) > sniffLen {
		head = head[:sniffLen]
	}
	return baseType(mimetype.Detect(head).String())
}

// NewAsset describes a file to store.
type NewAsset struct {
	PrincipalID int64     // owner
	Filename    string    // as the client named it (cleaned; a default is made when empty)
	Data        io.Reader // the bytes
	// MaxBytes caps the size below the kind's limit (0: the kind's limit only).
	MaxBytes   int64
	UploadedBy *int64 // the user who uploaded it
	AgentID    *int64 // the agent that produced or uploaded it
	TaskID     *int64 // the chat that produced it
	Keep       bool   // never expires; otherwise expires Retention after upload
	ParentID   *string
}

// NewID returns a fresh media id.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return IDPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// Save detects the type of the bytes, checks it against the allowed table and the size limits,
// writes the file atomically below the storage directory and records the asset.
// Errors: ErrUnsupportedMediaType (type outside the table), ErrTooLarge (over the kind's limit
// or MaxBytes), ErrInvalid (an owner or reference the database does not know; a row of the
// wrong shape, checkAsset), I/O errors uncategorised.
func (s *Service) Save(ctx context.Context, na NewAsset) (*store.MediaAsset, error) {
	return s.save(ctx, na, nil)
}

// save is Save with an optional expiry of an unkept asset (nil: now plus Retention).
func (s *Service) save(ctx context.Context, na NewAsset, expiresAt *time.Time) (*store.MediaAsset, error) {
	if na.Data == nil {
		return nil, svcerr.New(svcerr.ErrBadRequest, "no file")
	}
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(na.Data, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, readErr(err)
	}
	head = head[:n]
	mt := Detect(head)
	kind, ok := KindOf(mt)
	if !ok {
		return nil, svcerr.New(svcerr.ErrUnsupportedMediaType, "files of type %s are not accepted", mt)
	}
	limit := kind.MaxSize
	if na.MaxBytes > 0 && na.MaxBytes < limit {
		limit = na.MaxBytes
	}
	if int64(n) > limit {
		return nil, tooLarge(limit)
	}
	id := NewID()
	key := storageKey(id)
	full := s.path(key)
	size, sum, err := s.writeFile(full, io.MultiReader(bytes.NewReader(head), na.Data), limit)
	if err != nil {
		return nil, err
	}
	a := store.MediaAsset{
		ID: id, PrincipalID: na.PrincipalID, Filename: cleanFilename(na.Filename, mt), MimeType: mt, Kind: kind.Kind,
		Size: size, SHA256: sum, StorageKey: key, Keep: na.Keep, ParentID: na.ParentID, UploadedBy: na.UploadedBy,
		AgentID: na.AgentID, TaskID: na.TaskID, CreatedAt: s.now(),
	}
	if kind.Kind == store.MediaKindImage {
		if w, h, ok := imageSize(full); ok {
			a.Width, a.Height = &w, &h
		}
	}
	if !na.Keep {
		exp := a.CreatedAt.Add(Retention)
		if expiresAt != nil {
			exp = *expiresAt
		}
		a.ExpiresAt = &exp
	}
	if err := checkAsset(&a); err != nil {
		_ = os.Remove(full)
		return nil, err
	}
	out, err := s.st.CreateMediaAsset(ctx, a)
	if err != nil {
		_ = os.Remove(full)
		return nil, err
	}
	return out, nil
}

func tooLarge(limit int64) error {
	return svcerr.New(svcerr.ErrTooLarge, "the file is larger than %d bytes", limit)
}

// readErr keeps a body-limit failure a 413 and makes other read failures a 400.
func readErr(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return svcerr.New(svcerr.ErrTooLarge, "the request body is larger than %d bytes", mbe.Limit)
	}
	if _, _, ok := svcerr.Public(err); ok {
		return err
	}
	return svcerr.New(svcerr.ErrBadRequest, "the file could not be read")
}

// writeFile copies r into path through a temporary file in the same directory and renames it
// into place, refusing more than limit bytes. It returns the size and the hex SHA-256.
func (s *Service) writeFile(full string, r io.Reader, limit int64) (int64, string, error) {
	dir := filepath.Dir(full)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return 0, "", fmt.Errorf("media: create directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".upload-*")
	if err != nil {
		return 0, "", fmt.Errorf("media: create file: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	src := &trackingReader{r: io.LimitReader(r, limit+1)}
	n, err := io.Copy(io.MultiWriter(tmp, h), src)
	if src.err != nil {
		return 0, "", readErr(src.err)
	}
	if err != nil {
		return 0, "", fmt.Errorf("media: write file: %w", err)
	}
	if n > limit {
		return 0, "", tooLarge(limit)
	}
	if err := tmp.Sync(); err != nil {
		return 0, "", fmt.Errorf("media: sync file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return 0, "", fmt.Errorf("media: close file: %w", err)
	}
	if err := os.Rename(tmp.Name(), full); err != nil {
		return 0, "", fmt.Errorf("media: store file: %w", err)
	}
	done = true
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// storageKey places an asset's file in one of 1024 subdirectories: "<2 chars>/<id>".
func storageKey(id string) string {
	r := strings.TrimPrefix(id, IDPrefix)
	return path.Join(r[:2], id)
}

// path maps a storage key to a file below the directory. Keys are ours ("xx/med_…"); anything
// else is refused by mapping it to a name that cannot exist.
func (s *Service) path(key string) string {
	clean := path.Clean("/" + key)[1:]
	if clean != key || strings.HasPrefix(key, ".") {
		return filepath.Join(s.dir, ".invalid")
	}
	return filepath.Join(s.dir, filepath.FromSlash(key))
}

func imageSize(full string) (int, int, bool) {
	f, err := os.Open(full)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	cfg, _, err := image.DecodeConfig(f)
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return 0, 0, false
	}
	return cfg.Width, cfg.Height, true
}

// cleanFilename keeps the base name of a client-supplied file name (no directories, no control
// characters, at most 255 characters); empty gives "file" with the type's extension.
func cleanFilename(name, mt string) string {
	name = strings.ReplaceAll(name, "\\", "/")
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' || r == 0xfffd {
			return -1
		}
		return r
	}, strings.ToValidUTF8(name, ""))
	name = strings.TrimSpace(name)
	if name == "" || name == "." || name == ".." {
		name = "file" + extension(mt)
	}
	if r := []rune(name); len(r) > limits.FilenameLen {
		name = string(r[:limits.FilenameLen])
	}
	return name
}

// extension is the usual file name extension of a MIME type ("" when unknown).
func extension(mt string) string {
	switch mt {
	case "image/jpeg":
		return ".jpg"
	case "text/plain":
		return ".txt"
	}
	if exts, err := mime.ExtensionsByType(mt); err == nil && len(exts) > 0 {
		return exts[0]
	}
	return ""
}

// Open opens the file of an asset for reading. Errors: uncategorised I/O errors (the file is
// missing or unreadable: an internal error).
func (s *Service) Open(_ context.Context, a *store.MediaAsset) (io.ReadSeekCloser, error) {
	f, err := os.Open(s.path(a.StorageKey))
	if err != nil {
		return nil, fmt.Errorf("media: open %s: %w", a.ID, err)
	}
	return f, nil
}

// Asset returns a live asset. Errors: ErrNotFound.
func (s *Service) Asset(ctx context.Context, id string) (*store.MediaAsset, error) {
	return s.st.MediaAssetAt(ctx, id, s.now())
}

// ReadableByAgent returns the asset when a key of agentID may read it (document 2: produced by
// the agent, in its chat tree including sub-agents, or attached to its chats). Errors:
// ErrNotFound in every other case, identical to a missing id.
func (s *Service) ReadableByAgent(ctx context.Context, agentID int64, id string) (*store.MediaAsset, error) {
	return s.st.MediaReadableByAgentAt(ctx, agentID, id, s.now())
}

// SetKeep sets the keep flag: true clears expires_at, false sets it to now plus Retention.
// check (may be nil) runs on the locked row first (manage rules). Errors: ErrNotFound, those of
// check.
func (s *Service) SetKeep(ctx context.Context, id string, keep bool, check store.MediaCheck) (*store.MediaAsset, error) {
	return s.st.SetMediaKeep(ctx, id, keep, s.now(), Retention, check)
}

// sweepBatch is how many expired assets one store call removes.
const sweepBatch = 100

// Sweep deletes every expired asset (unkept, past expires_at, attached to no chat) and its
// file, and returns how many it removed. A file that cannot be removed is logged and left
// behind. Once a day per process (the first call included) it also runs SweepOrphans, which
// collects files whose rows are gone but whose removal was lost (logged on failure, not
// counted). Call it periodically (the worker daemon does, with its housekeeping).
func (s *Service) Sweep(ctx context.Context) (int, error) {
	if s.orphanScanDue() {
		if _, err := s.SweepOrphans(ctx); err != nil {
			s.log.Warn("media orphan sweep", "err", err)
		}
	}
	total := 0
	for {
		keys, err := s.st.SweepExpiredMedia(ctx, s.now(), sweepBatch)
		if err != nil {
			return total, err
		}
		for _, k := range keys {
			if err := os.Remove(s.path(k)); err != nil && !errors.Is(err, os.ErrNotExist) {
				s.log.Warn("media sweep: remove file", "key", k, "err", err)
			}
		}
		total += len(keys)
		if len(keys) < sweepBatch {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}

// trackingReader remembers a read error, to tell it from a write error of io.Copy.
type trackingReader struct {
	r   io.Reader
	err error
}

func (t *trackingReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		t.err = err
	}
	return n, err
}

// List returns one page of the live assets of q.PrincipalIDs, newest first (store.ListMedia).
func (s *Service) List(ctx context.Context, q store.MediaQuery) ([]store.MediaAsset, error) {
	if q.Now.IsZero() {
		q.Now = s.now()
	}
	return s.st.ListMedia(ctx, q)
}

// Assets returns the live assets among ids, keyed by id.
func (s *Service) Assets(ctx context.Context, ids []string) (map[string]*store.MediaAsset, error) {
	return s.st.MediaAssetsAt(ctx, ids, s.now())
}

// MaxAgentUploadBytes caps an upload through an agent's key (document 2: 16 MiB).
const MaxAgentUploadBytes = 16 * MiB
