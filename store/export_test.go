package store

import "gorm.io/gorm"

// GormDBForTest exposes the handle to tests that must look under the API (foreign keys,
// cascades, the principals table).
func (s *Store) GormDBForTest() *gorm.DB { return s.db }
