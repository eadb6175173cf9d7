package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Group limits.
const (
	// MaxGroupPreferencesLen bounds the serialised (compact JSON) preferences object, in bytes.
	MaxGroupPreferencesLen = 65536
)

// Group is a set of users that is also a principal: it owns agents, media and model
// configurations through PrincipalID.
type Group struct {
	ID             int64
	PrincipalID    int64
	Name           string
	Description    string
	PictureMediaID *string // media asset of the picture; nil when none
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// GroupUpdate lists the fields UpdateGroup changes; nil fields stay as they are.
type GroupUpdate struct {
	Name        *string
	Description *string
}

// GroupMember is a user's membership with the user's public fields.
type GroupMember struct {
	GroupID     int64
	UserID      int64
	Email       string
	DisplayName string
	Role        string // GroupRoleOwner, GroupRoleAdmin or GroupRoleMember
	Source      string // MemberSourceManual, or "oidc:<slug>" for a provider's group mapping
	JoinedAt    time.Time
}

// MemberSourceManual marks a membership added in the console or the API (not by a provider's
// group mapping).
const MemberSourceManual = "manual"

// RoleCheck decides inside a membership write whether the change may proceed. roles maps every
// member's user id to their role, read under the group's write lock, so the decision and the
// write see the same memberships. A non-nil error aborts the write and is returned as it is.
type RoleCheck func(roles map[int64]string) error

type groupRow struct {
	ID             int64
	PrincipalID    int64
	Name           string
	Description    string
	PictureMediaID *string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

func (groupRow) TableName() string { return "principal_groups" }

func (r *groupRow) toGroup() *Group {
	return &Group{
		ID: r.ID, PrincipalID: r.PrincipalID, Name: r.Name, Description: r.Description,
		PictureMediaID: r.PictureMediaID, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
}

type groupMemberRow struct {
	GroupID   int64 `gorm:"primaryKey;autoIncrement:false"`
	UserID    int64 `gorm:"primaryKey;autoIncrement:false"`
	Role      string
	Source    string // MemberSourceManual or "oidc:<slug>"
	CreatedAt time.Time
}

func (groupMemberRow) TableName() string { return "group_members" }

type groupPreferencesRow struct {
	GroupID     int64 `gorm:"primaryKey;autoIncrement:false"`
	Preferences string
	UpdatedAt   time.Time
}

func (groupPreferencesRow) TableName() string { return "group_preferences" }

func groupNotFound(id int64) error {
	return svcerr.New(svcerr.ErrNotFound, "group %d not found", id)
}

func memberNotFound(groupID, userID int64) error {
	return svcerr.New(svcerr.ErrNotFound, "user %d is not a member of group %d", userID, groupID)
}

// CreateGroup creates a group, its principal and the owner's membership in one transaction.
// The caller has checked (and trimmed) the name and description (package group). Errors:
// ErrInvalid "the owner does not exist" (known only in the transaction).
func (s *Principals) CreateGroup(ctx context.Context, ownerUserID int64, name, description string) (*Group, error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*Group, error) {
		if err := userExists(tx, ownerUserID); err != nil {
			return nil, invalidf("the owner does not exist") // read in the writing transaction
		}
		now := s.now()
		p := principalRow{Kind: PrincipalGroup, Name: name, CreatedAt: now}
		if err := tx.Create(&p).Error; err != nil {
			return nil, fmt.Errorf("create group principal: %w", err)
		}
		g := groupRow{PrincipalID: p.ID, Name: name, Description: description, CreatedAt: now, UpdatedAt: now}
		if err := tx.Create(&g).Error; err != nil {
			return nil, fmt.Errorf("create group: %w", err)
		}
		m := groupMemberRow{GroupID: g.ID, UserID: ownerUserID, Role: GroupRoleOwner, Source: MemberSourceManual, CreatedAt: now}
		if err := tx.Create(&m).Error; err != nil {
			return nil, fmt.Errorf("add owner %d to group %d: %w", ownerUserID, g.ID, err)
		}
		return g.toGroup(), nil
	})
}

// GroupByID returns a group. Errors: ErrNotFound.
func (s *Principals) GroupByID(ctx context.Context, id int64) (*Group, error) {
	var row groupRow
	if err := s.conn(ctx).Take(&row, id).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, groupNotFound(id)
		}
		return nil, TranslateError(fmt.Errorf("load group %d: %w", id, err))
	}
	return row.toGroup(), nil
}

