package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// RoleAdmin is the role that makes a user an administrator.
const RoleAdmin = "admin"

// Principal kinds.
const (
	PrincipalUser  = "user"
	PrincipalGroup = "group"
)

// User is an account. PasswordHash is whatever the auth layer stored (argon2id or bcrypt
// encoding); it never leaves the server.
type User struct {
	ID              int64
	Email           string // lowercased
	DisplayName     string
	PasswordHash    string
	PrincipalID     int64 // the user's personal principal
	EmailVerifiedAt *time.Time
	PendingEmail    *string // requested new address awaiting confirmation
	PictureMediaID  *string // media asset of the picture; nil when none
	Roles           []string
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// IsAdmin reports whether the user holds RoleAdmin.
func (u User) IsAdmin() bool { return slices.Contains(u.Roles, RoleAdmin) }

// EmailVerified reports whether the current address has been confirmed.
func (u User) EmailVerified() bool { return u.EmailVerifiedAt != nil }

// NewUser is the input of CreateUser.
type NewUser struct {
	Email        string
	PasswordHash string
	DisplayName  string
	// Admin grants RoleAdmin unconditionally (svc user create --admin).
	Admin bool
	// AdminIfFirst grants RoleAdmin when no user exists yet (self-registration): exactly one
	// of several concurrent first registrations becomes administrator.
	AdminIfFirst bool
	// Verified marks the email address as confirmed at creation.
	Verified bool
}

// UserUpdate lists the fields UpdateUser changes; nil fields stay as they are.
type UserUpdate struct {
	Email        *string
	DisplayName  *string
	PasswordHash *string
	// EmailVerified true stamps the verification time (kept when already verified); false
	// clears it.
	EmailVerified *bool
	// PendingEmail: nil leaves it, a pointer to nil clears it, a pointer to an address sets it.
	PendingEmail **string
}

type principalRow struct {
	ID        int64
	Kind      string
	Name      string
	CreatedAt time.Time
}

func (principalRow) TableName() string { return "principals" }

type userRow struct {
	ID              int64
	Email           string
	PasswordHash    string
	DisplayName     string
	PrincipalID     int64
	EmailVerifiedAt *time.Time
	PendingEmail    *string
	PictureMediaID  *string
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

func (userRow) TableName() string { return "users" }

func (r *userRow) toUser(roles []string) *User {
	if roles == nil {
		roles = []string{}
	}
	return &User{
		ID:              r.ID,
		Email:           r.Email,
		DisplayName:     r.DisplayName,
		PasswordHash:    r.PasswordHash,
		PrincipalID:     r.PrincipalID,
		EmailVerifiedAt: utcPtr(r.EmailVerifiedAt),
		PendingEmail:    r.PendingEmail,
		PictureMediaID:  r.PictureMediaID,
		Roles:           roles,
		CreatedAt:       r.CreatedAt.UTC(),
		UpdatedAt:       r.UpdatedAt.UTC(),
	}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

type userRoleRow struct {
	UserID    int64  `gorm:"primaryKey;autoIncrement:false"`
	Role      string `gorm:"primaryKey"`
	CreatedAt time.Time
}

func (userRoleRow) TableName() string { return "user_roles" }

func errEmailTaken() error { return svcerr.New(svcerr.ErrConflict, "email already registered") }

func errLastAdmin() error {
	return svcerr.New(svcerr.ErrConflict, "cannot remove the last administrator")
}

// principalName is the label of a user's personal principal.
func principalName(displayName, email string) string {
	if displayName != "" {
		return displayName
	}
	return email
}

// checkPasswordHash guards the password_hash column against the account service's own
// encoding (argon2id or bcrypt, never user input): printable ASCII within its length.
func checkPasswordHash(passwordHash string) error {
	if passwordHash == "" {
		return nil
	}
	return checkASCII("password_hash", passwordHash, 1, MaxPasswordHashLen)
}

// lowerEmail is the form the unique index of users.email compares (trimmed, lowercased), so one
// address in two letter cases is one account. The address rules are account's (normaliseEmail,
// before the store call).
func lowerEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// CreateUser creates a user with a personal principal, and grants RoleAdmin when nu.Admin is
// set or when nu.AdminIfFirst is set and no user exists yet. Concurrent first registrations
// are serialised (account lock on MySQL/MariaDB, immediate transaction on SQLite), so exactly
// one becomes administrator. The email address and display name are checked by the caller
// (account.Service, before this call); the email is stored trimmed and lowercased. Errors:
// ErrInvalid (a password hash that is not printable ASCII), ErrConflict "email already
// registered" (any letter case).
func (s *Principals) CreateUser(ctx context.Context, nu NewUser) (*User, error) {
	email := lowerEmail(nu.Email)
	if err := checkPasswordHash(nu.PasswordHash); err != nil {
		return nil, err
	}
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*User, error) {
		if err := lockAccounts(tx); err != nil {
			return nil, err
		}
		now := s.now()
		admin := nu.Admin
		if !admin && nu.AdminIfFirst {
			var n int64
			if err := tx.Model(&userRow{}).Count(&n).Error; err != nil {
				return nil, fmt.Errorf("count users: %w", err)
			}
			admin = n == 0
		}
		p := principalRow{Kind: PrincipalUser, Name: principalName(nu.DisplayName, email), CreatedAt: now}
		if err := tx.Create(&p).Error; err != nil {
			return nil, fmt.Errorf("create principal: %w", err)
		}
		u := userRow{
			Email: email, PasswordHash: nu.PasswordHash, DisplayName: nu.DisplayName,
			PrincipalID: p.ID, CreatedAt: now, UpdatedAt: now,
		}
		if nu.Verified {
			u.EmailVerifiedAt = &now
		}
		if err := tx.Create(&u).Error; err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) {
				return nil, errEmailTaken()
			}
			return nil, fmt.Errorf("create user: %w", err)
		}
		var roles []string
		if admin {
			if err := tx.Create(&userRoleRow{UserID: u.ID, Role: RoleAdmin, CreatedAt: now}).Error; err != nil {
				return nil, fmt.Errorf("grant admin to user %d: %w", u.ID, err)
			}
			roles = []string{RoleAdmin}
		}
		return u.toUser(roles), nil
	})
}

