package catalog

import "testing"

func TestCompareVersionsOrder(t *testing.T) {
	// Ascending, from semver.org section 11 plus numeric and short forms.
	order := []string{
		"0.0.1", "0.9", "0.10.0", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
		"1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.2.0", "1.9.0", "1.10.0",
		"2", "v2.0.1", "10.0.0",
	}
	for i, a := range order {
		for j, b := range order {
			want := cmpInt(i, j)
			if got := CompareVersions(a, b); got != want {
				t.Errorf("CompareVersions(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestCompareVersionsEqual(t *testing.T) {
	for _, pair := range [][2]string{
		{"1.2", "1.2.0"}, {"v1.2.0", "1.2.0"}, {"1.2.0+build.5", "1.2.0"}, {"1", "1.0.0"},
		{"1.0.0-rc.1+x", "1.0.0-rc.1"},
	} {
		if got := CompareVersions(pair[0], pair[1]); got != 0 {
			t.Errorf("CompareVersions(%q, %q) = %d, want 0", pair[0], pair[1], got)
		}
	}
}

func TestValidVersion(t *testing.T) {
	for v, want := range map[string]bool{
		"1.2.0": true, "v1": true, "1.2": true, "1.0.0-rc.1": true, "1.0.0+sha.abc": true,
		"": false, "1.2.3.4": false, "01.2": false, "1.x": false, "latest": false, "1.0.0-": false,
		"1..2": false, "-1": false, "1.0.0-rc..1": false, "1 .0": false, "9999999999": false,
	} {
		if got := ValidVersion(v); got != want {
			t.Errorf("ValidVersion(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestLatestAndFind(t *testing.T) {
	p := Package{Package: "acme/x", Versions: []Version{
		{Version: "1.10.0"}, {Version: "1.9.3"}, {Version: "2.0.0-beta.1"}, {Version: "1.2"},
	}}
	if l, ok := p.Latest(); !ok || l.Version != "2.0.0-beta.1" {
		t.Fatalf("Latest = %q, %v", l.Version, ok)
	}
	if v, err := p.Find("1.2.0"); err != nil || v.Version != "1.2" {
		t.Fatalf("Find(1.2.0) = %q, %v", v.Version, err)
	}
	if v, err := p.Find(""); err != nil || v.Version != "2.0.0-beta.1" {
		t.Fatalf("Find() = %q, %v", v.Version, err)
	}
	for _, missing := range []string{"3.0.0", "nonsense"} {
		if _, err := p.Find(missing); !isKind(err, errNotFound) {
			t.Fatalf("Find(%q) err = %v, want ErrNotFound", missing, err)
		}
	}
	if _, ok := (Package{}).Latest(); ok {
		t.Fatal("Latest of an empty package found a version")
	}
}
