package user

import (
	"math"

	"github.com/agentsvc/svc/internal/vocab/fieldcheck"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/store"
)

// CheckRole applies the rule of a role name: 1 to store.MaxRoleLen characters, lowercase
// letters, digits, '_', '-' and '.', starting with a letter. Errors: ErrInvalid.
func CheckRole(role string) error {
	if role == "" || len(role) > store.MaxRoleLen {
		return fieldcheck.Invalidf("role must be 1 to %d characters", store.MaxRoleLen)
	}
	for i := 0; i < len(role); i++ {
		c := role[i]
		ok := c >= 'a' && c <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.')
		if !ok {
			return fieldcheck.Invalidf("role %q: use lowercase letters, digits, '_', '-' and '.', starting with a letter", role)
		}
	}
	return nil
}

// CheckLocation applies the rules of a location: a name (at most limits.ProfileNameLen
// characters), an address of at most limits.AddressLen, both valid UTF-8, and either no
// coordinates or both, latitude within -90..90 and longitude within -180..180. Errors:
// ErrInvalid naming the field.
func CheckLocation(l store.Location) error {
	if l.Name == "" {
		return fieldcheck.Invalidf("location name is required")
	}
	if err := fieldcheck.Text("name", l.Name, limits.ProfileNameLen); err != nil {
		return err
	}
	if err := fieldcheck.Text("address", l.Address, limits.AddressLen); err != nil {
		return err
	}
	if (l.Latitude == nil) != (l.Longitude == nil) {
		return fieldcheck.Invalidf("latitude and longitude go together")
	}
	if l.Latitude != nil && (math.IsNaN(*l.Latitude) || *l.Latitude < -90 || *l.Latitude > 90) {
		return fieldcheck.Invalidf("latitude must be between -90 and 90")
	}
	if l.Longitude != nil && (math.IsNaN(*l.Longitude) || *l.Longitude < -180 || *l.Longitude > 180) {
		return fieldcheck.Invalidf("longitude must be between -180 and 180")
	}
	return nil
}
