package account

import (
	"strings"

	"github.com/agentsvc/svc/internal/vocab/fieldcheck"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// checkDisplayName applies the length rule of a display name (already trimmed and not blank):
// valid UTF-8 of at most limits.DisplayNameLen characters. Errors: ErrInvalid.
func checkDisplayName(name string) error {
	return fieldcheck.Text("display_name", name, limits.DisplayNameLen)
}

// CheckProfile applies the field rules of a profile: every field valid UTF-8 within its column
// (names limits.ProfileNameLen, locale limits.LocaleLen, time zone limits.TimezoneLen, bio
// limits.BioLen). Whether the time zone exists is PutProfile's check. Errors: ErrInvalid
// naming the field.
func CheckProfile(p store.Profile) error {
	for _, f := range []struct {
		name, v string
		max     int
	}{
		{"first_name", p.FirstName, limits.ProfileNameLen}, {"last_name", p.LastName, limits.ProfileNameLen},
		{"locale", p.Locale, limits.LocaleLen}, {"timezone", p.Timezone, limits.TimezoneLen},
		{"bio", p.Bio, limits.BioLen},
	} {
		if err := fieldcheck.Text(f.name, f.v, f.max); err != nil {
			return err
		}
	}
	return nil
}

// errBadLink is the store's answer for an unusable link (store.ConsumeToken), given here to a
// selector that cannot name one, so a caller cannot tell the two apart.
func errBadLink() error { return svcerr.New(svcerr.ErrInvalid, "the link is invalid or has expired") }

// checkSelector accepts the shape of a link's selector as randomToken makes it (base64url, at
// most limits.SelectorLen characters). Errors: errBadLink.
func checkSelector(v string) error {
	if v == "" || len(v) > limits.SelectorLen {
		return errBadLink()
	}
	if strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		return errBadLink()
	}
	return nil
}