// ListGroups returns one page of groups ordered by name ignoring case (then id): the groups
// memberOf belongs to, or every group when memberOf is 0. page starts at 1 (lower values mean
// 1); perPage below 1 means 25 and is capped at 100. Both dialects order ASCII names alike;
// beyond ASCII, MySQL/MariaDB fold case (and accents) where SQLite compares bytes.
func (s *Principals) ListGroups(ctx context.Context, memberOf int64, page, perPage int) ([]Group, error) {
	page, perPage = pageBounds(page, perPage)
	q := s.conn(ctx).Model(&groupRow{})
	if memberOf != 0 {
		q = q.Where("id IN (?)", s.conn(ctx).Model(&groupMemberRow{}).Select("group_id").Where("user_id = ?", memberOf))
	}
	var rows []groupRow
	if err := q.Order("LOWER(name), id").Limit(perPage).Offset((page - 1) * perPage).Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("list groups: %w", err))
	}
	out := make([]Group, len(rows))
	for i := range rows {
		out[i] = *rows[i].toGroup()
	}
	return out, nil
}

func pageBounds(page, perPage int) (int, int) {
	if page < 1 {
		page = 1
	}
	if perPage < 1 {
		perPage = limits.DefaultPerPage
	}
	return page, min(perPage, limits.MaxPerPage)
}

// UpdateGroup changes the fields set in upd (a new name renames the group's principal too) and
// returns the group. The caller has checked (and trimmed) them (package group). Errors:
// ErrNotFound.
func (s *Principals) UpdateGroup(ctx context.Context, id int64, upd GroupUpdate) (*Group, error) {
	changes := map[string]any{}
	if upd.Name != nil {
		changes["name"] = *upd.Name
	}
	if upd.Description != nil {
		changes["description"] = *upd.Description
	}
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*Group, error) {
		row, err := lockGroup(tx, id)
		if err != nil {
			return nil, err
		}
		changes["updated_at"] = s.now()
		if err := tx.Model(&groupRow{}).Where("id = ?", id).Updates(changes).Error; err != nil {
			return nil, fmt.Errorf("update group %d: %w", id, err)
		}
		if n, ok := changes["name"]; ok {
			if err := tx.Model(&principalRow{}).Where("id = ?", row.PrincipalID).Update("name", n).Error; err != nil {
				return nil, fmt.Errorf("rename principal %d: %w", row.PrincipalID, err)
			}
		}
		*row = groupRow{}
		if err := tx.Take(row, id).Error; err != nil {
			return nil, fmt.Errorf("reload group %d: %w", id, err)
		}
		return row.toGroup(), nil
	})
}

