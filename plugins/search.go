package plugins

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/store"
)

// Palette search limits (document 1: q truncated to 200 characters).
const (
	MaxQuery       = 200
	ProviderBudget = 2 * time.Second // a slower provider's section is dropped
)

// Hit is one palette search result.
type Hit struct {
	Type     string // section key chosen by the provider
	ID       string
	Title    string
	Subtitle *string
	URL      string
	Score    float64 // higher is better
}

// Query is what a provider is asked.
type Query struct {
	Text  string
	Limit int
	User  *store.User // the caller: a provider returns only what this user may see
}

// SearchProviderFunc answers a query with hits. Errors drop the provider's section.
type SearchProviderFunc func(ctx context.Context, q Query) ([]Hit, error)

// NamedProvider is a provider with the plugin it comes from (for logs).
type NamedProvider struct {
	Plugin string
	Search SearchProviderFunc
}

// NormalizeQuery trims q and truncates it to MaxQuery characters (never refused for length).
func NormalizeQuery(q string) string {
	q = strings.TrimSpace(q)
	if utf8.RuneCountInString(q) <= MaxQuery {
		return q
	}
	r := []rune(q)
	return strings.TrimSpace(string(r[:MaxQuery]))
}

// Search asks every provider at once, each bounded by ProviderBudget, and merges their hits best
// score first (ties: type, then title), at most limit. An empty query answers no hits without
// asking anyone. A provider that fails or overruns loses its section only (logged).
func Search(ctx context.Context, log *slog.Logger, providers []NamedProvider, q Query) []Hit {
	q.Text = NormalizeQuery(q.Text)
	if q.Limit <= 0 {
		q.Limit = limits.DefaultSearchHits
	}
	q.Limit = min(q.Limit, limits.MaxSearchHits)
	if q.Text == "" || len(providers) == 0 {
		return []Hit{}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	hits := []Hit{}
	for _, p := range providers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, ProviderBudget)
			defer cancel()
			got, err := runProvider(pctx, p.Search, q)
			if err != nil {
				log.WarnContext(ctx, "search provider dropped", "plugin", p.Plugin, "err", err)
				return
			}
			mu.Lock()
			hits = append(hits, got...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.SliceStable(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		return a.Title < b.Title
	})
	if len(hits) > q.Limit {
		hits = hits[:q.Limit]
	}
	return hits
}

// runProvider calls search, giving up when ctx ends even if the provider does not watch it.
func runProvider(ctx context.Context, search SearchProviderFunc, q Query) ([]Hit, error) {
	type answer struct {
		hits []Hit
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- answer{err: panicError{r}}
			}
		}()
		h, err := search(ctx, q)
		done <- answer{h, err}
	}()
	select {
	case a := <-done:
		if a.err != nil {
			return nil, a.err
		}
		out := make([]Hit, 0, len(a.hits))
		for _, h := range a.hits {
			if h.Type != "" && h.ID != "" && h.Title != "" {
				out = append(out, h)
			}
		}
		return out, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type panicError struct{ v any }

func (p panicError) Error() string { return "provider panicked" }
