// Package mcp turns the tools of MCP (Model Context Protocol) servers into registered agent
// tools. A plugin (or an administrator) declares servers, each a stdio command or a streamable
// HTTP URL; a Manager connects to them lazily with the official Go SDK, registers one tool per MCP
// tool in a tools.Registry under the plugin's slug, keeps that list current (the server's
// notifications/tools/list_changed and a periodic refresh), and runs the calls the agent loop
// hands to those tools.
//
// Why a Manager and not one client per tool: servers are processes or remote sessions that are
// expensive to start and may die; the Manager owns their lifecycle (start on first need, restart
// after a crash, stop on Close) so tools stay plain values. Secrets (a token for the server) come
// per call from the settings cascade, so one server may run as several connections, one per
// distinct set of secret values.
package mcp

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/tools"
)

// ServerConfig declares one MCP server: either a stdio command (Command, Args, Env, Dir) or a
// streamable HTTP endpoint (URL, Headers), never both.
type ServerConfig struct {
	// Slug is the contributing plugin's slug; the server's tools are registered under it and
	// reach the model as `<slug>:<name>`.
	Slug string
	// Name names the server within its plugin (unique per slug). It is part of every tool name
	// (`<name>_<tool>`, sanitised), so renaming a server renames its tools.
	Name string

	// Command is the executable of a stdio server, Args its arguments.
	Command string
	Args    []string
	// Env is added to the process environment. The service's own environment is not inherited
	// (its SVC_* settings may hold secrets); only PATH, LANG and LC_ALL are passed on, and HOME
	// and TMPDIR name the server's private folder. The process still runs as the service's
	// user: see process.go for what it can reach.
	Env map[string]string
	// Dir is the working directory of the process (the plugin folder); empty means the server's
	// private folder, never the service's working directory.
	Dir string

	// URL is the endpoint of a streamable HTTP server (http or https).
	URL string
	// Headers are sent with every HTTP request (static values; secrets go in Secrets).
	Headers map[string]string

	// RequireApproval says whether calls need the user's approval by default; nil means true
	// (an MCP tool can do anything, and its declaration cannot say what).
	RequireApproval *bool
	// Secrets are password-typed tool settings whose values are handed to the server.
	Secrets []SecretDecl
}

// SecretDecl is a password setting of every tool of a server, and how its value reaches the
// server: as an HTTP header (default `Authorization: Bearer <value>`) or an environment variable
// of the process (default the key upper-cased).
type SecretDecl struct {
	// Key is the setting key (`^[a-z][a-z0-9_]*$`), for example "token".
	Key         string
	Label       string
	Description string
	// Required makes the tool not ready to enable until a value is set in the cascade.
	Required bool
	// Header names the HTTP header carrying the value as is; empty sends it as a bearer token in
	// Authorization.
	Header string
	// Env names the environment variable of a stdio server; empty means strings.ToUpper(Key).
	Env string
}

var (
	slugPattern    = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	keyPattern     = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	envPattern     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerPattern  = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	maxServerName  = 48
	reservedHeader = map[string]bool{"content-type": true, "accept": true, "mcp-session-id": true, "mcp-protocol-version": true, "host": true, "content-length": true}
)

// approval returns whether calls need approval by default.
func (c ServerConfig) approval() bool { return c.RequireApproval == nil || *c.RequireApproval }

// id identifies the server in logs and connection keys.
func (c ServerConfig) id() string { return c.Slug + "/" + c.Name }

// isHTTP reports a streamable HTTP server.
func (c ServerConfig) isHTTP() bool { return c.URL != "" }

// Validate checks a declaration. It returns nil or an error wrapping svcerr.ErrInvalid that
// names the server and the broken rule; it does no I/O (the URL is screened when connecting).
func (c ServerConfig) Validate() error {
	if msg := c.validate(); msg != "" {
		return svcerr.New(svcerr.ErrInvalid, "mcp server %q of plugin %q: %s", c.Name, c.Slug, msg)
	}
	return nil
}

func (c ServerConfig) validate() string {
	if !slugPattern.MatchString(c.Slug) || c.Slug == tools.CoreSource {
		return fmt.Sprintf("invalid plugin slug (must match %s and not be %q)", slugPattern, tools.CoreSource)
	}
	if strings.TrimSpace(c.Name) == "" || len(c.Name) > maxServerName {
		return fmt.Sprintf("the server name must be 1 to %d characters", maxServerName)
	}
	if sanitize(c.Name) == "" {
		return "the server name needs at least one letter or digit"
	}
	switch {
	case c.Command != "" && c.URL != "":
		return "declare either a command or a URL, not both"
	case c.Command == "" && c.URL == "":
		return "declare a command (stdio) or a URL (streamable HTTP)"
	case c.Command != "":
		if len(c.Headers) > 0 {
			return "headers apply to HTTP servers only"
		}
		for k := range c.Env {
			if !envPattern.MatchString(k) {
				return fmt.Sprintf("invalid environment variable name %q", k)
			}
		}
	default:
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return "the URL must be an absolute http or https URL without user information"
		}
		if len(c.Args) > 0 || len(c.Env) > 0 || c.Dir != "" {
			return "args, env and dir apply to stdio servers only"
		}
		for k, v := range c.Headers {
			if !headerPattern.MatchString(k) || reservedHeader[strings.ToLower(k)] {
				return fmt.Sprintf("invalid or reserved header name %q", k)
			}
			if strings.ContainsAny(v, "\r\n") {
				return fmt.Sprintf("header %q: the value contains a line break", k)
			}
		}
	}
	seen := map[string]bool{}
	for _, s := range c.Secrets {
		if !keyPattern.MatchString(s.Key) || len(s.Key) > 64 {
			return fmt.Sprintf("invalid secret key %q (must match %s)", s.Key, keyPattern)
		}
		if seen[s.Key] {
			return fmt.Sprintf("secret %q declared twice", s.Key)
		}
		seen[s.Key] = true
		if s.Header != "" && (!headerPattern.MatchString(s.Header) || reservedHeader[strings.ToLower(s.Header)]) {
			return fmt.Sprintf("secret %q: invalid or reserved header name %q", s.Key, s.Header)
		}
		if s.Env != "" && !envPattern.MatchString(s.Env) {
			return fmt.Sprintf("secret %q: invalid environment variable name %q", s.Key, s.Env)
		}
		if c.isHTTP() && s.Env != "" {
			return fmt.Sprintf("secret %q: env applies to stdio servers only", s.Key)
		}
		if !c.isHTTP() && s.Header != "" {
			return fmt.Sprintf("secret %q: header applies to HTTP servers only", s.Key)
		}
	}
	return ""
}

// settings are the tool settings every tool of the server declares: its secrets, as passwords.
func (c ServerConfig) settings() []tools.Setting {
	out := make([]tools.Setting, 0, len(c.Secrets))
	for _, s := range c.Secrets {
		label := s.Label
		if label == "" {
			label = s.Key
		}
		out = append(out, tools.Setting{Key: s.Key, Label: label, Description: s.Description,
			Type: tools.SettingPassword, Required: s.Required})
	}
	return out
}

// secretValues picks the declared secrets out of a call's effective settings; empty values are
// left out (an unset secret is not sent).
func (c ServerConfig) secretValues(settings map[string]any) map[string]string {
	out := map[string]string{}
	for _, s := range c.Secrets {
		if v, ok := settings[s.Key].(string); ok && v != "" {
			out[s.Key] = v
		}
	}
	return out
}

func (s SecretDecl) envName() string {
	if s.Env != "" {
		return s.Env
	}
	return strings.ToUpper(s.Key)
}