// UserByID returns a user with its roles. Errors: ErrNotFound.
func (s *Principals) UserByID(ctx context.Context, id int64) (*User, error) {
	u, err := loadUser(s.conn(ctx), id)
	return u, TranslateError(err)
}

// UserByEmail returns the user with this address, compared case-insensitively.
// Errors: ErrNotFound (also for an empty or malformed address).
func (s *Principals) UserByEmail(ctx context.Context, email string) (*User, error) {
	e, err := normEmail("email", email)
	if err != nil {
		return nil, fmt.Errorf("user with email: %w", svcerr.ErrNotFound)
	}
	db := s.conn(ctx)
	var row userRow
	if err := db.Where("email = ?", e).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, fmt.Errorf("user with email: %w", svcerr.ErrNotFound)
		}
		return nil, TranslateError(fmt.Errorf("user by email: %w", err))
	}
	roles, err := rolesOf(db, row.ID)
	if err != nil {
		return nil, TranslateError(err)
	}
	return row.toUser(roles), nil
}

// ListUsers returns one page of users ordered by id. page starts at 1 (values below are
// treated as 1); perPage below 1 means 20 and is capped at 500. Errors: none beyond the
// database's own.
func (s *Principals) ListUsers(ctx context.Context, page, perPage int) ([]User, error) {
	if page < 1 {
		page = 1
	}
	if perPage < 1 {
		perPage = 20
	}
	perPage = min(perPage, 500)
	db := s.conn(ctx)
	var rows []userRow
	if err := db.Order("id").Limit(perPage).Offset((page - 1) * perPage).Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("list users: %w", err))
	}
	out := make([]User, 0, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	var roleRows []userRoleRow
	if err := db.Where("user_id IN ?", ids).Order("role").Find(&roleRows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("list user roles: %w", err))
	}
	byUser := map[int64][]string{}
	for _, r := range roleRows {
		byUser[r.UserID] = append(byUser[r.UserID], r.Role)
	}
	for i := range rows {
		out = append(out, *rows[i].toUser(byUser[rows[i].ID]))
	}
	return out, nil
}

// CountUsers returns the number of accounts.
func (s *Principals) CountUsers(ctx context.Context) (int64, error) {
	var n int64
	if err := s.conn(ctx).Model(&userRow{}).Count(&n).Error; err != nil {
		return 0, TranslateError(fmt.Errorf("count users: %w", err))
	}
	return n, nil
}

