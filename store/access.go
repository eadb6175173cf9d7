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

// PrincipalManagers returns the users who manage principal p by their role there, ascending:
// the user whose personal principal it is, or a group's owners and admins (administrators, who
// manage everything by their account's role, are not listed). Errors: the database's.
func (s *Principals) PrincipalManagers(ctx context.Context, p int64) ([]int64, error) {
	var ids []int64
	db := s.conn(ctx)
	if err := db.Table("users").Where("principal_id = ?", p).Pluck("id", &ids).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("managers of principal %d: %w", p, err))
	}
	var members []int64
	err := db.Table("group_members").
		Joins("JOIN principal_groups ON principal_groups.id = group_members.group_id").
		Where("principal_groups.principal_id = ? AND group_members.role IN ?", p, []string{GroupRoleOwner, GroupRoleAdmin}).
		Order("group_members.user_id").Pluck("group_members.user_id", &members).Error
	if err != nil {
		return nil, TranslateError(fmt.Errorf("managers of principal %d: %w", p, err))
	}
	return append(ids, members...), nil
}
