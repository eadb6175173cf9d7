package plugins

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/agentsvc/svc/internal/domain/agenttemplate"
	"github.com/agentsvc/svc/store"
)

// Plugin is a compiled-in plugin's entry point, built for a loaded manifest whose class names
// it. Capabilities are optional interfaces (Searcher); a plugin with none contributes its
// manifest's data only.
type Plugin interface{}

// Searcher is a plugin that answers palette searches.
type Searcher interface {
	SearchProviders() []SearchProviderFunc
}

// Deps are the services a compiled-in plugin is built with.
type Deps struct {
	Store *store.Store
	// Templates lists the template catalog (core and plugin templates).
	Templates func(ctx context.Context) ([]agenttemplate.Summary, error)
}

// Factory builds a plugin's entry point for the plugin folder dir. Errors: the plugin does not
// load (the inventory shows the error).
type Factory func(m *Manifest, dir string, deps Deps) (Plugin, error)

var (
	registryMu sync.RWMutex
	factories  = map[string]Factory{}
)

// Register makes a compiled-in plugin available under class (the manifest's `class`), as
// database/sql drivers register; call it from an init function. Registering a class twice
// panics: two builds of one entry point are a programming error.
func Register(class string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if f == nil {
		panic("plugins: Register with a nil factory for " + class)
	}
	if _, dup := factories[class]; dup {
		panic(fmt.Sprintf("plugins: Register called twice for class %s", class))
	}
	factories[class] = f
}

// factory returns the entry point registered under class.
func factory(class string) (Factory, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	f, ok := factories[class]
	return f, ok
}

// Classes lists the registered classes, sorted.
func Classes() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(factories))
	for c := range factories {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}
