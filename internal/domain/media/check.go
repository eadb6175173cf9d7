package media

import (
	"github.com/agentsvc/svc/internal/vocab/fieldcheck"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/store"
)

// checkAsset applies the shape of an asset row before it is stored: id, MIME type and storage
// key of 1 to their column's length, a known kind, a size not negative, a SHA-256 digest, a
// file name of valid UTF-8 within limits.FilenameLen characters. save makes all of them
// (the file name is the uploader's, cleaned), so a refusal here is a programming error; it is
// checked all the same so that both dialects refuse the same rows. Errors: ErrInvalid.
func checkAsset(a *store.MediaAsset) error {
	switch {
	case a.ID == "" || len(a.ID) > store.MaxMediaIDLen:
		return fieldcheck.Invalidf("media id must be 1 to %d characters", store.MaxMediaIDLen)
	case a.MimeType == "" || len(a.MimeType) > store.MaxMediaMimeLen:
		return fieldcheck.Invalidf("mime type must be 1 to %d characters", store.MaxMediaMimeLen)
	case a.StorageKey == "" || len(a.StorageKey) > store.MaxMediaStorageLen:
		return fieldcheck.Invalidf("storage key must be 1 to %d characters", store.MaxMediaStorageLen)
	case !validKind(a.Kind):
		return fieldcheck.Invalidf("unknown media kind %q", a.Kind)
	case a.Size < 0:
		return fieldcheck.Invalidf("size must not be negative")
	case len(a.SHA256) != 64:
		return fieldcheck.Invalidf("sha256 must be 64 hex digits")
	}
	return fieldcheck.Text("filename", a.Filename, limits.FilenameLen)
}

func validKind(k string) bool {
	switch k {
	case store.MediaKindImage, store.MediaKindAudio, store.MediaKindVideo, store.MediaKindDocument, store.MediaKindOther:
		return true
	}
	return false
}
