package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caarlos0/env/v11"
)

// DefaultFile is the configuration file read when SVC_CONFIG_FILE is not set, relative to the
// working directory.
const DefaultFile = "config.yaml"

// recheckInterval is how often Current looks at the file.
const recheckInterval = time.Second

// ValidationError lists every problem found in one configuration. Its message is
// "invalid configuration: a; b; …".
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	return "invalid configuration: " + strings.Join(e.Problems, "; ")
}

// Loader resolves the configuration from its four layers and keeps the result current. The
// environment is fixed when the Loader is made; the file is re-read when it changes; the stored
// settings change through SetStored. A Loader is safe for concurrent use.
type Loader struct {
	env  map[string]string
	path string

	mu        sync.Mutex
	now       atomic.Pointer[func() time.Time]
	logger    *slog.Logger
	file      typedLayer // last successfully parsed file
	fileProbs []string   // unknown keys and wrong types of that file
	fileStamp stamp      // the file as of the last read attempt
	stored    typedLayer

	cur       atomic.Pointer[Config]
	sources   atomic.Pointer[map[string]Source] // where each key of cur comes from; absent: default
	lastCheck atomic.Int64                      // unix nanoseconds of the last look at the file

	storedEdit sync.Mutex // see EditStored
}

// Source says which layer a key's value comes from.
type Source string

// The layers, lowest to highest.
const (
	SourceDefault     Source = "default"
	SourceFile        Source = "file"
	SourceEnvironment Source = "environment"
	SourceStored      Source = "stored"
)

// stamp identifies one version of the file.
type stamp struct {
	exists bool
	mod    time.Time
	size   int64
}

// NewLoader returns a Loader reading the environment from environ ("KEY=value" entries, as
// os.Environ returns them; a later entry wins over an earlier one with the same key). The
// package never reads the process environment itself.
func NewLoader(environ []string) *Loader {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k != "" {
			m[k] = v
		}
	}
	path := m["SVC_CONFIG_FILE"]
	if path == "" {
		path = DefaultFile
	}
	l := &Loader{
		env:    m,
		path:   path,
		stored: typedLayer{values: map[string]any{}},
	}
	l.WithClock(time.Now)
	return l
}

// WithClock replaces the clock Current uses to rate-limit looking at the file (tests).
func (l *Loader) WithClock(now func() time.Time) *Loader {
	l.now.Store(&now)
	return l
}

// WithLogger sets the logger that receives the errors of background re-reads. Without one they
// are discarded (Current keeps serving the previous configuration either way).
func (l *Loader) WithLogger(logger *slog.Logger) *Loader {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.logger = logger
	return l
}

// Path is the configuration file this Loader reads.
func (l *Loader) Path() string { return l.path }

// Load reads the file and resolves and validates the configuration, replacing the cached one
// on success. A missing file is fine; an unreadable or malformed one is an error naming the
// file and line; configuration problems are one *ValidationError listing them all.
func (l *Loader) Load() (*Config, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, err := l.loadLocked()
	if err != nil {
		return nil, err
	}
	return clone(c), nil
}

// Current returns the cached configuration, first re-reading the file if its modification time
// or size changed (looked at no more than once a second). If the re-read fails, the previous
// configuration stays and the error is logged. Before any successful Load, Current performs
// one and returns nil if it fails. The result is a copy the caller may keep.
func (l *Loader) Current() *Config {
	return clone(l.View())
}

