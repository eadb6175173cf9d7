// Package plugins loads the plugins of a running service: folders holding a `plugin.json`
// manifest (document 2, "Plugin manifest") and what they contribute — agent templates, skill
// folders, MCP tool servers, palette search providers, SQL migrations and a prebuilt frontend
// bundle. Plugins with Go code are compiled in and register their entry point with Register, as
// database/sql drivers do; a manifest whose class names no registered entry point loads its data
// contributions only. Every rule of the manifest lives in this file.
package plugins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// ManifestFile is the name of a plugin's manifest in its folder.
const ManifestFile = "plugin.json"

// Limits of a manifest.
const (
	MaxManifestBytes  = 256 << 10
	MaxDescription    = 500 // characters (document 2)
	MaxSlug           = 64  // so that `<slug>/<name>` template ids stay valid
	MaxIconPath       = 8192
	DefaultIcon       = "puzzle"
	DefaultAccent     = "primary"
	maxListEntries    = 64
	maxServerArgs     = 64
	maxSettingsPerMCP = 16
)

var (
	slugPattern    = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	packagePattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?/[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?$`)
	iconName       = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`)
	// A single SVG path whose first command is a moveto: `M` then optional spaces then a digit,
	// or `m` then optional spaces then an optionally minus-signed digit (document 2).
	iconPath     = regexp.MustCompile(`^(M\s*[0-9]|m\s*-?[0-9])`)
	serverName   = regexp.MustCompile(`^[a-z][a-z0-9_]{0,47}$`)
	settingKey   = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	envName      = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,63}$`)
	accents      = []string{"violet", "amber", "emerald", "sky", "rose", "primary"}
	headerNameRe = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$")
)

// Manifest is a plugin's `plugin.json`: document 2's fields, then the data hooks this service
// reads (the extra keys, described by plugin.schema.json).
type Manifest struct {
	Slug          string    `json:"slug"`
	Class         string    `json:"class"`
	Schema        string    `json:"$schema,omitempty"`
	Name          string    `json:"name,omitempty"` // package name `vendor/name`
	Description   string    `json:"description,omitempty"`
	Icon          string    `json:"icon,omitempty"`
	Accent        string    `json:"accent,omitempty"`
	Autoload      *Autoload `json:"autoload,omitempty"`
	FrontendEntry string    `json:"frontendEntry,omitempty"`

	// Data hooks.
	DisplayName     string           `json:"displayName,omitempty"`
	Version         string           `json:"version,omitempty"`
	Templates       []string         `json:"templates,omitempty"` // files or folders of agent templates
	Skills          []string         `json:"skills,omitempty"`    // folders of skill folders
	SchemaVersion   int              `json:"schemaVersion,omitempty"`
	Migrations      string           `json:"migrations,omitempty"` // folder with sqlite/, mysql/ and postgres/
	MCPServers      []MCPServer      `json:"mcpServers,omitempty"`
	SearchProviders []SearchProvider `json:"searchProviders,omitempty"`
	Requires        []string         `json:"requires,omitempty"` // package names
}

// Autoload is document 2's autoload block: accepted and checked for shape, otherwise unused
// (compiled-in plugins need no class loading).
type Autoload struct {
	PSR4  map[string]string `json:"psr-4,omitempty"`
	Files []string          `json:"files,omitempty"`
}

// MCPServer declares an MCP tool server: a stdio command run from the plugin folder, or a
// streamable HTTP URL. Its tools become tools of the plugin (`<slug>:<tool>`).
type MCPServer struct {
	Name            string            `json:"name"`
	Command         string            `json:"command,omitempty"`
	Args            []string          `json:"args,omitempty"`
	Env             map[string]string `json:"env,omitempty"`
	URL             string            `json:"url,omitempty"`
	Headers         map[string]string `json:"headers,omitempty"`
	RequireApproval *bool             `json:"requireApproval,omitempty"` // default true
	// Secrets are password-typed tool settings (sealed at rest, masked when read) sent to the
	// server: as a header of HTTP servers or an environment variable of stdio servers.
	Secrets []MCPSecret `json:"secrets,omitempty"`
}

// MCPSecret is one secret of an MCP server, configured as a password-typed tool setting.
type MCPSecret struct {
	Key      string `json:"key"`
	Label    string `json:"label,omitempty"`
	Required bool   `json:"required,omitempty"`
	Header   string `json:"header,omitempty"` // HTTP servers: header name (Authorization gets "Bearer ")
	Env      string `json:"env,omitempty"`    // stdio servers: environment variable
}

// SearchProvider declares a palette search provider: the named tool of one of the plugin's
// MCP servers, called with `{q, limit}` and answering hits.
type SearchProvider struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

// ManifestError is a manifest that breaks a rule; the message names the plugin and the rule.
type ManifestError struct {
	Plugin string // the slug, or the folder when the slug is unusable
	Rule   string
}

func (e *ManifestError) Error() string { return fmt.Sprintf("plugin %s: %s", e.Plugin, e.Rule) }

// ParseManifest decodes and checks a manifest read from the folder named dir (used in messages
// until the slug is known). Unknown keys are refused so a misspelt hook does not pass silently.
// It applies the silent fallbacks of document 2 (icon → puzzle, accent → primary). Errors:
// *ManifestError naming the plugin and the broken rule.
func ParseManifest(dir string, data []byte) (*Manifest, error) {
	fail := func(format string, args ...any) error {
		return &ManifestError{Plugin: dir, Rule: fmt.Sprintf(format, args...)}
	}
	if len(data) > MaxManifestBytes {
		return nil, fail("%s is larger than %d bytes", ManifestFile, MaxManifestBytes)
	}
	if !utf8.Valid(data) {
		return nil, fail("%s is not valid UTF-8", ManifestFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fail("%s does not parse: %v", ManifestFile, err)
	}
	if dec.More() {
		return nil, fail("%s holds more than one JSON value", ManifestFile)
	}
	if err := m.check(); err != nil {
		name := dir
		if slugPattern.MatchString(m.Slug) && len(m.Slug) <= MaxSlug {
			name = m.Slug
		}
		return nil, &ManifestError{Plugin: name, Rule: err.Error()}
	}
	return &m, nil
}

// check enforces the rules and applies the fallbacks.
func (m *Manifest) check() error {
	switch {
	case m.Slug == "":
		return fmt.Errorf("slug is required")
	case len(m.Slug) > MaxSlug || !slugPattern.MatchString(m.Slug):
		return fmt.Errorf("slug %q must match ^[a-z0-9][a-z0-9_-]*$ (at most %d characters)", m.Slug, MaxSlug)
	case strings.TrimSpace(m.Class) == "":
		return fmt.Errorf("class is required")
	case m.Name != "" && !packagePattern.MatchString(m.Name):
		return fmt.Errorf("name %q must be a package name vendor/name", m.Name)
	case utf8.RuneCountInString(m.Description) > MaxDescription:
		return fmt.Errorf("description is longer than %d characters", MaxDescription)
	case m.SchemaVersion < 0:
		return fmt.Errorf("schemaVersion must be 0 or more")
	case m.SchemaVersion > 0 && m.Migrations == "":
		return fmt.Errorf("schemaVersion %d needs a migrations folder", m.SchemaVersion)
	}
	icon, err := checkIcon(m.Icon)
	if err != nil {
		return err
	}
	m.Icon = icon
	if !slices.Contains(accents, m.Accent) {
		m.Accent = DefaultAccent
	}
	if a := m.Autoload; a != nil {
		for ns, p := range a.PSR4 {
			if err := checkRelPath("autoload.psr-4["+ns+"]", p); err != nil {
				return err
			}
		}
		for i, p := range a.Files {
			if err := checkRelPath(fmt.Sprintf("autoload.files[%d]", i), p); err != nil {
				return err
			}
		}
	}
	if m.FrontendEntry != "" {
		if err := checkRelPath("frontendEntry", m.FrontendEntry); err != nil {
			return err
		}
	}
	for field, list := range map[string][]string{"templates": m.Templates, "skills": m.Skills} {
		if len(list) > maxListEntries {
			return fmt.Errorf("%s lists more than %d paths", field, maxListEntries)
		}
		for i, p := range list {
			if err := checkRelPath(fmt.Sprintf("%s[%d]", field, i), p); err != nil {
				return err
			}
		}
	}
	if m.Migrations != "" {
		if err := checkRelPath("migrations", m.Migrations); err != nil {
			return err
		}
	}
	for i, r := range m.Requires {
		if !packagePattern.MatchString(r) {
			return fmt.Errorf("requires[%d] %q must be a package name vendor/name", i, r)
		}
	}
	return m.checkServers()
}

func (m *Manifest) checkServers() error {
	if len(m.MCPServers) > maxListEntries {
		return fmt.Errorf("mcpServers lists more than %d servers", maxListEntries)
	}
	names := map[string]bool{}
	for i, s := range m.MCPServers {
		at := fmt.Sprintf("mcpServers[%d]", i)
		if !serverName.MatchString(s.Name) {
			return fmt.Errorf("%s.name %q must match ^[a-z][a-z0-9_]*$ (at most 48 characters)", at, s.Name)
		}
		if names[s.Name] {
			return fmt.Errorf("%s.name %q is declared twice", at, s.Name)
		}
		names[s.Name] = true
		switch {
		case (s.Command == "") == (s.URL == ""):
			return fmt.Errorf("%s needs exactly one of command (stdio) and url (streamable HTTP)", at)
		case s.URL != "" && !(strings.HasPrefix(s.URL, "http://") || strings.HasPrefix(s.URL, "https://")):
			return fmt.Errorf("%s.url must be an http:// or https:// URL", at)
		case s.URL != "" && (len(s.Args) > 0 || len(s.Env) > 0):
			return fmt.Errorf("%s: args and env are for stdio servers", at)
		case s.Command != "" && len(s.Headers) > 0:
			return fmt.Errorf("%s: headers are for HTTP servers", at)
		case len(s.Args) > maxServerArgs:
			return fmt.Errorf("%s has more than %d args", at, maxServerArgs)
		case len(s.Secrets) > maxSettingsPerMCP:
			return fmt.Errorf("%s has more than %d secrets", at, maxSettingsPerMCP)
		}
		for k := range s.Env {
			if !envName.MatchString(k) {
				return fmt.Errorf("%s.env: %q is no environment variable name", at, k)
			}
		}
		for k := range s.Headers {
			if !headerNameRe.MatchString(k) {
				return fmt.Errorf("%s.headers: %q is no header name", at, k)
			}
		}
		keys := map[string]bool{}
		for j, sec := range s.Secrets {
			sat := fmt.Sprintf("%s.secrets[%d]", at, j)
			switch {
			case !settingKey.MatchString(sec.Key):
				return fmt.Errorf("%s.key %q must match ^[a-z][a-z0-9_]*$", sat, sec.Key)
			case keys[sec.Key]:
				return fmt.Errorf("%s.key %q is declared twice", sat, sec.Key)
			case s.URL != "" && !headerNameRe.MatchString(sec.Header):
				return fmt.Errorf("%s needs a header name for an HTTP server", sat)
			case s.Command != "" && !envName.MatchString(sec.Env):
				return fmt.Errorf("%s needs an environment variable name for a stdio server", sat)
			}
			keys[sec.Key] = true
		}
	}
	for i, p := range m.SearchProviders {
		if !names[p.Server] {
			return fmt.Errorf("searchProviders[%d].server %q names no server of mcpServers", i, p.Server)
		}
		if strings.TrimSpace(p.Tool) == "" {
			return fmt.Errorf("searchProviders[%d].tool is required", i)
		}
	}
	return nil
}

// checkIcon returns the icon to show: a bundled name or a single SVG path as given, full SVG
// markup refused, anything else the puzzle (document 2).
func checkIcon(icon string) (string, error) {
	trimmed := strings.TrimSpace(icon)
	switch {
	case trimmed == "":
		return DefaultIcon, nil
	case strings.HasPrefix(trimmed, "<"):
		return "", fmt.Errorf("icon must be a bundled name or a single SVG path, not SVG markup")
	case iconName.MatchString(icon):
		return icon, nil
	case len(icon) <= MaxIconPath && iconPath.MatchString(icon) && !strings.ContainsAny(icon, "<>\"'"):
		return icon, nil
	}
	return DefaultIcon, nil
}

// checkRelPath refuses a path that is absolute or leaves the plugin folder.
func checkRelPath(field, p string) error {
	clean := path.Clean(strings.ReplaceAll(p, "\\", "/"))
	if p == "" || strings.HasPrefix(clean, "/") || clean == ".." || strings.HasPrefix(clean, "../") ||
		strings.ContainsRune(p, 0) {
		return fmt.Errorf("%s %q must be a relative path inside the plugin folder", field, p)
	}
	return nil
}

// PackageName is the plugin's package name: the manifest's name, else `local/<slug>` (a plugin
// placed in the plugins directory by hand).
func (m *Manifest) PackageName() string {
	if m.Name != "" {
		return m.Name
	}
	return "local/" + m.Slug
}

// Title is the display name: displayName, else the slug.
func (m *Manifest) Title() string {
	if m.DisplayName != "" {
		return m.DisplayName
	}
	return m.Slug
}