// DeleteGroup removes a group with its members, preferences, model configurations and
// principal, in one transaction. Other rows owned by the group's principal are expected to
// reference it with ON DELETE CASCADE. The cascade deletes the principal's media assets
// (the picture included): DeleteGroup returns their storage keys for the caller to remove the
// files once the deletion is committed. Errors: ErrNotFound, ErrInvalidState (the group's
// principal still owns agents).
func (s *Principals) DeleteGroup(ctx context.Context, id int64) (mediaKeys []string, err error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) ([]string, error) {
		mediaKeys = nil
		row, err := lockGroup(tx, id)
		if err != nil {
			return nil, err
		}
		owns, err := principalOwnsAgents(tx, row.PrincipalID)
		if err != nil {
			return nil, err
		}
		if owns {
			return nil, svcerr.New(svcerr.ErrInvalidState, "the group still owns agents; transfer or delete them first")
		}
		for _, del := range []struct {
			what  string
			model any
		}{
			{"model configurations", &llmConfigRow{}},
			{"preferences", &groupPreferencesRow{}},
			{"members", &groupMemberRow{}},
		} {
			if err := tx.Where("group_id = ?", id).Delete(del.model).Error; err != nil {
				return nil, fmt.Errorf("delete %s of group %d: %w", del.what, id, err)
			}
		}
		keys, err := principalMediaKeys(tx, row.PrincipalID)
		if err != nil {
			return nil, err
		}
		if err := tx.Delete(&groupRow{}, id).Error; err != nil {
			return nil, fmt.Errorf("delete group %d: %w", id, err)
		}
		if err := tx.Delete(&principalRow{}, row.PrincipalID).Error; err != nil {
			return nil, fmt.Errorf("delete principal %d of group %d: %w", row.PrincipalID, id, err)
		}
		return keys, nil
	})
}

// PrincipalOwnsAgents reports whether any agent is owned by the principal (a group with agents
// cannot be deleted). Errors: uncategorised database failures only.
func (s *Principals) PrincipalOwnsAgents(ctx context.Context, principalID int64) (bool, error) {
	owns, err := principalOwnsAgents(s.conn(ctx), principalID)
	return owns, TranslateError(err)
}

func principalOwnsAgents(db *gorm.DB, principalID int64) (bool, error) {
	var ids []int64
	if err := db.Table("agents").Where("principal_id = ?", principalID).Limit(1).Pluck("principal_id", &ids).Error; err != nil {
		return false, fmt.Errorf("agents of principal %d: %w", principalID, err)
	}
	return len(ids) > 0, nil
}

// lockGroup reads a group and holds its row lock to the end of tx, serialising writes to the
// group's memberships and configurations (MySQL/MariaDB: SELECT … FOR UPDATE; SQLite: the
// immediate transaction already holds the write lock). Errors: ErrNotFound.
func lockGroup(tx *gorm.DB, id int64) (*groupRow, error) {
	var row groupRow
	err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, groupNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("lock group %d: %w", id, err)
	}
	return &row, nil
}

// groupRoles maps each member of the group to their role.
func groupRoles(tx *gorm.DB, groupID int64) (map[int64]string, error) {
	var rows []groupMemberRow
	if err := tx.Where("group_id = ?", groupID).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("members of group %d: %w", groupID, err)
	}
	out := make(map[int64]string, len(rows))
	for _, r := range rows {
		out[r.UserID] = r.Role
	}
	return out, nil
}

// errLastOwner is the refusal to leave a group without an owner.
func errLastOwner(action string) error {
	return svcerr.New(svcerr.ErrInvalidState, "the last owner of a group cannot be %s", action)
}

func onlyOwner(roles map[int64]string, userID int64) bool {
	if roles[userID] != GroupRoleOwner {
		return false
	}
	for id, r := range roles {
		if id != userID && r == GroupRoleOwner {
			return false
		}
	}
	return true
}

type memberJoin struct {
	GroupID     int64
	UserID      int64
	Role        string
	Source      string
	CreatedAt   time.Time
	Email       string
	DisplayName string
}

func (m *memberJoin) toMember() *GroupMember {
	return &GroupMember{GroupID: m.GroupID, UserID: m.UserID, Email: m.Email, DisplayName: m.DisplayName,
		Role: m.Role, Source: m.Source, JoinedAt: m.CreatedAt.UTC()}
}

func membersQuery(db *gorm.DB, groupID int64) *gorm.DB {
	return db.Table("group_members").
		Select("group_members.group_id, group_members.user_id, group_members.role, group_members.source, group_members.created_at, users.email, users.display_name").
		Joins("JOIN users ON users.id = group_members.user_id").
		Where("group_members.group_id = ?", groupID)
}

