package plugins

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/plugins/catalog"
	"github.com/agentsvc/svc/store"
)

// Admin runs the administrator's plugin operations: the inventory, browsing the catalog and
// installing, updating and uninstalling its packages, each change followed by a reload of the
// Runtime. Every gate of those operations lives here: the caller must be an administrator
// (internal/domain/access; checked first), plugin_catalog_enabled for the catalog,
// plugin_install_enabled for changes, plugin_catalog_url and plugin_catalog_ttl for where
// packages come from.
type Admin struct {
	Runtime *Runtime
	Config  func() *config.Config
	// Net screens the catalog's and the archives' requests (outbound requests), except the host
	// of plugin_catalog_url itself, which the administrator named (a catalog on the local
	// network, as global model configurations are not screened either).
	Net     netguard.Options
	Timeout time.Duration    // of one catalog or archive request
	Clock   func() time.Time // the cache's clock; nil: time.Now
}

// httpClient is the screened client for the catalog at catalogURL: its host is exempt.
func (a *Admin) httpClient(catalogURL string) *http.Client {
	opts := a.Net
	if u, err := url.Parse(catalogURL); err == nil && u.Hostname() != "" {
		if l, err := netguard.ParseHostList(u.Hostname()); err == nil {
			opts.Exempt = opts.Exempt.With(l)
		}
	}
	return netguard.Client(a.Timeout, opts)
}

// CatalogEntry is one package the catalog offers.
type CatalogEntry struct {
	Package, Name, Description, Latest string
	Installed                          *string // the version installed here, nil when not installed
}

// CatalogView is the catalog as served.
type CatalogView struct {
	Configured bool           // false: no plugin_catalog_url, so no entries and no FetchedAt
	Entries    []CatalogEntry // by package name
	FetchedAt  time.Time
	Stale      bool // the catalog could not be read; an older cached copy is served
}

// client builds the catalog client of the current settings. Errors: ErrUnavailable when no
// catalog is configured, or its address or plugin_catalog_public_key is unusable (an address
// that is not https, nor http to a loopback host).
func (a *Admin) client() (*catalog.Client, error) {
	cfg := a.Config()
	if strings.TrimSpace(cfg.PluginCatalogURL) == "" {
		return nil, svcerr.New(svcerr.ErrUnavailable, "no plugin catalog is configured (setting plugin_catalog_url)")
	}
	key, err := cfg.CatalogPublicKey()
	if err != nil {
		return nil, svcerr.New(svcerr.ErrUnavailable, "the plugin catalog is unavailable: %v", err)
	}
	dir := a.Runtime.Dir()
	c, err := catalog.New(catalog.Options{
		URL: cfg.PluginCatalogURL, PublicKey: key, HTTPClient: a.httpClient(cfg.PluginCatalogURL), CacheDir: filepath.Join(dir, ".cache"),
		TTL: time.Duration(cfg.PluginCatalogTTL) * time.Second, Now: a.Clock, TempDir: os.TempDir(),
	})
	if msg, kind, ok := svcerr.Public(err); ok && kind == svcerr.ErrInvalid {
		// The settings are validated when stored; this is the client's own check of the same
		// rule (plain http to a host that is not loopback), an unusable catalog like any other.
		return nil, svcerr.New(svcerr.ErrUnavailable, "the plugin catalog is unavailable: %s", msg)
	}
	return c, err
}

// installer builds the installer of package pkg over the current catalog settings (the
// catalog's address may change at run time).
func (a *Admin) installer(pkg string) (*catalog.Installer, error) {
	var c *catalog.Client // none configured: uninstall works, install and update say so
	if strings.TrimSpace(a.Config().PluginCatalogURL) != "" {
		var err error
		if c, err = a.client(); err != nil {
			return nil, err
		}
	}
	return catalog.NewInstaller(a.Runtime.Dir(), c, catalog.InstallerOptions{
		Check:       a.check(pkg),
		IsInstalled: func(pkg string) bool { return a.Runtime.Current().Installed(pkg) },
	})
}

// gateInstall refuses changes of the installed packages unless by is an administrator and
// pkg, when not "", is a package name (ErrNotFound), and plugin_install_enabled is on, in that
// order. Errors: ErrForbidden, ErrNotFound.
func (a *Admin) gateInstall(by *store.User, pkg string) error {
	if err := access.Administrator(by); err != nil {
		return err
	}
	if pkg != "" && !catalog.ValidPackage(pkg) {
		return svcerr.New(svcerr.ErrNotFound, "plugin package %q is not installed", pkg)
	}
	if !a.Config().PluginInstallEnabled {
		return svcerr.New(svcerr.ErrForbidden, "plugin install, update and uninstall are disabled (setting plugin_install_enabled)")
	}
	return nil
}

