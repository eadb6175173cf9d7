// Package sseread reads the events of a text/event-stream body (Server-Sent Events): the one
// reading of the format for the model driver that reads a provider's stream and the tools
// that follow the service's own streams.
package sseread

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ErrStop, returned by Read's fn, ends Read without an error.
var ErrStop = errors.New("sseread: stop")

// Read calls fn with the data of each event of r, in order: the event's data lines joined by
// "\n" (the one space after "data:" dropped). Other fields ("event", "id", "retry") and comment
// lines are ignored, an event without data is skipped, and an event not ended by a blank line
// before the end of r is not delivered. data is reused once fn returns. Read returns fn's error
// (nil for ErrStop), r's read error, bufio.ErrTooLong for a line over maxLine bytes, or nil at
// the end of r.
func Read(r io.Reader, maxLine int, fn func(data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(4096, maxLine)), maxLine)
	var data []byte
	have := false
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if !have {
				continue
			}
			if err := fn(data); err != nil {
				if errors.Is(err, ErrStop) {
					return nil
				}
				return err
			}
			data, have = data[:0], false
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if string(name) != "data" {
			continue
		}
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		if have {
			data = append(data, '\n')
		}
		data, have = append(data, value...), true
	}
	return sc.Err()
}
