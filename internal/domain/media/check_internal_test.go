package media

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// TestCheckAsset holds the row shape rules the store applied before they moved here.
func TestCheckAsset(t *testing.T) {
	t.Parallel()
	valid := func() store.MediaAsset {
		return store.MediaAsset{ID: "med_ok", Filename: strings.Repeat("é", limits.FilenameLen), MimeType: "image/png",
			Kind: store.MediaKindImage, SHA256: strings.Repeat("b", 64), StorageKey: "x/y"}
	}
	a := valid()
	if err := checkAsset(&a); err != nil {
		t.Fatalf("valid asset: %v", err)
	}
	for name, mod := range map[string]func(a *store.MediaAsset){
		"empty id":      func(a *store.MediaAsset) { a.ID = "" },
		"long id":       func(a *store.MediaAsset) { a.ID = strings.Repeat("x", store.MaxMediaIDLen+1) },
		"no mime type":  func(a *store.MediaAsset) { a.MimeType = "" },
		"no storage":    func(a *store.MediaAsset) { a.StorageKey = "" },
		"kind":          func(a *store.MediaAsset) { a.Kind = "sticker" },
		"sha":           func(a *store.MediaAsset) { a.SHA256 = "abc" },
		"negative size": func(a *store.MediaAsset) { a.Size = -1 },
		"filename nul":  func(a *store.MediaAsset) { a.Filename = "a\x00b" },
		"long filename": func(a *store.MediaAsset) { a.Filename = strings.Repeat("f", limits.FilenameLen+1) },
	} {
		a := valid()
		mod(&a)
		if err := checkAsset(&a); !errors.Is(err, svcerr.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
