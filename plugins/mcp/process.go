package mcp

import (
	"fmt"
	"os"
	"os/exec"
	"sort"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// What a stdio server gets from the service, and what it does not (docs/architecture.md,
// "What a stdio MCP server can reach"): its standard input, output and error and no other file
// descriptor (os/exec passes only those and the descriptors without close-on-exec; Go opens its
// own with it, and markCloseOnExec sets it on those the service inherited), a private
// folder as HOME and TMPDIR (and as working directory when the declaration names none, never
// the service's), and an environment of PATH, LANG and LC_ALL from the service plus what the
// declaration and its secrets add. It runs as the service's user: the platform gives no
// unprivileged way to take files away from a child of the same user, so the service's storage
// stays readable to it.

// passedEnv are the variables of the service's environment a stdio server inherits: enough to
// find programs and to speak the locale; nothing that could hold the service's own settings
// (SVC_*), a secret or the path of one.
var passedEnv = []string{"PATH", "LANG", "LC_ALL", "SYSTEMROOT"}

// command builds the process of a stdio server. Errors: those of privateDir.
func (m *Manager) command(srv *server, secrets map[string]string) (*exec.Cmd, error) {
	cfg := srv.cfg
	home, err := srv.privateDir()
	if err != nil {
		return nil, err
	}
	markCloseOnExec() // at every start: a library (cgo) may have opened one without since
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = cfg.Dir
	if cmd.Dir == "" {
		cmd.Dir = home
	}
	cmd.Env = processEnv(cfg, home, secrets)
	cmd.Stderr = &stderrLog{log: m.log, server: cfg.id()}
	cmd.ExtraFiles = nil // stdin, stdout and stderr only
	return cmd, nil
}

// privateDir makes (once) the server's own folder, readable by the service's user only. Errors:
// svcerr.ErrUnavailable for a removed server (a call that was under way when its plugin left)
// or a folder that cannot be made.
func (s *server) privateDir() (string, error) {
	s.homeMu.Lock()
	defer s.homeMu.Unlock()
	switch {
	case s.removed:
		return "", svcerr.New(svcerr.ErrUnavailable, "mcp server %s was removed", s.cfg.id())
	case s.home == "":
		home, err := os.MkdirTemp("", "svc-mcp-"+s.cfg.Slug+"-")
		if err != nil {
			return "", fmt.Errorf("mcp server %s: %w: private folder: %w", s.cfg.id(), svcerr.ErrUnavailable, err)
		}
		s.home = home
	}
	return s.home, nil
}

// removeHome deletes the server's private folder, if it was made; no process of the server
// starts after it.
func (m *Manager) removeHome(s *server) {
	s.homeMu.Lock()
	defer s.homeMu.Unlock()
	s.removed = true
	if s.home == "" {
		return
	}
	if err := os.RemoveAll(s.home); err != nil {
		m.log.Warn("mcp server folder not removed", "server", s.cfg.id(), "err", err)
	}
}

// processEnv is the environment of a stdio server: passedEnv, HOME and TMPDIR set to its private
// folder, the declared variables, then its secrets.
func processEnv(cfg ServerConfig, home string, secrets map[string]string) []string {
	var env []string
	for _, k := range passedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	env = append(env, "HOME="+home, "TMPDIR="+home)
	keys := make([]string, 0, len(cfg.Env))
	for k := range cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+cfg.Env[k])
	}
	for _, s := range cfg.Secrets {
		if v, ok := secrets[s.Key]; ok {
			env = append(env, s.envName()+"="+v)
		}
	}
	return env
}