// UpdateUser changes the fields set in upd and returns the updated user. A changed email or
// display name also renames the personal principal. The addresses and the display name are
// checked by the caller (account.Service); addresses are stored trimmed and lowercased.
// Errors: ErrNotFound, ErrInvalid (a password hash that is not printable ASCII), ErrConflict
// "email already registered".
func (s *Principals) UpdateUser(ctx context.Context, id int64, upd UserUpdate) (*User, error) {
	changes := map[string]any{}
	if upd.Email != nil {
		changes["email"] = lowerEmail(*upd.Email)
	}
	if upd.DisplayName != nil {
		changes["display_name"] = *upd.DisplayName
	}
	if upd.PasswordHash != nil {
		if err := checkPasswordHash(*upd.PasswordHash); err != nil {
			return nil, err
		}
		changes["password_hash"] = *upd.PasswordHash
	}
	if upd.PendingEmail != nil {
		if *upd.PendingEmail == nil {
			changes["pending_email"] = nil
		} else {
			changes["pending_email"] = lowerEmail(**upd.PendingEmail)
		}
	}
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*User, error) {
		var row userRow
		if err := tx.Take(&row, id).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return nil, userNotFound(id)
			}
			return nil, fmt.Errorf("load user %d: %w", id, err)
		}
		now := s.now()
		if upd.EmailVerified != nil {
			switch {
			case !*upd.EmailVerified:
				changes["email_verified_at"] = nil
			case row.EmailVerifiedAt == nil:
				changes["email_verified_at"] = now
			}
		}
		changes["updated_at"] = now
		if err := tx.Model(&userRow{}).Where("id = ?", id).Updates(changes).Error; err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) {
				return nil, errEmailTaken()
			}
			return nil, fmt.Errorf("update user %d: %w", id, err)
		}
		row = userRow{}
		if err := tx.Take(&row, id).Error; err != nil {
			return nil, fmt.Errorf("reload user %d: %w", id, err)
		}
		if upd.Email != nil || upd.DisplayName != nil {
			name := principalName(row.DisplayName, row.Email)
			if err := tx.Model(&principalRow{}).Where("id = ?", row.PrincipalID).Update("name", name).Error; err != nil {
				return nil, fmt.Errorf("rename principal %d: %w", row.PrincipalID, err)
			}
		}
		roles, err := rolesOf(tx, id)
		if err != nil {
			return nil, err
		}
		return row.toUser(roles), nil
	})
}

// guardLastGroupOwner refuses to delete a user who is the only owner of a group: the group
// would be left without anyone who may manage or delete it.
func guardLastGroupOwner(tx *gorm.DB, userID int64) error {
	var names []string
	err := tx.Table("group_members AS m").
		Select("g.name").
		Joins("JOIN principal_groups AS g ON g.id = m.group_id").
		Where("m.user_id = ? AND m.role = ?", userID, GroupRoleOwner).
		Where("NOT EXISTS (SELECT 1 FROM group_members AS o WHERE o.group_id = m.group_id AND o.role = ? AND o.user_id <> ?)", GroupRoleOwner, userID).
		Order("g.name").
		Pluck("g.name", &names).Error
	if err != nil {
		return fmt.Errorf("owned groups of user %d: %w", userID, TranslateError(err))
	}
	if len(names) > 0 {
		return svcerr.New(svcerr.ErrConflict, "the user is the last owner of group %q: make someone else owner or delete the group first", names[0])
	}
	return nil
}

// DeleteUser removes a user, its personal principal, the agents that principal owns (with
// everything belonging to them) and (by cascade) its roles, sessions, tokens, profile,
// locations, group memberships and favorite markers, in one transaction. Errors: ErrNotFound, ErrConflict "cannot remove the last
// administrator", ErrConflict when the user is the last owner of a group, ErrInvalidState
// while a task of the user or of one of its personal agents is RUNNING.
// The cascade also deletes the principal's media assets (pictures included): DeleteUser returns
// their storage keys for the caller to remove the files once the deletion is committed.
func (s *Principals) DeleteUser(ctx context.Context, id int64) (mediaKeys []string, err error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) ([]string, error) {
		mediaKeys = nil
		if err := lockAccounts(tx); err != nil {
			return nil, err
		}
		var row userRow
		if err := tx.Take(&row, id).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return nil, userNotFound(id)
			}
			return nil, fmt.Errorf("load user %d: %w", id, err)
		}
		if err := guardLastAdmin(tx, id); err != nil {
			return nil, err
		}
		if err := guardLastGroupOwner(tx, id); err != nil {
			return nil, err
		}
		if err := guardUserTasksNotRunning(tx, id, row.PrincipalID); err != nil {
			return nil, err
		}
		if err := tx.Delete(&userRow{}, id).Error; err != nil {
			return nil, fmt.Errorf("delete user %d: %w", id, err)
		}
		if err := deleteAgentsOf(tx, row.PrincipalID, s.now()); err != nil {
			return nil, err
		}
		keys, err := principalMediaKeys(tx, row.PrincipalID)
		if err != nil {
			return nil, err
		}
		if err := tx.Delete(&principalRow{}, row.PrincipalID).Error; err != nil {
			return nil, fmt.Errorf("delete principal %d of user %d: %w", row.PrincipalID, id, err)
		}
		return keys, nil
	})
}

