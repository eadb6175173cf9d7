//go:build race

package push

// raceEnabled: the race detector makes stacks and heap objects larger, so byte bounds do not hold.
const raceEnabled = true
