package catalog

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// packageRE is the pattern of a package name, vendor/name.
var packageRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?/[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?$`)

// ValidPackage reports whether name is a valid package name (vendor/name, lowercase).
func ValidPackage(name string) bool { return len(name) <= 200 && packageRE.MatchString(name) }

// Limits on the free text of an entry; longer catalogs are refused, not truncated.
const (
	maxNameLen        = 200
	maxDescriptionLen = 2000
	maxURLLen         = 2048
)

// Index is a parsed catalog document.
type Index struct {
	Packages []Package `json:"packages"`
}

// Package is one catalog entry.
type Package struct {
	Package     string    `json:"package"`
	Name        string    `json:"name,omitempty"`
	Description string    `json:"description,omitempty"`
	Versions    []Version `json:"versions"`
}

// Version is one installable version of a package.
type Version struct {
	Version  string   `json:"version"`
	URL      string   `json:"url"`
	SHA256   string   `json:"sha256"`
	Requires []string `json:"requires,omitempty"`
}

// Latest returns the highest version of p by semantic-version precedence (CompareVersions;
// pre-releases included, as the ordering says), and false when p lists none.
func (p Package) Latest() (Version, bool) {
	var best Version
	found := false
	for _, v := range p.Versions {
		if !found || CompareVersions(v.Version, best.Version) > 0 {
			best, found = v, true
		}
	}
	return best, found
}

// Find returns the version of p equal to v by precedence ("1.2" finds "1.2.0"); an empty v finds
// the latest. It returns an error matching svcerr.ErrNotFound when p has no such version.
func (p Package) Find(v string) (Version, error) {
	if v == "" {
		if l, ok := p.Latest(); ok {
			return l, nil
		}
		return Version{}, svcerr.New(svcerr.ErrNotFound, "package %s lists no version", p.Package)
	}
	if ValidVersion(v) {
		for _, have := range p.Versions {
			if CompareVersions(have.Version, v) == 0 {
				return have, nil
			}
		}
	}
	return Version{}, svcerr.New(svcerr.ErrNotFound, "package %s has no version %q in the catalog", p.Package, v)
}

// Lookup returns the entry named pkg, or an error matching svcerr.ErrNotFound.
func (ix *Index) Lookup(pkg string) (Package, error) {
	for _, p := range ix.Packages {
		if p.Package == pkg {
			return p, nil
		}
	}
	return Package{}, svcerr.New(svcerr.ErrNotFound, "package %q is not in the plugin catalog", pkg)
}

// ParseIndex decodes and validates a catalog document (see the package documentation). Any
// broken entry refuses the whole document with an error matching svcerr.ErrInvalid that names
// the entry and the rule: a catalog is published as a whole, and a client that silently dropped
// entries would hide the publisher's mistake. SHA-256 digests are normalised to lowercase.
func ParseIndex(data []byte) (*Index, error) {
	var ix Index
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&ix); err != nil {
		return nil, svcerr.New(svcerr.ErrInvalid, "plugin catalog: not a catalog document: %v", err)
	}
	if dec.More() {
		return nil, svcerr.New(svcerr.ErrInvalid, "plugin catalog: trailing data after the document")
	}
	if ix.Packages == nil {
		return nil, svcerr.New(svcerr.ErrInvalid, `plugin catalog: "packages" is missing`)
	}
	seen := map[string]bool{}
	for i := range ix.Packages {
		p := &ix.Packages[i]
		if err := validatePackage(p); err != nil {
			return nil, err
		}
		if seen[p.Package] {
			return nil, invalidEntry(p.Package, "listed twice")
		}
		seen[p.Package] = true
	}
	return &ix, nil
}

func invalidEntry(pkg, format string, args ...any) error {
	return svcerr.New(svcerr.ErrInvalid, "plugin catalog: package %q: %s", pkg, fmt.Sprintf(format, args...))
}

func validatePackage(p *Package) error {
	switch {
	case !ValidPackage(p.Package):
		return invalidEntry(p.Package, "the name is not vendor/name in lowercase letters, digits, '.', '_' or '-'")
	case len(p.Name) > maxNameLen:
		return invalidEntry(p.Package, "name longer than %d bytes", maxNameLen)
	case len(p.Description) > maxDescriptionLen:
		return invalidEntry(p.Package, "description longer than %d bytes", maxDescriptionLen)
	case len(p.Versions) == 0:
		return invalidEntry(p.Package, "no versions")
	}
	for i := range p.Versions {
		v := &p.Versions[i]
		if !ValidVersion(v.Version) {
			return invalidEntry(p.Package, "version %q is not a semantic version", v.Version)
		}
		for _, w := range p.Versions[:i] {
			if CompareVersions(w.Version, v.Version) == 0 {
				return invalidEntry(p.Package, "version %q listed twice (as %q)", v.Version, w.Version)
			}
		}
		u, err := url.Parse(v.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || len(v.URL) > maxURLLen {
			return invalidEntry(p.Package, "version %s: url must be an absolute http(s) URL without credentials", v.Version)
		}
		if err := checkTransport(u); err != nil {
			return invalidEntry(p.Package, "version %s: the archive's url must use https (plain http only on a loopback host: localhost, 127.0.0.0/8, ::1)", v.Version)
		}
		v.SHA256 = strings.ToLower(v.SHA256)
		if b, err := hex.DecodeString(v.SHA256); err != nil || len(b) != 32 {
			return invalidEntry(p.Package, "version %s: sha256 must be 64 hexadecimal digits", v.Version)
		}
		for _, r := range v.Requires {
			if !ValidPackage(r) {
				return invalidEntry(p.Package, "version %s: requires %q, which is not a package name", v.Version, r)
			}
			if r == p.Package {
				return invalidEntry(p.Package, "version %s requires itself", v.Version)
			}
		}
	}
	return nil
}
