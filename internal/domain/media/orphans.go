package media

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// OrphanAge is how old (by modification time, judged on the service clock) a file below the
// storage directory must be before the orphan sweep removes it when no asset row names it. A
// file is written before its row (Save), so younger files may be uploads in flight.
const OrphanAge = 24 * time.Hour

// orphanScanEvery is how often (per process) Sweep also runs SweepOrphans: the scan walks the
// whole directory, and orphans only arise from a crash between a commit and a file removal.
const orphanScanEvery = 24 * time.Hour

// orphanBatch is how many file names one store lookup checks.
const orphanBatch = 100

// uploadTempPrefix starts the temporary files of writeFile.
const uploadTempPrefix = ".upload-"

// inlineDir is the folder below the storage directory where requests spool their inline files
// (package spool) while they are received; the request removes them when it ends.
const inlineDir = ".inline"

// InlineDir returns the folder inline files of a request are decoded to, creating it: beside
// the assets, so they fill the same disk and never memory (a tmpfs /tmp would). Files a crashed
// process left there are removed by SweepOrphans. Errors: file-system failures.
func (s *Service) InlineDir() (string, error) {
	dir := filepath.Join(s.dir, inlineDir)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("media: create %s: %w", inlineDir, err)
	}
	return dir, nil
}

// SweepOrphans removes the files below the storage directory older than OrphanAge that no
// asset row names: files whose rows were deleted (a deleted user's or group's assets, a
// replaced picture, a swept asset) when the process stopped before removing them, and
// temporary files of interrupted uploads. Only the layout Save writes is considered
// ("<2 chars>/med_…" and ".upload-*" beside them); other files are left alone. A file that
// cannot be removed is logged and left behind. Inline files older than OrphanAge that a
// request left in InlineDir (its process died) go too. It returns how many files it removed.
func (s *Service) SweepOrphans(ctx context.Context) (int, error) {
	subs, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	cutoff := s.now().Add(-OrphanAge)
	removed := s.sweepInline(cutoff)
	var batch []string // storage keys of candidate asset files
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		ids := make([]string, len(batch))
		for i, k := range batch {
			ids[i] = path.Base(k)
		}
		rows, err := s.st.MediaStorageKeys(ctx, ids)
		if err != nil {
			return err
		}
		for i, k := range batch {
			if rows[ids[i]] != k && s.removeOrphan(k) {
				removed++
			}
		}
		batch = batch[:0]
		return nil
	}
	for _, sub := range subs {
		if !sub.IsDir() || strings.HasPrefix(sub.Name(), ".") {
			continue
		}
		files, err := os.ReadDir(filepath.Join(s.dir, sub.Name()))
		if err != nil {
			s.log.Warn("media orphan sweep: read directory", "dir", sub.Name(), "err", err)
			continue
		}
		for _, f := range files {
			name := f.Name()
			if !f.Type().IsRegular() || (!strings.HasPrefix(name, IDPrefix) && !strings.HasPrefix(name, uploadTempPrefix)) {
				continue
			}
			info, err := f.Info()
			if err != nil || !info.ModTime().Before(cutoff) {
				continue
			}
			key := sub.Name() + "/" + name
			if strings.HasPrefix(name, uploadTempPrefix) {
				if s.removeOrphan(key) {
					removed++
				}
				continue
			}
			if batch = append(batch, key); len(batch) >= orphanBatch {
				if err := flush(); err != nil {
					return removed, err
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return removed, err
		}
	}
	return removed, flush()
}

// sweepInline removes the inline files last written before cutoff and returns how many.
func (s *Service) sweepInline(cutoff time.Time) int {
	files, err := os.ReadDir(filepath.Join(s.dir, inlineDir))
	if err != nil {
		return 0 // none spooled yet
	}
	removed := 0
	for _, f := range files {
		if info, err := f.Info(); err == nil && f.Type().IsRegular() && info.ModTime().Before(cutoff) &&
			s.removeOrphan(inlineDir+"/"+f.Name()) {
			removed++
		}
	}
	return removed
}

// removeOrphan removes the file at key (below the directory, by construction of the caller)
// and reports whether it did.
func (s *Service) removeOrphan(key string) bool {
	err := os.Remove(filepath.Join(s.dir, filepath.FromSlash(key)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Warn("media orphan sweep: remove file", "key", key, "err", err)
		return false
	}
	if err == nil {
		s.log.Info("media orphan sweep: removed file without asset", "key", key)
	}
	return err == nil
}

// orphanScanDue reports whether Sweep should run SweepOrphans now, and if so records the run.
func (s *Service) orphanScanDue() bool {
	s.orphanMu.Lock()
	defer s.orphanMu.Unlock()
	now := s.now()
	if !s.lastOrphanScan.IsZero() && now.Sub(s.lastOrphanScan) < orphanScanEvery && now.After(s.lastOrphanScan) {
		return false
	}
	s.lastOrphanScan = now
	return true
}
