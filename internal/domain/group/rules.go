package group

import (
	"encoding/json"
	"strings"

	"github.com/agentsvc/svc/internal/vocab/fieldcheck"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/store"
)

// NormName trims a group name and checks it: not empty, valid UTF-8 of at most
// limits.GroupNameLen characters. The service stores the trimmed name. Errors: ErrInvalid.
func NormName(name string) (string, error) {
	n := strings.TrimSpace(name)
	if n == "" {
		return "", fieldcheck.Invalidf("name must not be empty")
	}
	if err := fieldcheck.Text("name", n, limits.GroupNameLen); err != nil {
		return "", err
	}
	return n, nil
}

// CheckDescription checks a group description: valid UTF-8 of at most
// limits.GroupDescriptionLen characters. Errors: ErrInvalid.
func CheckDescription(d string) error {
	return fieldcheck.Text("description", d, limits.GroupDescriptionLen)
}

// ValidRole reports whether role is one of the group roles: owner, admin, member.
func ValidRole(role string) bool {
	switch role {
	case store.GroupRoleOwner, store.GroupRoleAdmin, store.GroupRoleMember:
		return true
	}
	return false
}

func checkRole(role string) error {
	if !ValidRole(role) {
		return fieldcheck.Invalidf("role must be owner, admin or member")
	}
	return nil
}

// CheckPreferences checks that a preferences object encodes to JSON (as the store encodes it)
// in at most store.MaxGroupPreferencesLen bytes. Errors: ErrInvalid.
func CheckPreferences(prefs map[string]any) error {
	if prefs == nil {
		return nil
	}
	b, err := json.Marshal(prefs)
	if err != nil {
		return fieldcheck.Invalidf("preferences cannot be encoded as JSON")
	}
	if len(b) > store.MaxGroupPreferencesLen {
		return fieldcheck.Invalidf("preferences must encode to at most %d bytes of JSON (got %d)", store.MaxGroupPreferencesLen, len(b))
	}
	return nil
}