// Inventory lists the loaded plugins (those whose manifest did not parse included) to an
// administrator (by). Errors: ErrForbidden (by is no administrator).
func (a *Admin) Inventory(by *store.User) ([]*Loaded, error) {
	if err := access.Administrator(by); err != nil {
		return nil, err
	}
	return a.Runtime.Current().List(), nil
}

// Catalog lists the catalog's packages with the versions installed here, to an administrator
// (by). No catalog configured is the default, not a failure: an empty view with Configured
// false. Errors: ErrForbidden (by is no administrator, plugin_catalog_enabled off),
// ErrUnavailable (the configured catalog cannot be read and no copy is cached).
func (a *Admin) Catalog(ctx context.Context, by *store.User) (*CatalogView, error) {
	if err := access.Administrator(by); err != nil {
		return nil, err
	}
	if !a.Config().PluginCatalogEnabled {
		return nil, svcerr.New(svcerr.ErrForbidden, "the plugin catalog is disabled (setting plugin_catalog_enabled)")
	}
	if strings.TrimSpace(a.Config().PluginCatalogURL) == "" {
		return &CatalogView{Entries: []CatalogEntry{}}, nil
	}
	c, err := a.client()
	if err != nil {
		return nil, err
	}
	snap, err := c.Index(ctx)
	if err != nil {
		return nil, err
	}
	cur := a.Runtime.Current()
	v := &CatalogView{Configured: true, FetchedAt: snap.FetchedAt, Stale: snap.Stale, Entries: []CatalogEntry{}}
	for _, p := range snap.Packages {
		e := CatalogEntry{Package: p.Package, Name: p.Name, Description: p.Description}
		if latest, ok := p.Latest(); ok {
			e.Latest = latest.Version
		}
		if l := cur.byPackage(p.Package); l != nil {
			ver := l.Version()
			e.Installed = &ver
		}
		v.Entries = append(v.Entries, e)
	}
	sort.Slice(v.Entries, func(i, j int) bool { return v.Entries[i].Package < v.Entries[j].Package })
	return v, nil
}

// Install installs version (default the latest) of catalog package pkg and loads it, for an
// administrator (by). A package whose plugin does not load is removed again, so a failed
// install leaves the plugins as they were. Errors: ErrForbidden (by is no administrator,
// install disabled), ErrConflict (installed already, its
// slug taken, or requirements missing: never installed on their own), ErrInvalid (the catalog
// does not list it, a bad archive or checksum, a manifest that breaks a rule, a plugin that
// does not load), ErrUnavailable (no catalog).
func (a *Admin) Install(ctx context.Context, by *store.User, pkg, version string) (*Loaded, error) {
	if err := a.gateInstall(by, ""); err != nil { // the request's pattern has checked pkg
		return nil, err
	}
	if l := a.Runtime.Current().byPackage(pkg); l != nil {
		return nil, svcerr.New(svcerr.ErrConflict, "plugin package %s is already installed", pkg)
	}
	in, err := a.installer(pkg)
	if err != nil {
		return nil, err
	}
	if _, err := in.Install(ctx, pkg, version); err != nil {
		return nil, fetchError(err)
	}
	l, err := a.loaded(ctx, pkg)
	if err != nil {
		_ = in.Uninstall(context.WithoutCancel(ctx), pkg)
		_, _ = a.Runtime.Reload(context.WithoutCancel(ctx))
		return nil, err
	}
	return l, nil
}

// Update replaces installed package pkg with version (default the latest) and loads it, for an
// administrator (by); on a plugin that does not load, the previous version is put back.
// Updating to the installed version changes nothing. Errors: as Install, and ErrNotFound (not
// installed, or pkg is no package name), ErrInvalidState (placed by hand or bundled: not the
// catalog's to replace).
func (a *Admin) Update(ctx context.Context, by *store.User, pkg, version string) (*Loaded, error) {
	if err := a.gateInstall(by, pkg); err != nil {
		return nil, err
	}
	cur := a.Runtime.Current().byPackage(pkg)
	if cur == nil {
		return nil, svcerr.New(svcerr.ErrNotFound, "plugin package %s is not installed", pkg)
	}
	in, err := a.installer(pkg)
	if err != nil {
		return nil, err
	}
	if _, err := in.Installed(pkg); err != nil {
		return nil, svcerr.New(svcerr.ErrInvalidState, "plugin package %s was not installed from the catalog; replace its folder by hand", pkg)
	}
	res, err := in.Update(ctx, pkg, version)
	if err != nil {
		return nil, fetchError(err)
	}
	if res.Unchanged {
		return cur, nil
	}
	l, err := a.loaded(ctx, pkg)
	if err != nil {
		if res.Previous != "" {
			_, _ = in.Update(context.WithoutCancel(ctx), pkg, res.Previous)
			_, _ = a.Runtime.Reload(context.WithoutCancel(ctx))
		}
		return nil, err
	}
	return l, nil
}

