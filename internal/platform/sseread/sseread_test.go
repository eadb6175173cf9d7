package sseread_test

import (
	"bufio"
	"errors"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/platform/sseread"
)

func read(t *testing.T, stream string, maxLine int) ([]string, error) {
	t.Helper()
	var got []string
	err := sseread.Read(strings.NewReader(stream), maxLine, func(data []byte) error {
		got = append(got, string(data))
		return nil
	})
	return got, err
}

// TestRead: data lines joined, fields and comments ignored, events without data skipped, an
// empty data line kept as an (empty) event, an unfinished event at the end dropped.
func TestRead(t *testing.T) {
	t.Parallel()
	stream := ": comment\n\nevent: x\nid: 1\ndata: {\"a\":1}\n\n" +
		"data:first\ndata: second\n\n" +
		"retry: 10\n\n" +
		"data:\n\n" +
		"data: unfinished"
	got, err := read(t, stream, 1024)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"a":1}`, "first\nsecond", ""}
	if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
}

// TestReadStopsAndBounds: ErrStop ends the read quietly, another error of fn is returned, and
// a line over the bound is bufio.ErrTooLong.
func TestReadStopsAndBounds(t *testing.T) {
	t.Parallel()
	n := 0
	err := sseread.Read(strings.NewReader("data: 1\n\ndata: 2\n\ndata: 3\n\n"), 64, func([]byte) error {
		if n++; n == 2 {
			return sseread.ErrStop
		}
		return nil
	})
	if err != nil || n != 2 {
		t.Fatalf("stop: err %v after %d events", err, n)
	}
	boom := errors.New("boom")
	if err := sseread.Read(strings.NewReader("data: 1\n\n"), 64, func([]byte) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("fn's error: %v", err)
	}
	if _, err := read(t, "data: "+strings.Repeat("x", 100)+"\n\n", 64); !errors.Is(err, bufio.ErrTooLong) {
		t.Fatalf("long line: %v", err)
	}
}
