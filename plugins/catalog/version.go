package catalog

import (
	"regexp"
	"strconv"
	"strings"
)

// versionRE is the "semver-ish" version a catalog may list: one to three dot-separated numbers
// (missing ones count as 0), an optional leading v, an optional pre-release after '-' and
// optional build metadata after '+' (ignored when ordering), as in semver.org.
var versionRE = regexp.MustCompile(`^v?(0|[1-9][0-9]{0,8})(\.(0|[1-9][0-9]{0,8})){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// ValidVersion reports whether v is a version a catalog may list.
func ValidVersion(v string) bool { return len(v) <= 64 && versionRE.MatchString(v) }

type parsedVersion struct {
	nums [3]int
	pre  []string
}

func parseVersion(v string) parsedVersion {
	v = strings.TrimPrefix(v, "v")
	v, _, _ = strings.Cut(v, "+")
	core, pre, hasPre := strings.Cut(v, "-")
	var p parsedVersion
	for i, n := range strings.SplitN(core, ".", 3) {
		p.nums[i], _ = strconv.Atoi(n)
	}
	if hasPre {
		p.pre = strings.Split(pre, ".")
	}
	return p
}

// CompareVersions orders two valid versions by semantic-version precedence: -1 when a < b, 0
// when equal (1.2 equals 1.2.0 and v1.2.0; build metadata is ignored), +1 when a > b. A
// pre-release sorts before its release (1.0.0-rc.1 < 1.0.0); pre-release identifiers compare
// numerically when both are numbers, numbers sort before words, words compare as ASCII, and a
// shorter list of equal identifiers sorts first.
func CompareVersions(a, b string) int {
	pa, pb := parseVersion(a), parseVersion(b)
	for i := range pa.nums {
		if c := cmpInt(pa.nums[i], pb.nums[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(pa.pre) == 0 && len(pb.pre) == 0:
		return 0
	case len(pa.pre) == 0:
		return 1
	case len(pb.pre) == 0:
		return -1
	}
	for i := 0; i < len(pa.pre) && i < len(pb.pre); i++ {
		if c := cmpIdent(pa.pre[i], pb.pre[i]); c != 0 {
			return c
		}
	}
	return cmpInt(len(pa.pre), len(pb.pre))
}

func cmpIdent(a, b string) int {
	na, errA := strconv.ParseUint(a, 10, 64)
	nb, errB := strconv.ParseUint(b, 10, 64)
	switch {
	case errA == nil && errB == nil:
		switch {
		case na < nb:
			return -1
		case na > nb:
			return 1
		}
		return 0
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return strings.Compare(a, b)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
