package config

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

// Level maps log_level to a slog level: debug, info, warning (slog.LevelWarn) or error.
// Anything else gives warning, the default.
func (c *Config) Level() slog.Level {
	switch c.LogLevel {
	case "debug":
		return slog.LevelDebug
	case "info":
		return slog.LevelInfo
	case "error":
		return slog.LevelError
	}
	return slog.LevelWarn
}

// NewLogger returns a JSON logger at log_level writing to log_path: "stdout", or a file opened
// for appending (its directory is created). The closer closes the file; for stdout it does
// nothing.
func NewLogger(c *Config) (*slog.Logger, io.Closer, error) {
	var (
		w      io.Writer
		closer io.Closer = nopCloser{}
	)
	if c.LogPath == "stdout" {
		w = os.Stdout
	} else {
		if dir := filepath.Dir(c.LogPath); dir != "" {
			if err := os.MkdirAll(dir, 0o750); err != nil {
				return nil, nil, fmt.Errorf("create log directory: %w", err)
			}
		}
		f, err := os.OpenFile(c.LogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
		if err != nil {
			return nil, nil, fmt.Errorf("open log file: %w", err)
		}
		w, closer = f, f
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: c.Level()})
	return slog.New(h), closer, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
