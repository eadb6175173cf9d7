package media

import (
	"context"
	"errors"
	"os"
)

// RemoveFiles deletes the files of storage keys whose asset rows are gone (a replaced picture,
// a discarded upload). A file that cannot be removed is logged and left behind; a missing one
// is no error.
func (s *Service) RemoveFiles(keys ...string) {
	for _, k := range keys {
		if k == "" {
			continue
		}
		if err := os.Remove(s.path(k)); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("media: remove file", "key", k, "err", err)
		}
	}
}

// Discard removes an asset that must not stay (its request was refused after the file was
// saved): the row, then the file, even when ctx was cancelled. A failure is logged: the row
// then expires as any unkept upload does.
func (s *Service) Discard(ctx context.Context, id string) {
	key, err := s.st.DiscardMediaAsset(context.WithoutCancel(ctx), id)
	if err != nil {
		s.log.Warn("media: discard asset", "media_id", id, "err", err)
		return
	}
	s.RemoveFiles(key)
}