// View is Current without the copy, for the paths that read a setting or two on every request
// or step (a Config is ~60 fields, and the copies were 6 % of a drained step's allocation):
// the result is the loader's shared snapshot and must not be modified. A re-read replaces the
// snapshot, never changes it.
func (l *Loader) View() *Config {
	c := l.cur.Load()
	if c != nil {
		if last := l.lastCheck.Load(); last != 0 && l.clock().Sub(time.Unix(0, last)) < recheckInterval {
			return c
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur.Load() == nil {
		c, err := l.loadLocked()
		if err != nil {
			l.logError("load configuration", err)
			return nil
		}
		return c
	}
	now := l.clock()
	if last := l.lastCheck.Load(); now.Sub(time.Unix(0, last)) < recheckInterval {
		return l.cur.Load() // another caller just looked
	}
	l.lastCheck.Store(now.UnixNano())
	st, err := statFile(l.path)
	if err == nil && st == l.fileStamp {
		return l.cur.Load()
	}
	if _, err := l.loadLocked(); err != nil {
		// Remember this version so a broken file is reported once, not every second.
		l.fileStamp = st
		l.logError("reload configuration; keeping the previous one", err)
	}
	return l.cur.Load()
}

func (l *Loader) clock() time.Time { return (*l.now.Load())() }

func (l *Loader) logError(msg string, err error) {
	if l.logger != nil {
		l.logger.Error(msg, "file", l.path, "error", err)
	}
}

// SetStored replaces the stored-settings layer (file keys, flat or nested, as saved by an
// administrator). The whole configuration is validated with the new layer; on any problem
// nothing changes and the error lists them. Keys that are not Storable are refused.
func (l *Loader) SetStored(settings map[string]any) error {
	raw := rawLayer{}
	if err := flatten(raw, settings, "", 1); err != nil {
		return &ValidationError{Problems: []string{"stored settings: " + err.Error()}}
	}
	layer, problems := typeCheck(raw, func(entry) string { return "stored settings" })
	for _, k := range sortedKeys(layer.values) {
		if !byKey[k].storable {
			problems = append(problems, fmt.Sprintf("stored settings: %s cannot be stored; set it in the configuration file or the environment", k))
		}
	}
	if len(problems) > 0 {
		return &ValidationError{Problems: problems}
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur.Load() == nil {
		// Nothing read yet: a full load with the new layer.
		prev := l.stored
		l.stored = layer
		if _, err := l.loadLocked(); err != nil {
			l.stored = prev
			return err
		}
		return nil
	}
	c, src, err := l.resolve(l.file, l.fileProbs, layer)
	if err != nil {
		return err
	}
	l.stored = layer
	l.sources.Store(&src)
	l.cur.Store(c)
	return nil
}

// loadLocked reads the file and resolves everything; on success it updates the cache.
func (l *Loader) loadLocked() (*Config, error) {
	st, err := statFile(l.path)
	if err != nil {
		return nil, err
	}
	file, probs := typedLayer{values: map[string]any{}}, []string(nil)
	if st.exists {
		data, err := readFile(l.path)
		if err != nil {
			return nil, err
		}
		file, probs, err = parseFile(l.path, data)
		if err != nil {
			return nil, err
		}
	}
	c, src, err := l.resolve(file, probs, l.stored)
	if err != nil {
		return nil, err
	}
	l.file, l.fileProbs, l.fileStamp = file, probs, st
	l.lastCheck.Store(l.clock().UnixNano())
	l.sources.Store(&src)
	l.cur.Store(c)
	return c, nil
}

func statFile(path string) (stamp, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return stamp{}, nil
	case err != nil:
		return stamp{}, fmt.Errorf("config file %s: %w", path, err)
	case fi.IsDir():
		return stamp{}, fmt.Errorf("config file %s: is a directory", path)
	}
	return stamp{exists: true, mod: fi.ModTime(), size: fi.Size()}, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return data, nil
}

// resolve merges the layers over the defaults, normalises and validates; it also says which
// layer each key set by a layer comes from.
func (l *Loader) resolve(file typedLayer, fileProbs []string, stored typedLayer) (*Config, map[string]Source, error) {
	c := Defaults()
	origin := map[string]string{}
	problems := append([]string(nil), fileProbs...)

	for k, v := range file.values {
		byKey[k].set(c, v)
		if line := file.lines[k]; line > 0 {
			origin[k] = fmt.Sprintf("config file %s line %d", l.path, line)
		} else {
			origin[k] = "config file " + l.path
		}
	}
	problems = append(problems, l.applyEnv(c, origin)...)
	for k, v := range stored.values {
		byKey[k].set(c, v)
		origin[k] = "stored settings"
	}

	normalise(c)
	problems = append(problems, validate(c, origin)...)
	if len(problems) > 0 {
		return nil, nil, &ValidationError{Problems: problems}
	}
	src := make(map[string]Source, len(origin))
	for k, o := range origin {
		switch {
		case o == "stored settings":
			src[k] = SourceStored
		case strings.HasPrefix(o, "config file"):
			src[k] = SourceFile
		default: // an environment variable's name
			src[k] = SourceEnvironment
		}
	}
	return c, src, nil
}

// SourceOf says which layer the current value of key comes from (SourceDefault for a key no
// layer sets, and for an unknown key).
func (l *Loader) SourceOf(key string) Source {
	l.Current() // the file may have changed
	if m := l.sources.Load(); m != nil {
		if s, ok := (*m)[key]; ok {
			return s
		}
	}
	return SourceDefault
}

// EditStored runs edit while holding the lock every read-modify-write of the stored settings
// takes (read the stored rows, SetStored with the merge, write the rows), so two
// administrators saving different settings at once do not drop each other's keys from the
// stored layer. It returns edit's error.
func (l *Loader) EditStored(edit func() error) error {
	l.storedEdit.Lock()
	defer l.storedEdit.Unlock()
	return edit()
}

// applyEnv sets the keys present in the environment. An empty variable sets a string key to
// "" (SVC_APP_PREFIX= runs at the root) and leaves a number or boolean key alone.
func (l *Loader) applyEnv(c *Config, origin map[string]string) []string {
	var problems []string
	err := env.ParseWithOptions(c, env.Options{Environment: l.env, Prefix: EnvPrefix})
	var agg env.AggregateError
	if errors.As(err, &agg) {
		for _, e := range agg.Errors {
			var pe env.ParseError
			if errors.As(e, &pe) {
				if f := byGoName[pe.Name]; f != nil {
					problems = append(problems, envProblem(f, l.env[f.env]))
					continue
				}
			}
			problems = append(problems, e.Error())
		}
	} else if err != nil {
		problems = append(problems, err.Error())
	}
	for _, f := range fields {
		v, ok := l.env[f.env]
		if !ok {
			continue
		}
		if v == "" {
			if f.kind != reflect.String {
				continue
			}
			f.set(c, "")
		}
		origin[f.key] = f.env
	}
	if v := l.env["SERVER_NAME"]; v != "" {
		c.Listen = v
		origin["listen"] = "SERVER_NAME"
	}
	return problems
}

func envProblem(f *field, v string) string {
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	switch f.kind {
	case reflect.Bool:
		return fmt.Sprintf("%s=%q is not a boolean (use true or false)", f.env, v)
	case reflect.Int:
		return fmt.Sprintf("%s=%q is not an integer", f.env, v)
	}
	return fmt.Sprintf("%s=%q is not valid", f.env, v)
}

func clone(c *Config) *Config {
	if c == nil {
		return nil
	}
	cp := *c
	return &cp
}

func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}
