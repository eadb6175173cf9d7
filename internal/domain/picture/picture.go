// Package picture holds the rules of pictures: the image of a user, an agent or a group. A
// picture is a kept media asset owned by the subject's principal (the user's personal principal,
// the agent's owner, the group's principal); only PNG, JPEG, GIF and WebP detected from the
// bytes are accepted, at most MaxBytes. Replacing or deleting a picture deletes the old asset
// and its file. Who may change a picture: the user themself; the managers of an agent's owner
// (document 1, rule 6: 404 when invisible, 403 when visible only); a group's owners and admins
// and administrators. Anyone who can see the subject may read its picture (any signed-in user
// for users' pictures).
package picture

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// MaxBytes is the largest picture accepted (5 MiB).
const MaxBytes = 5 * media.MiB

// sniffLen is how many leading bytes are read to detect the type (as the media service does).
const sniffLen = 3072

// Store is what the service needs of the store; *store.Store satisfies it.
type Store interface {
	access.Memberships
	Agent(ctx context.Context, id, viewer int64) (*store.Agent, error)
	GroupByID(ctx context.Context, id int64) (*store.Group, error)
	SetPicture(ctx context.Context, subject store.PictureSubject, id int64, mediaID *string, check store.PictureCheck) (string, error)
	UserByID(ctx context.Context, id int64) (*store.User, error)
}

// Service changes and reads pictures.
type Service struct {
	store Store
	media *media.Service
}

// New returns the service over st, storing files with m.
func New(st Store, m *media.Service) *Service { return &Service{store: st, media: m} }

// Target is a subject whose picture the caller may change (see User, Agent, Group).
type Target struct {
	subject store.PictureSubject
	id      int64
	owner   int64              // the principal owning the asset
	check   store.PictureCheck // re-run on the locked row
}

// User is the signed-in user's own picture.
func (s *Service) User(u *store.User) *Target {
	return &Target{subject: store.PictureOfUser, id: u.ID, owner: u.PrincipalID}
}

// Agent is the picture of agent id, which u must manage. Errors: ErrNotFound "agent not
// found" (absent or invisible), ErrForbidden (visible without manage rights).
func (s *Service) Agent(ctx context.Context, u *store.User, id int64) (*Target, error) {
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, err
	}
	a, err := s.store.Agent(ctx, id, u.ID)
	if err != nil {
		return nil, err
	}
	check := func(p int64) error { return sc.Manage(p, "agent") }
	if err := check(a.PrincipalID); err != nil {
		return nil, err
	}
	return &Target{subject: store.PictureOfAgent, id: a.ID, owner: a.PrincipalID, check: check}, nil
}

// Group is the picture of group id, which u must manage (owners and admins of the group,
// administrators). Errors: ErrNotFound (absent or invisible), ErrForbidden (a plain member).
func (s *Service) Group(ctx context.Context, u *store.User, id int64) (*Target, error) {
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, err
	}
	g, err := s.store.GroupByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := sc.See(g.PrincipalID, "group"); err != nil {
		return nil, err
	}
	check := func(p int64) error { return sc.Manage(p, "this group") }
	if err := check(g.PrincipalID); err != nil {
		return nil, err
	}
	return &Target{subject: store.PictureOfGroup, id: g.ID, owner: g.PrincipalID, check: check}, nil
}

// Set stores data as the picture of t, replacing (and deleting) any earlier one, and returns
// the new asset. Errors: ErrUnsupportedMediaType (not PNG, JPEG, GIF or WebP), ErrTooLarge
// (over MaxBytes), ErrBadRequest (unreadable), those of the target's check and the store.
func (s *Service) Set(ctx context.Context, t *Target, filename string, data io.Reader, uploadedBy int64) (*store.MediaAsset, error) {
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(data, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, readErr(err)
	}
	head = head[:n]
	if n == 0 {
		return nil, svcerr.New(svcerr.ErrBadRequest, "the picture file is empty")
	}
	if err := CheckType(head); err != nil {
		return nil, err
	}
	by := uploadedBy
	a, err := s.media.Save(ctx, media.NewAsset{PrincipalID: t.owner, Filename: filename,
		Data: io.MultiReader(bytes.NewReader(head), data), MaxBytes: MaxBytes, UploadedBy: &by, Keep: true})
	if err != nil {
		return nil, err
	}
	old, err := s.store.SetPicture(ctx, t.subject, t.id, &a.ID, t.check)
	if err != nil {
		// The subject is gone or the rights changed meanwhile: the new asset goes too.
		s.media.Discard(ctx, a.ID)
		return nil, err
	}
	s.media.RemoveFiles(old)
	return a, nil
}

// Clear removes the picture of t (and its asset); a subject without one is left as it is.
// Errors: those of the target's check and the store.
func (s *Service) Clear(ctx context.Context, t *Target) error {
	old, err := s.store.SetPicture(ctx, t.subject, t.id, nil, t.check)
	if err != nil {
		return err
	}
	s.media.RemoveFiles(old)
	return nil
}

// CheckType accepts the leading bytes of a picture: PNG, JPEG, GIF or WebP detected from the
// content. Errors: ErrUnsupportedMediaType for anything else (SVG included).
func CheckType(head []byte) error {
	mt := media.Detect(head)
	switch mt {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return nil
	}
	return svcerr.New(svcerr.ErrUnsupportedMediaType, "a picture must be a PNG, JPEG, GIF or WebP image, not %s", mt)
}

// Open returns the picture asset mediaID (a subject's picture_media_id) and its file for
// reading; the caller closes it. Errors: ErrNotFound "picture not found" (nil id, or the asset
// is gone), I/O errors uncategorised.
func (s *Service) Open(ctx context.Context, mediaID *string) (*store.MediaAsset, io.ReadSeekCloser, error) {
	if mediaID == nil {
		return nil, nil, notFound()
	}
	a, err := s.media.Asset(ctx, *mediaID)
	if errors.Is(err, svcerr.ErrNotFound) {
		return nil, nil, notFound()
	}
	if err != nil {
		return nil, nil, err
	}
	f, err := s.media.Open(ctx, a)
	if err != nil {
		return nil, nil, err
	}
	return a, f, nil
}

// OpenUser returns the picture of user id and its file for reading, for any signed-in user
// (every signed-in user may see every user's picture); the caller closes it. Errors:
// ErrNotFound (no such user: store.UserByID's; "picture not found": as Open), I/O errors
// uncategorised.
func (s *Service) OpenUser(ctx context.Context, id int64) (*store.MediaAsset, io.ReadSeekCloser, error) {
	u, err := s.store.UserByID(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return s.Open(ctx, u.PictureMediaID)
}

func notFound() error { return svcerr.New(svcerr.ErrNotFound, "picture not found") }

// readErr keeps a body-limit failure a 413 and makes other read failures a 400.
func readErr(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return svcerr.New(svcerr.ErrTooLarge, "the request body is larger than %d bytes", mbe.Limit)
	}
	if _, _, ok := svcerr.Public(err); ok {
		return err
	}
	return svcerr.New(svcerr.ErrBadRequest, "the picture could not be read")
}
