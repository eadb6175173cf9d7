//go:build !race

package push

const raceEnabled = false
