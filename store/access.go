package store

import (
	"context"
	"fmt"
)

// Principal roles a user holds, as Memberships reports them.
const (
	RoleSelf        = "self" // the user's personal principal
	GroupRoleOwner  = "owner"
	GroupRoleAdmin  = "admin"
	GroupRoleMember = "member"
)

// Memberships returns every principal the user is or belongs to, with the user's role there:
// RoleSelf for the personal principal, the member role for each group's principal.
// Errors: ErrNotFound (no such user).
func (s *Principals) Memberships(ctx context.Context, userID int64) (map[int64]string, error) {
	var self []int64
	db := s.conn(ctx)
	if err := db.Table("users").Where("id = ?", userID).Pluck("principal_id", &self).Error; err != nil {
		return nil, TranslateError(err)
	}
	if len(self) == 0 {
		return nil, userNotFound(userID)
	}
	var rows []struct {
		PrincipalID int64
		Role        string
	}
	err := db.Table("group_members").
		Select("principal_groups.principal_id AS principal_id, group_members.role AS role").
		Joins("JOIN principal_groups ON principal_groups.id = group_members.group_id").
		Where("group_members.user_id = ?", userID).
		Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("memberships of user %d: %w", userID, TranslateError(err))
	}
	out := make(map[int64]string, len(rows)+1)
	out[self[0]] = RoleSelf
	for _, r := range rows {
		out[r.PrincipalID] = r.Role
	}
	return out, nil
}
