// Package searchcore is the first-party palette search plugin: it searches the caller's agents
// (those they can see), their own tasks and the template catalog. It is compiled in but, like
// any plugin, active only once its manifest is in the plugins directory (copy the folder
// plugins/searchcore/plugin there): the core ships no search provider (document 1).
package searchcore

import (
	"context"
	"strconv"
	"strings"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/vocab/text"
	"github.com/agentsvc/svc/plugins"
	"github.com/agentsvc/svc/store"
)

// Class is the manifest class of this plugin.
const Class = "svc.CoreSearch"

func init() {
	plugins.Register(Class, func(_ *plugins.Manifest, _ string, deps plugins.Deps) (plugins.Plugin, error) {
		return &provider{deps: deps}, nil
	})
}

type provider struct{ deps plugins.Deps }

// SearchProviders offers the three sections.
func (p *provider) SearchProviders() []plugins.SearchProviderFunc {
	return []plugins.SearchProviderFunc{p.agents, p.tasks, p.templates}
}

// score ranks a match of q in text: the whole text 1, its start 0.8, a word's start 0.6,
// anywhere else 0.4, no match 0.
func score(text, q string) float64 {
	t, q := strings.ToLower(text), strings.ToLower(q)
	switch {
	case t == q:
		return 1
	case strings.HasPrefix(t, q):
		return 0.8
	case strings.Contains(t, " "+q):
		return 0.6
	case strings.Contains(t, q):
		return 0.4
	}
	return 0
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// agents searches the agents the caller can see by name and description.
func (p *provider) agents(ctx context.Context, q plugins.Query) ([]plugins.Hit, error) {
	sc, err := access.For(ctx, p.deps.Store, q.User)
	if err != nil {
		return nil, err
	}
	aq := store.AgentQuery{Viewer: q.User.ID, Match: q.Text, PerPage: q.Limit}
	if sc.Admin {
		aq.All = true
	} else {
		aq.Principals = sc.Principals()
	}
	as, err := p.deps.Store.ListAgents(ctx, aq)
	if err != nil {
		return nil, err
	}
	out := make([]plugins.Hit, 0, len(as))
	for _, a := range as {
		s := max(score(a.Name, q.Text), score(a.Description, q.Text)*0.5)
		id := strconv.FormatInt(a.ID, 10)
		out = append(out, plugins.Hit{Type: "agent", ID: id, Title: a.Name, Subtitle: optional(text.Clip(a.Description, 120)),
			URL: "/agents/" + id, Score: s})
	}
	return out, nil
}

// tasks searches the caller's own tasks by prompt.
func (p *provider) tasks(ctx context.Context, q plugins.Query) ([]plugins.Hit, error) {
	ts, err := p.deps.Store.ListTasks(ctx, store.TaskQuery{UserID: q.User.ID, Match: q.Text, PerPage: q.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]plugins.Hit, 0, len(ts))
	for _, t := range ts {
		id := strconv.FormatInt(t.ID, 10)
		out = append(out, plugins.Hit{Type: "task", ID: id, Title: text.Clip(t.Prompt, 80), Subtitle: optional(t.Status),
			URL: "/tasks/" + id, Score: score(t.Prompt, q.Text) * 0.9})
	}
	return out, nil
}

// templates searches the template catalog by id, name and description.
func (p *provider) templates(ctx context.Context, q plugins.Query) ([]plugins.Hit, error) {
	if p.deps.Templates == nil {
		return nil, nil
	}
	ts, err := p.deps.Templates(ctx)
	if err != nil {
		return nil, err
	}
	var out []plugins.Hit
	for _, t := range ts {
		s := max(score(t.Name, q.Text), score(t.ID, q.Text)*0.9, score(t.Description, q.Text)*0.5)
		if s == 0 {
			continue
		}
		out = append(out, plugins.Hit{Type: "template", ID: t.ID, Title: t.Name, Subtitle: optional(text.Clip(t.Description, 120)),
			URL: "/agent-templates/" + strings.ReplaceAll(t.ID, "/", "%2F"), Score: s})
		if len(out) == q.Limit {
			break
		}
	}
	return out, nil
}
