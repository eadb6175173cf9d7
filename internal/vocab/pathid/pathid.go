// Package pathid parses the numeric ids that paths carry as strings (tasks, agents, schedules,
// chats, group members). One rule for all: only the canonical decimal spelling of a positive
// int64 names a row, so "01", "+1" or "1.0" never alias id 1 and every area answers a
// malformed id exactly as it answers an unknown one.
package pathid

import "strconv"

// Parse returns the id s spells. ok is false unless s is the canonical decimal form of a
// positive int64; callers then answer their own "not found" (a malformed id must not be told
// apart from a missing row).
func Parse(s string) (id int64, ok bool) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 || strconv.FormatInt(id, 10) != s {
		return 0, false
	}
	return id, true
}