// guardLastAdmin fails when userID holds RoleAdmin and no other user does. The caller holds
// the account lock.
func guardLastAdmin(tx *gorm.DB, userID int64) error {
	var held, others int64
	if err := tx.Model(&userRoleRow{}).Where("user_id = ? AND role = ?", userID, RoleAdmin).Count(&held).Error; err != nil {
		return fmt.Errorf("check admin role of user %d: %w", userID, err)
	}
	if held == 0 {
		return nil
	}
	if err := tx.Model(&userRoleRow{}).Where("user_id <> ? AND role = ?", userID, RoleAdmin).Count(&others).Error; err != nil {
		return fmt.Errorf("count administrators: %w", err)
	}
	if others == 0 {
		return errLastAdmin()
	}
	return nil
}

// ListRoles returns the user's roles, sorted. Errors: ErrNotFound.
func (s *Principals) ListRoles(ctx context.Context, userID int64) ([]string, error) {
	db := s.conn(ctx)
	if err := userExists(db, userID); err != nil {
		return nil, TranslateError(err)
	}
	roles, err := rolesOf(db, userID)
	if err != nil {
		return nil, TranslateError(err)
	}
	if roles == nil {
		roles = []string{}
	}
	return roles, nil
}

// GrantRole gives the user a role; granting a role already held is a no-op.
// The role name is checked by the caller (user.CheckRole). Errors: ErrNotFound (no such user).
func (s *Principals) GrantRole(ctx context.Context, userID int64, role string) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		if err := userExists(tx, userID); err != nil {
			return err
		}
		row := userRoleRow{UserID: userID, Role: role, CreatedAt: s.now()}
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
			return fmt.Errorf("grant role %q to user %d: %w", role, userID, err)
		}
		return nil
	})
}

// RevokeRole takes a role away. Errors: ErrNotFound (no such user, or the role is not held),
// ErrConflict "cannot remove the last administrator".
func (s *Principals) RevokeRole(ctx context.Context, userID int64, role string) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		if err := lockAccounts(tx); err != nil {
			return err
		}
		if err := userExists(tx, userID); err != nil {
			return err
		}
		if role == RoleAdmin {
			if err := guardLastAdmin(tx, userID); err != nil {
				return err
			}
		}
		res := tx.Where("user_id = ? AND role = ?", userID, role).Delete(&userRoleRow{})
		if res.Error != nil {
			return fmt.Errorf("revoke role %q from user %d: %w", role, userID, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("role %q of user %d: %w", role, userID, svcerr.ErrNotFound)
		}
		return nil
	})
}

// loadUser reads a user and its roles; ErrNotFound when missing.
func loadUser(db *gorm.DB, id int64) (*User, error) {
	var row userRow
	if err := db.Take(&row, id).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, userNotFound(id)
		}
		return nil, fmt.Errorf("load user %d: %w", id, err)
	}
	roles, err := rolesOf(db, id)
	if err != nil {
		return nil, err
	}
	return row.toUser(roles), nil
}

func rolesOf(db *gorm.DB, userID int64) ([]string, error) {
	var roles []string
	if err := db.Model(&userRoleRow{}).Where("user_id = ?", userID).Order("role").Pluck("role", &roles).Error; err != nil {
		return nil, fmt.Errorf("roles of user %d: %w", userID, err)
	}
	slices.Sort(roles) // byte order on every dialect and collation
	return roles, nil
}

// userExists returns ErrNotFound unless the user exists.
func userExists(db *gorm.DB, userID int64) error {
	var n int64
	if err := db.Model(&userRow{}).Where("id = ?", userID).Count(&n).Error; err != nil {
		return fmt.Errorf("check user %d: %w", userID, err)
	}
	if n == 0 {
		return userNotFound(userID)
	}
	return nil
}
