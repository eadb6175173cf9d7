package media

import (
	"context"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/store"
)

// The session API's access rules for media, in one place: a user sees the assets of the
// principals they can see (access.Scope) and changes those of principals they manage. An asset
// the user cannot see answers as a missing one.

// Visible returns a live asset u can see. Errors: ErrNotFound (missing, expired or invisible).
func (s *Service) Visible(ctx context.Context, u *store.User, id string) (*store.MediaAsset, error) {
	scope, err := access.For(ctx, s.st, u)
	if err != nil {
		return nil, err
	}
	m, err := s.Asset(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := scope.See(m.PrincipalID, "media asset"); err != nil {
		return nil, err
	}
	return m, nil
}

// ListVisible returns one page of the live assets of the principals u can see, narrowed to
// principals when not nil (ids u cannot see are dropped silently) and to q.Kind. q.PrincipalIDs
// is ignored. Errors: the database's.
func (s *Service) ListVisible(ctx context.Context, u *store.User, principals []int64, q store.MediaQuery) ([]store.MediaAsset, error) {
	scope, err := access.For(ctx, s.st, u)
	if err != nil {
		return nil, err
	}
	q.PrincipalIDs = scope.Principals()
	if principals != nil {
		q.PrincipalIDs = []int64{}
		for _, p := range principals {
			if scope.CanSee(p) {
				q.PrincipalIDs = append(q.PrincipalIDs, p)
			}
		}
	}
	return s.List(ctx, q)
}

// SetKeepAs sets the keep flag of an asset whose principal u manages. Errors: ErrNotFound
// (missing or invisible), ErrForbidden (visible, not managed).
func (s *Service) SetKeepAs(ctx context.Context, u *store.User, id string, keep bool) (*store.MediaAsset, error) {
	scope, err := access.For(ctx, s.st, u)
	if err != nil {
		return nil, err
	}
	return s.SetKeep(ctx, id, keep, func(m *store.MediaAsset) error {
		return scope.Manage(m.PrincipalID, "media asset")
	})
}

// Resolve looks up ids (duplicates once, in first-occurrence order): the live assets u can see,
// and the other ids as missing. Errors: the database's.
func (s *Service) Resolve(ctx context.Context, u *store.User, ids []string) (found []*store.MediaAsset, missing []string, err error) {
	scope, err := access.For(ctx, s.st, u)
	if err != nil {
		return nil, nil, err
	}
	var uniq []string
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	assets, err := s.Assets(ctx, uniq)
	if err != nil {
		return nil, nil, err
	}
	found, missing = []*store.MediaAsset{}, []string{}
	for _, id := range uniq {
		if m := assets[id]; m != nil && scope.CanSee(m.PrincipalID) {
			found = append(found, m)
		} else {
			missing = append(missing, id)
		}
	}
	return found, missing, nil
}
