// Package text holds the small string rules shared by the places that show user text in a
// line of their own (notification titles and bodies, search hits).
package text

import (
	"strings"
	"unicode/utf8"
)

// Clip collapses runs of whitespace to single spaces and shortens s to at most n characters,
// ending a shortened text with "…".
func Clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
