package plugins

import (
	"context"
	"sync"
	"sync/atomic"
)

// Runtime is the live plugin state of a running service: the Set loaded at start, loaded again
// after a package was installed, updated or uninstalled. Readers take Current; hooks registered
// with OnReload bring what depends on the plugins up to date (skills, MCP tools). It is safe for
// concurrent use; reloads are serialised.
type Runtime struct {
	opts  Options
	cur   atomic.Pointer[Set]
	mu    sync.Mutex // serialises Reload
	hooks []func(ctx context.Context, old, cur *Set)
}

// NewRuntime loads the plugins of o.Dir (see Load). Errors: those of Load.
func NewRuntime(ctx context.Context, o Options) (*Runtime, error) {
	s, err := Load(ctx, o)
	if err != nil {
		return nil, err
	}
	r := &Runtime{opts: o}
	r.cur.Store(s)
	return r, nil
}

// Current is the plugins as last loaded.
func (r *Runtime) Current() *Set { return r.cur.Load() }

// OnReload registers f to run after each Reload with the previous and the new Set. Register
// hooks while the service is assembled, before any Reload.
func (r *Runtime) OnReload(f func(ctx context.Context, old, cur *Set)) { r.hooks = append(r.hooks, f) }

// Reload reads the plugins directory again, swaps the new Set in and runs the hooks. Errors:
// those of Load (the current Set stays).
func (r *Runtime) Reload(ctx context.Context) (*Set, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := Load(ctx, r.opts)
	if err != nil {
		return nil, err
	}
	old := r.cur.Swap(s)
	for _, h := range r.hooks {
		h(ctx, old, s)
	}
	return s, nil
}

// Dir is the plugins directory.
func (r *Runtime) Dir() string { return r.opts.Dir }