func loadMember(db *gorm.DB, groupID, userID int64) (*GroupMember, error) {
	var rows []memberJoin
	if err := membersQuery(db, groupID).Where("group_members.user_id = ?", userID).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("load member %d of group %d: %w", userID, groupID, err)
	}
	if len(rows) == 0 {
		return nil, memberNotFound(groupID, userID)
	}
	return rows[0].toMember(), nil
}

// GroupMembers returns one page of the group's members ordered by role (owner, admin, member),
// then display name ignoring case, then user id; paging as ListGroups. Errors: ErrNotFound (no such group).
func (s *Principals) GroupMembers(ctx context.Context, groupID int64, page, perPage int) ([]GroupMember, error) {
	page, perPage = pageBounds(page, perPage)
	db := s.conn(ctx)
	if _, err := s.GroupByID(ctx, groupID); err != nil {
		return nil, err
	}
	var rows []memberJoin
	err := membersQuery(db, groupID).
		Order("CASE group_members.role WHEN '" + GroupRoleOwner + "' THEN 0 WHEN '" + GroupRoleAdmin + "' THEN 1 ELSE 2 END, LOWER(users.display_name), group_members.user_id").
		Limit(perPage).Offset((page - 1) * perPage).Scan(&rows).Error
	if err != nil {
		return nil, TranslateError(fmt.Errorf("list members of group %d: %w", groupID, err))
	}
	out := make([]GroupMember, len(rows))
	for i := range rows {
		out[i] = *rows[i].toMember()
	}
	return out, nil
}

// GroupMember returns one membership. Errors: ErrNotFound (no such group or not a member).
func (s *Principals) GroupMember(ctx context.Context, groupID, userID int64) (*GroupMember, error) {
	m, err := loadMember(s.conn(ctx), groupID, userID)
	return m, TranslateError(err)
}

// AddGroupMember makes the user a member of the group with role. check (may be nil) sees the
// memberships before the change; the caller has checked role (group.ValidRole). Errors:
// ErrNotFound (no such group), ErrInvalid "no such user" (read in the transaction), ErrConflict
// (already a member), and whatever check returns.
func (s *Principals) AddGroupMember(ctx context.Context, groupID, userID int64, role string, check RoleCheck) (*GroupMember, error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*GroupMember, error) {
		if _, err := lockGroup(tx, groupID); err != nil {
			return nil, err
		}
		roles, err := groupRoles(tx, groupID)
		if err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(roles); err != nil {
				return nil, err
			}
		}
		if _, ok := roles[userID]; ok {
			return nil, svcerr.New(svcerr.ErrConflict, "the user is already a member of this group")
		}
		if err := userExists(tx, userID); err != nil {
			return nil, invalidf("no such user") // read in the writing transaction
		}
		row := groupMemberRow{GroupID: groupID, UserID: userID, Role: role, Source: MemberSourceManual, CreatedAt: s.now()}
		if err := tx.Create(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) {
				return nil, svcerr.New(svcerr.ErrConflict, "the user is already a member of this group")
			}
			return nil, fmt.Errorf("add user %d to group %d: %w", userID, groupID, err)
		}
		return loadMember(tx, groupID, userID)
	})
}