// Uninstall removes installed package pkg and unloads it, for an administrator (caller): its
// tools leave the registry; agent tool records stay and show as missing. Errors: ErrForbidden
// (caller is no administrator, install disabled), ErrNotFound (not installed, or pkg is no
// package name), ErrInvalidState (required by another plugin or an agent template; placed by
// hand or bundled).
func (a *Admin) Uninstall(ctx context.Context, caller *store.User, pkg string) error {
	if err := a.gateInstall(caller, pkg); err != nil {
		return err
	}
	cur := a.Runtime.Current()
	if cur.byPackage(pkg) == nil {
		return svcerr.New(svcerr.ErrNotFound, "plugin package %s is not installed", pkg)
	}
	by := cur.RequiredBy(pkg)
	if tpl := a.Runtime.opts.Deps.Templates; tpl != nil {
		sums, err := tpl(ctx)
		if err != nil {
			return err
		}
		for _, s := range sums {
			if slices.Contains(s.RequiredPlugins, pkg) {
				by = append(by, s.ID)
			}
		}
	}
	if len(by) > 0 {
		return svcerr.New(svcerr.ErrInvalidState, "plugin package %s is required by %s", pkg, strings.Join(by, ", "))
	}
	in, err := a.installer(pkg)
	if err != nil {
		return err
	}
	if _, err := in.Installed(pkg); err != nil {
		return svcerr.New(svcerr.ErrInvalidState, "plugin package %s was not installed from the catalog; remove its folder by hand", pkg)
	}
	if err := in.Uninstall(ctx, pkg); err != nil {
		return catalogError(err)
	}
	_, err = a.Runtime.Reload(ctx)
	return err
}

// check validates an unpacked package before it is put in place: its manifest follows every
// rule, names the package, and its slug is not another loaded plugin's.
func (a *Admin) check(pkg string) func(dir string) error {
	return func(dir string) error {
		data, err := readLimited(filepath.Join(dir, ManifestFile), MaxManifestBytes)
		if err != nil {
			return svcerr.New(svcerr.ErrInvalid, "package %s: %v", pkg, err)
		}
		m, err := ParseManifest(pkg, data)
		if err != nil {
			return svcerr.New(svcerr.ErrInvalid, "%v", err)
		}
		if m.Name != pkg {
			return svcerr.New(svcerr.ErrInvalid, "plugin %s: the manifest's name is %q, not the package %s", m.Slug, m.Name, pkg)
		}
		for _, l := range a.Runtime.Current().List() {
			if l.Slug == m.Slug && l.Package != pkg && l.Enabled() {
				return svcerr.New(svcerr.ErrConflict, "plugin %s: the slug is taken by the installed package %s", m.Slug, l.Package)
			}
		}
		return nil
	}
}

// loaded reloads the plugins and returns pkg's plugin. Errors: ErrInvalid naming why the
// plugin did not load.
func (a *Admin) loaded(ctx context.Context, pkg string) (*Loaded, error) {
	set, err := a.Runtime.Reload(ctx)
	if err != nil {
		return nil, err
	}
	l := set.byPackage(pkg)
	if l == nil {
		return nil, svcerr.New(svcerr.ErrInvalid, "plugin package %s was unpacked but not found by the loader", pkg)
	}
	if l.Err != nil {
		return nil, svcerr.New(svcerr.ErrInvalid, "%v", l.Err)
	}
	return l, nil
}

// fetchError is catalogError for install and update, where a package or version the catalog
// does not list is a bad request body (422), not a missing resource.
func fetchError(err error) error {
	if errors.Is(err, svcerr.ErrNotFound) {
		msg, _, _ := svcerr.Public(err)
		return svcerr.New(svcerr.ErrInvalid, "%s", msg)
	}
	return catalogError(err)
}

// catalogError keeps the installer's categories; anything uncategorised is a bad package.
func catalogError(err error) error {
	if _, _, ok := svcerr.Public(err); ok || errors.Is(err, context.Canceled) {
		return err
	}
	return svcerr.New(svcerr.ErrInvalid, "%v", err)
}

// byPackage returns the plugin of package pkg (the loaded one when several folders claim it).
func (s *Set) byPackage(pkg string) *Loaded {
	var found *Loaded
	for _, l := range s.List() {
		if l.Package == pkg && (found == nil || l.Enabled()) {
			found = l
		}
	}
	return found
}

// ByPackage returns the plugin of package pkg.
func (s *Set) ByPackage(pkg string) (*Loaded, bool) {
	l := s.byPackage(pkg)
	return l, l != nil
}
