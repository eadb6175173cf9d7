package schedule

import (
	"testing"
	"time"
)

func TestParseCron(t *testing.T) {
	t.Parallel()
	good := []string{"* * * * *", "0 7 * * 1-5", "*/15 0-23/2 1,15 jan-JUN mon-fri", "0 0 29 2 *", "5 4 * * sun", "0 0 * * 7", " 1  2 3 4 5 ", "0 12 1/10 * *"}
	for _, s := range good {
		if _, err := ParseCron(s); err != nil {
			t.Errorf("ParseCron(%q): %v", s, err)
		}
	}
	bad := []string{"", "* * * *", "* * * * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * 32 * *", "* * * 13 *", "* * * * 8",
		"*/0 * * * *", "5-1 * * * *", "a * * * *", "1,,2 * * * *", "* * 31 2 *", "- * * * *", "*/ * * * *", "1-2-3 * * * *"}
	for _, s := range bad {
		if _, err := ParseCron(s); err == nil {
			t.Errorf("ParseCron(%q) accepted", s)
		}
	}
}

func TestCronNext(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata")
	}
	ny, _ := time.LoadLocation("America/New_York")
	utc := time.UTC
	cases := []struct {
		spec  string
		after string
		loc   *time.Location
		want  string
	}{
		{"0 7 * * 1-5", "2025-03-01T09:30:00Z", berlin, "2025-03-03T06:00:00Z"}, // Saturday → Monday 07:00 CET
		{"*/15 * * * *", "2025-01-01T00:00:00Z", utc, "2025-01-01T00:15:00Z"},
		{"0 0 29 2 *", "2025-01-01T00:00:00Z", utc, "2028-02-29T00:00:00Z"},
		{"30 2 * * *", "2025-03-30T00:00:00Z", berlin, "2025-03-31T00:30:00Z"}, // 02:30 skipped on the spring-forward day
		{"0 3 * * *", "2025-03-30T00:00:00Z", berlin, "2025-03-30T01:00:00Z"},  // 03:00 CEST exists
		{"30 1 * * *", "2025-11-02T05:00:00Z", ny, "2025-11-02T05:30:00Z"},     // repeated hour fires once
		{"30 1 * * *", "2025-11-02T05:30:00Z", ny, "2025-11-03T06:30:00Z"},
		{"0 0 1 * 1", "2025-01-01T00:00:00Z", utc, "2025-01-06T00:00:00Z"}, // dom or dow when both set
	}
	for _, c := range cases {
		cr, err := ParseCron(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		after, _ := time.Parse(time.RFC3339, c.after)
		got := cr.Next(after, c.loc).UTC().Format(time.RFC3339)
		if got != c.want {
			t.Errorf("%q after %s in %s: got %s, want %s", c.spec, c.after, c.loc, got, c.want)
		}
	}
}

func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"* * * * *", "0 7 * * 1-5", "*/15 0-23/2 1,15 jan-JUN mon-fri", "0 0 29 2 *", "5/7 * * * sun-sat"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCron(s)
		if err != nil {
			return
		}
		from := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
		n := c.Next(from, time.UTC)
		if n.IsZero() || !n.After(from) {
			t.Fatalf("%q accepted without a next run", s)
		}
	})
}
