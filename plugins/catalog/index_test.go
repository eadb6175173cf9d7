package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

var (
	errNotFound    = svcerr.ErrNotFound
	errInvalid     = svcerr.ErrInvalid
	errConflict    = svcerr.ErrConflict
	errUnavailable = svcerr.ErrUnavailable
)

func isKind(err, kind error) bool { return errors.Is(err, kind) }

// publicMsg returns the caller-facing message of err.
func publicMsg(err error) string {
	msg, _, _ := svcerr.Public(err)
	return msg
}

const sum = "ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789"

func TestParseIndex(t *testing.T) {
	ix, err := ParseIndex([]byte(`{"packages":[{"package":"acme/weather","name":"Weather","description":"d",
		"versions":[{"version":"1.2.0","url":"https://example.com/w-1.2.0.tar.gz","sha256":"` + sum + `","requires":["acme/geo"]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ix.Lookup("acme/weather")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "Weather" || p.Versions[0].SHA256 != strings.ToLower(sum) || p.Versions[0].Requires[0] != "acme/geo" {
		t.Fatalf("parsed %+v", p)
	}
	if _, err := ix.Lookup("acme/other"); !isKind(err, errNotFound) {
		t.Fatalf("Lookup of a missing package: %v", err)
	}
}

func TestParseIndexRefuses(t *testing.T) {
	ver := func(v, url, sha, req string) string {
		return `{"version":"` + v + `","url":"` + url + `","sha256":"` + sha + `","requires":[` + req + `]}`
	}
	good := ver("1.0.0", "https://example.com/a.zip", sum, "")
	pkg := func(name string, versions ...string) string {
		return `{"package":"` + name + `","versions":[` + strings.Join(versions, ",") + `]}`
	}
	cases := map[string]struct{ doc, want string }{
		"not json":          {`{"packages":`, "not a catalog document"},
		"trailing":          {`{"packages":[]} {}`, "trailing data"},
		"no packages":       {`{}`, `"packages" is missing`},
		"uppercase name":    {`{"packages":[` + pkg("Acme/x", good) + `]}`, `"Acme/x": the name`},
		"no vendor":         {`{"packages":[` + pkg("weather", good) + `]}`, `"weather": the name`},
		"dot dot name":      {`{"packages":[` + pkg("../x", good) + `]}`, `"../x": the name`},
		"trailing dash":     {`{"packages":[` + pkg("acme/x-", good) + `]}`, "the name"},
		"no versions":       {`{"packages":[` + pkg("acme/x") + `]}`, "no versions"},
		"bad version":       {`{"packages":[` + pkg("acme/x", ver("latest", "https://e.com/a", sum, "")) + `]}`, `version "latest" is not`},
		"same version":      {`{"packages":[` + pkg("acme/x", good, ver("1.0", "https://e.com/b", sum, "")) + `]}`, "listed twice"},
		"ftp url":           {`{"packages":[` + pkg("acme/x", ver("1.0.0", "ftp://e.com/a", sum, "")) + `]}`, "url must be"},
		"relative url":      {`{"packages":[` + pkg("acme/x", ver("1.0.0", "/a.zip", sum, "")) + `]}`, "url must be"},
		"credentials":       {`{"packages":[` + pkg("acme/x", ver("1.0.0", "https://u:p@e.com/a", sum, "")) + `]}`, "url must be"},
		"short sha":         {`{"packages":[` + pkg("acme/x", ver("1.0.0", "https://e.com/a", "abcd", "")) + `]}`, "sha256 must be"},
		"bad requires":      {`{"packages":[` + pkg("acme/x", ver("1.0.0", "https://e.com/a", sum, `"Geo"`)) + `]}`, `requires "Geo"`},
		"requires itself":   {`{"packages":[` + pkg("acme/x", ver("1.0.0", "https://e.com/a", sum, `"acme/x"`)) + `]}`, "requires itself"},
		"duplicate package": {`{"packages":[` + pkg("acme/x", good) + `,` + pkg("acme/x", good) + `]}`, `"acme/x": listed twice`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseIndex([]byte(c.doc))
			if !isKind(err, errInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if !strings.Contains(publicMsg(err), c.want) {
				t.Fatalf("message %q does not contain %q", publicMsg(err), c.want)
			}
		})
	}
}

func TestValidPackage(t *testing.T) {
	for name, want := range map[string]bool{
		"acme/weather": true, "a/b": true, "acme.io/x_y-z.2": true,
		"acme": false, "acme/": false, "/x": false, "a/b/c": false, "Acme/x": false, "-a/b": false,
		"a/b.": false, "a/..": false, "a /b": false,
	} {
		if got := ValidPackage(name); got != want {
			t.Errorf("ValidPackage(%q) = %v, want %v", name, got, want)
		}
	}
}