// UpdateGroupMember changes a member's role; setting the current role again is a no-op. check
// (may be nil) sees the memberships before the change; the caller has checked role
// (group.ValidRole). Errors: ErrNotFound (no such group or not a member), ErrInvalidState
// (demoting the last owner, read under the group's lock), and whatever check returns.
func (s *Principals) UpdateGroupMember(ctx context.Context, groupID, userID int64, role string, check RoleCheck) (*GroupMember, error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*GroupMember, error) {
		if _, err := lockGroup(tx, groupID); err != nil {
			return nil, err
		}
		roles, err := groupRoles(tx, groupID)
		if err != nil {
			return nil, err
		}
		if _, ok := roles[userID]; !ok {
			return nil, memberNotFound(groupID, userID)
		}
		if check != nil {
			if err := check(roles); err != nil {
				return nil, err
			}
		}
		if role != GroupRoleOwner && onlyOwner(roles, userID) {
			return nil, errLastOwner("demoted")
		}
		if roles[userID] != role {
			err := tx.Model(&groupMemberRow{}).Where("group_id = ? AND user_id = ?", groupID, userID).Update("role", role).Error
			if err != nil {
				return nil, fmt.Errorf("change role of user %d in group %d: %w", userID, groupID, err)
			}
		}
		return loadMember(tx, groupID, userID)
	})
}

// RemoveGroupMember ends a membership. check (may be nil) sees the memberships before the
// change. Errors: ErrNotFound (no such group or not a member), ErrInvalidState (the last
// owner), and whatever check returns.
func (s *Principals) RemoveGroupMember(ctx context.Context, groupID, userID int64, check RoleCheck) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		if _, err := lockGroup(tx, groupID); err != nil {
			return err
		}
		roles, err := groupRoles(tx, groupID)
		if err != nil {
			return err
		}
		if _, ok := roles[userID]; !ok {
			return memberNotFound(groupID, userID)
		}
		if check != nil {
			if err := check(roles); err != nil {
				return err
			}
		}
		if onlyOwner(roles, userID) {
			return errLastOwner("removed")
		}
		if err := tx.Where("group_id = ? AND user_id = ?", groupID, userID).Delete(&groupMemberRow{}).Error; err != nil {
			return fmt.Errorf("remove user %d from group %d: %w", userID, groupID, err)
		}
		return nil
	})
}

// GroupPreferences returns the group's preferences, an empty object until first written.
// Errors: ErrNotFound (no such group); uncategorised when the stored value is not JSON.
func (s *Principals) GroupPreferences(ctx context.Context, groupID int64) (map[string]any, error) {
	if _, err := s.GroupByID(ctx, groupID); err != nil {
		return nil, err
	}
	var rows []groupPreferencesRow
	if err := s.conn(ctx).Where("group_id = ?", groupID).Limit(1).Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("load preferences of group %d: %w", groupID, err))
	}
	if len(rows) == 0 {
		return map[string]any{}, nil
	}
	return decodePreferences(groupID, rows[0].Preferences)
}

func decodePreferences(groupID int64, raw string) (map[string]any, error) {
	out := map[string]any{}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, fmt.Errorf("preferences of group %d hold invalid JSON: %w", groupID, err)
	}
	if out == nil { // stored "null"
		out = map[string]any{}
	}
	return out, nil
}

// PutGroupPreferences replaces the group's preferences (nil stores an empty object) and returns
// what was stored. The caller has checked them (group.CheckPreferences), so an encoding
// failure is a programming error. Errors: ErrNotFound (no such group).
func (s *Principals) PutGroupPreferences(ctx context.Context, groupID int64, prefs map[string]any) (map[string]any, error) {
	if prefs == nil {
		prefs = map[string]any{}
	}
	b, err := json.Marshal(prefs)
	if err != nil {
		return nil, fmt.Errorf("encode preferences of group %d: %w", groupID, err)
	}
	err = s.tx(ctx, func(tx *gorm.DB) error {
		if _, err := lockGroup(tx, groupID); err != nil {
			return err
		}
		row := groupPreferencesRow{GroupID: groupID, Preferences: string(b), UpdatedAt: s.now()}
		err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "group_id"}},
			DoUpdates: clause.AssignmentColumns([]string{"preferences", "updated_at"}),
		}).Create(&row).Error
		if err != nil {
			return fmt.Errorf("store preferences of group %d: %w", groupID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return decodePreferences(groupID, string(b))
}
