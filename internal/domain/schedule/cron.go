package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Cron is a parsed 5-field cron expression (minute hour day-of-month month day-of-week).
// Fields take *, lists (a,b), ranges (a-b), steps (*/n, a-b/n, a/n) and, for month and
// day-of-week, three-letter names (JAN, MON; case-insensitive). Day-of-week 7 is Sunday.
// As in classic cron, when both day fields are restricted a day matches either of them.
type Cron struct {
	minute, hour, dom, month, dow uint64
	domStar, dowStar              bool
}

var (
	monthNames = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	dayNames   = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
)

// ParseCron parses spec. Errors describe the first bad field (the service wraps them as 422).
func ParseCron(spec string) (*Cron, error) {
	f := strings.Fields(spec)
	if len(f) != 5 {
		return nil, fmt.Errorf("cron_expression must have 5 fields, not %d", len(f))
	}
	var c Cron
	var err error
	if c.minute, _, err = parseField(f[0], 0, 59, nil, 0); err != nil {
		return nil, fmt.Errorf("minute: %w", err)
	}
	if c.hour, _, err = parseField(f[1], 0, 23, nil, 0); err != nil {
		return nil, fmt.Errorf("hour: %w", err)
	}
	if c.dom, c.domStar, err = parseField(f[2], 1, 31, nil, 0); err != nil {
		return nil, fmt.Errorf("day of month: %w", err)
	}
	if c.month, _, err = parseField(f[3], 1, 12, monthNames, 1); err != nil {
		return nil, fmt.Errorf("month: %w", err)
	}
	if c.dow, c.dowStar, err = parseField(f[4], 0, 7, dayNames, 0); err != nil {
		return nil, fmt.Errorf("day of week: %w", err)
	}
	if c.dow&(1<<7) != 0 {
		c.dow |= 1
		c.dow &^= 1 << 7
	}
	if !c.possible() {
		return nil, fmt.Errorf("the expression never matches a calendar day")
	}
	return &c, nil
}

// possible refuses day-of-month sets no chosen month reaches (for example 31 in February).
func (c *Cron) possible() bool {
	if !c.dowStar && !c.domStar {
		return true
	}
	if c.domStar {
		return true
	}
	days := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for m := 1; m <= 12; m++ {
		if c.month&(1<<m) == 0 {
			continue
		}
		for d := 1; d <= days[m]; d++ {
			if c.dom&(1<<d) != 0 {
				return true
			}
		}
	}
	return false
}

func parseValue(s string, names []string, base int) (int, error) {
	for i, n := range names {
		if strings.EqualFold(s, n) {
			return i + base, nil
		}
	}
	if s == "" || len(s) > 3 {
		return 0, fmt.Errorf("bad value %q", s)
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad value %q", s)
	}
	return v, nil
}

// parseField returns the bit set of field values and whether the field was a bare *.
func parseField(s string, lo, hi int, names []string, base int) (uint64, bool, error) {
	var set uint64
	for _, part := range strings.Split(s, ",") {
		rng, step := part, 1
		if i := strings.IndexByte(part, '/'); i >= 0 {
			st, err := strconv.Atoi(part[i+1:])
			if err != nil || st < 1 || st > hi-lo+1 || len(part[i+1:]) > 3 {
				return 0, false, fmt.Errorf("bad step in %q", part)
			}
			rng, step = part[:i], st
		}
		a, b := lo, hi
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			x, y, _ := strings.Cut(rng, "-")
			var err error
			if a, err = parseValue(x, names, base); err != nil {
				return 0, false, err
			}
			if b, err = parseValue(y, names, base); err != nil {
				return 0, false, err
			}
		default:
			v, err := parseValue(rng, names, base)
			if err != nil {
				return 0, false, err
			}
			a, b = v, v
			if step > 1 { // "a/n" means a through the end
				b = hi
			}
		}
		if a < lo || b > hi || a > b {
			return 0, false, fmt.Errorf("%q is outside %d-%d", part, lo, hi)
		}
		for v := a; v <= b; v += step {
			set |= 1 << v
		}
	}
	return set, s == "*", nil
}

func (c *Cron) dayMatches(t time.Time) bool {
	dom := c.dom&(1<<t.Day()) != 0
	dow := c.dow&(1<<int(t.Weekday())) != 0
	if c.domStar || c.dowStar {
		return dom && dow
	}
	return dom || dow
}

// Next returns the first minute strictly after `after` that matches, evaluated as wall-clock
// time in loc. Wall times skipped by a DST jump do not fire; a repeated wall time fires once
// (its first occurrence). The zero time means none within five years.
func (c *Cron) Next(after time.Time, loc *time.Location) time.Time {
	t := after.In(loc).Truncate(time.Minute)
	// Walk wall-clock minutes: build dates from fields, so DST shifts never skip a match.
	y, mo, d := t.Date()
	h, mi := t.Hour(), t.Minute()+1
	limit := y + 5
	for y <= limit {
		if c.month&(1<<int(mo)) == 0 {
			y, mo, d, h, mi = nextMonth(y, mo)
			continue
		}
		day := time.Date(y, mo, d, 12, 0, 0, 0, loc)
		if day.Month() != mo {
			y, mo, d, h, mi = nextMonth(y, mo)
			continue
		}
		if !c.dayMatches(day) {
			d, h, mi = d+1, 0, 0
			continue
		}
		for ; h < 24; h, mi = h+1, 0 {
			if c.hour&(1<<h) == 0 {
				continue
			}
			for ; mi < 60; mi++ {
				if c.minute&(1<<mi) == 0 {
					continue
				}
				cand := time.Date(y, mo, d, h, mi, 0, 0, loc)
				if cand.Hour() != h || cand.Minute() != mi { // skipped by a DST gap
					continue
				}
				if cand.After(after) {
					return cand
				}
			}
		}
		d, h, mi = d+1, 0, 0
	}
	return time.Time{}
}

func nextMonth(y int, m time.Month) (int, time.Month, int, int, int) {
	if m == 12 {
		return y + 1, 1, 1, 0, 0
	}
	return y, m + 1, 1, 0, 0
}
