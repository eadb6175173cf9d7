package media

import (
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
