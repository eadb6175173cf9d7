package api

import (
	"context"
	"net/url"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/plugins"
	"github.com/agentsvc/svc/plugins/catalog"
)

// ListPlugins is the plugin inventory (administrators: plugins.Admin decides).
func (a *API) ListPlugins(ctx context.Context, _ gen.ListPluginsRequestObject) (gen.ListPluginsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	list, err := a.pluginAdmin.Inventory(id.User)
	if err != nil {
		return nil, err
	}
	var r gen.ListPlugins200JSONResponse
	r.Data.Plugins = []gen.Plugin{}
	for _, l := range list {
		r.Data.Plugins = append(r.Data.Plugins, a.toPlugin(l))
	}
	return r, nil
}

// toPlugin is the inventory entry of a loaded plugin; one whose manifest did not parse shows
// its folder name as slug, the fallbacks of document 2 and the error.
func (a *API) toPlugin(l *plugins.Loaded) gen.Plugin {
	requiredBy := a.plugins.Current().RequiredBy(l.Package)
	p := gen.Plugin{
		Slug: l.Slug, Package: l.Package, Name: l.Slug, Icon: plugins.DefaultIcon, Accent: gen.PluginAccent(plugins.DefaultAccent),
		Version: l.Version(), Enabled: l.Enabled(), Source: gen.PluginSource(l.Source), ClassRegistered: l.Registered,
		SchemaVersion: l.SchemaVersion, Required: len(requiredBy) > 0, RequiredBy: requiredBy,
		Contributes: gen.PluginContributions{
			Tools: a.pluginTools(l.Slug), AgentTemplates: len(l.Templates), Skills: l.Skills, Migrations: l.Migrations,
		},
	}
	if m := l.Manifest; m != nil {
		p.Name, p.Description, p.Icon, p.Accent = m.Title(), m.Description, m.Icon, gen.PluginAccent(m.Accent)
		p.Contributes.McpServers, p.Contributes.SearchProviders = len(m.MCPServers), len(m.SearchProviders)
		if m.FrontendEntry != "" {
			p.Contributes.Apps = 1
		}
	}
	if sr, ok := l.Plugin.(plugins.Searcher); ok {
		p.Contributes.SearchProviders += len(sr.SearchProviders())
	}
	if l.Err != nil {
		msg := l.Err.Error()
		p.Error = &msg
	}
	return p
}

// pluginTools counts the registered tools of plugin slug.
func (a *API) pluginTools(slug string) int {
	n := 0
	for _, s := range a.tools.Specs() {
		if s.PluginSlug == slug {
			n++
		}
	}
	return n
}

// SearchPalette asks the search providers of the loaded plugins (compiled-in and MCP tools).
func (a *API) SearchPalette(ctx context.Context, req gen.SearchPaletteRequestObject) (gen.SearchPaletteResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	q := plugins.Query{Text: deref(req.Params.Q), Limit: deref(req.Params.Limit), User: id.User}
	hits := plugins.Search(ctx, a.log, a.search(), q)
	var r gen.SearchPalette200JSONResponse
	r.Data.Hits = make([]gen.SearchHit, 0, len(hits))
	for _, h := range hits {
		r.Data.Hits = append(r.Data.Hits, gen.SearchHit{Type: h.Type, Id: h.ID, Title: h.Title, Subtitle: h.Subtitle, Url: h.URL, Score: h.Score})
	}
	return r, nil
}

// pluginPackage is the package name of a path key (`vendor%2Fname`). A key that does not
// decode to a package name is passed on as sent: plugins.Admin refuses it (after deciding
// whether the caller may ask at all), quoting what the client sent.
func pluginPackage(key string) string {
	pkg, err := url.PathUnescape(key)
	if err != nil || !catalog.ValidPackage(pkg) {
		return key
	}
	return pkg
}

// ListPluginCatalog browses the catalog (administrators; plugin_catalog_enabled).
func (a *API) ListPluginCatalog(ctx context.Context, _ gen.ListPluginCatalogRequestObject) (gen.ListPluginCatalogResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	v, err := a.pluginAdmin.Catalog(ctx, id.User)
	if err != nil {
		return nil, err
	}
	var r gen.ListPluginCatalog200JSONResponse
	r.Data.Configured, r.Data.Stale = v.Configured, v.Stale
	if v.Configured {
		r.Data.FetchedAt = &v.FetchedAt
	}
	r.Data.Entries = make([]gen.PluginCatalogEntry, 0, len(v.Entries))
	for _, e := range v.Entries {
		r.Data.Entries = append(r.Data.Entries, gen.PluginCatalogEntry{Package: e.Package, Name: e.Name,
			Description: e.Description, LatestVersion: e.Latest, InstalledVersion: e.Installed})
	}
	return r, nil
}

// InstallPlugin installs a catalog package (administrators; plugin_install_enabled).
func (a *API) InstallPlugin(ctx context.Context, req gen.InstallPluginRequestObject) (gen.InstallPluginResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	l, err := a.pluginAdmin.Install(ctx, id.User, req.Body.Package, deref(req.Body.Version))
	if err != nil {
		return nil, err
	}
	var r gen.InstallPlugin201JSONResponse
	r.Data.Plugin = a.toPlugin(l)
	return r, nil
}

// UpdatePlugin replaces an installed package with another catalog version.
func (a *API) UpdatePlugin(ctx context.Context, req gen.UpdatePluginRequestObject) (gen.UpdatePluginResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	l, err := a.pluginAdmin.Update(ctx, id.User, pluginPackage(req.Package), deref(req.Body.Version))
	if err != nil {
		return nil, err
	}
	var r gen.UpdatePlugin200JSONResponse
	r.Data.Plugin = a.toPlugin(l)
	return r, nil
}

// UninstallPlugin removes an installed package.
func (a *API) UninstallPlugin(ctx context.Context, req gen.UninstallPluginRequestObject) (gen.UninstallPluginResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.pluginAdmin.Uninstall(ctx, id.User, pluginPackage(req.Package)); err != nil {
		return nil, err
	}
	var r gen.UninstallPlugin200JSONResponse
	r.Data.Deleted = true
	return r, nil
}
