// Package runtimesettings reads and stores the runtime settings an administrator may change from the
// web application (GET and PATCH /runtime-settings): the keys of the runtime configuration
// that take effect at the next request, without a restart. Stored values are the highest layer
// of the configuration (internal/platform/config: default < file < environment < stored); clearing one
// lets the lower layers apply again.
//
// The mail settings have their own service (internal/domain/mail, /mail-config). Keys needed before
// the database opens, secrets, addresses and paths, and the keys a process reads only at
// start-up are not editable here: a value stored for them would not apply until a restart, or
// could lock the administrator out.
package runtimesettings

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/domain/mail"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/secret"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// Editable is the catalogue of runtime settings, in the order the settings page shows them.
// Each is read from the configuration at every use (the per-request gates, the model driver's
// key, the catalog client), so a stored value applies at the next request.
var Editable = []struct{ Key, Description string }{
	{"allow_registration", "Anyone may create an account on the sign-in page. Administrators can always create users."},
	{"SVC_AGENT_API", "Mounts the per-agent API (/agent-api/*, bearer keys) in server worker mode. Keys stay valid while it is off."},
	{"SVC_AGENT_API_RATE_LIMIT_MAX", "Requests per minute each per-agent API key may make (0: the default of 60)."},
	{"notifications_email_enabled", "Sends an email when a scheduled run completes."},
	{"plugin_catalog_enabled", "Shows the plugin catalog (browse and install from it)."},
	{"plugin_catalog_url", "Address of the plugin catalog index (https; plain http only on a loopback host, for development); empty: no catalog."},
	{"plugin_catalog_public_key", "Ed25519 public key (32 bytes, base64 or hexadecimal) of the catalog's publisher: the catalog is read only with a detached signature (<index URL>.sig) that verifies with it. Empty: unsigned catalogs are accepted."},
	{"plugin_catalog_ttl", "Seconds the catalog is cached on disk before it is read again."},
	{"plugin_install_enabled", "Lets administrators install, update and uninstall plugins from the console."},
	{"llm_timeout", "Seconds a model call may take."},
	{"currency", "Currency of model prices and costs (three capital letters, such as USD or EUR)."},
	{"password_login_enabled", "Offers the password sign-in. Off, only single sign-on providers sign users in (administrators keep the password sign-in as a break-glass path); no effect while no provider is configured."},
	{"oidc_allowed_hosts", "Host names, IP addresses and networks (comma- or space-separated) that single sign-on issuers may be reached at although private."},
	{"llm_allowed_hosts", "Host names, IP addresses and networks (comma- or space-separated) that group model configurations may reach although private (a local Ollama)."},
	{"retention_task_days", "Days a finished chat (completed, failed, cancelled or aborted, with no activity since) is kept before housekeeping deletes it with everything it holds. 0 keeps chats forever."},
	{"retention_task_events_days", "Days the event log of a finished task is kept (what a reconnecting event stream replays); its messages and transcript stay. 0 keeps it forever."},
	{"retention_outbox_days", "Days webhook deliveries and mails that were delivered or given up are kept. 0 keeps them forever."},
	{"retention_notifications_days", "Days a read notification is kept. 0 keeps them forever."},
	{"retention_usage_ledger_days", "Days the per-call usage ledger is kept (the daily totals behind usage reports and budgets stay; a chat's own cost reads the ledger). 0 keeps it forever."},
}

var editable = func() map[string]bool {
	m := make(map[string]bool, len(Editable))
	for _, e := range Editable {
		if !config.Storable(e.Key) || config.Secret(e.Key) || config.TypeOf(e.Key) == "" {
			panic("settings: " + e.Key + " cannot be an editable runtime setting")
		}
		m[e.Key] = true
	}
	return m
}()

// Store is the stored-settings layer (store.Store).
type Store interface {
	Settings(ctx context.Context) (map[string]any, error)
	PutSettings(ctx context.Context, values map[string]any) error
}

// Setting is one editable setting as the settings page shows it.
type Setting struct {
	Key         string
	Type        string // "boolean", "integer" or "string"
	Value       any    // effective: bool, int or string
	Default     any
	Source      config.Source
	Description string
}

// Service reads and stores the editable runtime settings.
type Service struct {
	store Store
	cfg   *config.Loader
	box   *secret.Box // opens the sealed mail password of the stored layer it rebuilds
}

// New returns the service over the settings store and the loader whose stored layer it
// updates.
func New(st Store, cfg *config.Loader, box *secret.Box) *Service {
	return &Service{store: st, cfg: cfg, box: box}
}

// List returns every editable setting with its effective value and source to an
// administrator (by). Errors: ErrForbidden (by is no administrator), ErrUnavailable when the
// configuration cannot be read.
func (s *Service) List(_ context.Context, by *store.User) ([]Setting, error) {
	if err := access.Administrator(by); err != nil {
		return nil, err
	}
	c := s.cfg.Current()
	if c == nil {
		return nil, svcerr.New(svcerr.ErrUnavailable, "the configuration cannot be read")
	}
	d := config.Defaults()
	out := make([]Setting, 0, len(Editable))
	for _, e := range Editable {
		v, _ := c.Value(e.Key)
		def, _ := d.Value(e.Key)
		out = append(out, Setting{Key: e.Key, Type: config.TypeOf(e.Key), Value: v, Default: def,
			Source: s.cfg.SourceOf(e.Key), Description: e.Description})
	}
	return out, nil
}

// Update stores, for an administrator (by), each value of changes (a value of the key's type)
// or removes the stored value of a key mapped to nil, all or nothing: the whole configuration
// is validated with the new stored layer before anything is written, and a failed write
// restores the previous layer. Errors: ErrForbidden (by is no administrator), ErrInvalid (no
// change, a key that is not editable, a wrong type, a value the configuration refuses; nothing
// is stored); uncategorised store failures.
func (s *Service) Update(ctx context.Context, by *store.User, changes map[string]any) ([]Setting, error) {
	if err := access.Administrator(by); err != nil {
		return nil, err
	}
	if len(changes) == 0 {
		return nil, svcerr.New(svcerr.ErrInvalid, "settings must name at least one setting")
	}
	var unknown []string
	for k := range changes {
		if !editable[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, svcerr.New(svcerr.ErrInvalid, "not an editable runtime setting: %s (the mail settings are changed with PUT /mail-config; the others only in the configuration file or the environment)",
			strings.Join(unknown, ", "))
	}
	err := s.cfg.EditStored(func() error {
		raw, err := s.store.Settings(ctx)
		if err != nil {
			return err
		}
		prev, _ := mail.UnsealStored(raw, s.box) // an unopenable password is dropped, as at start-up
		next := make(map[string]any, len(prev)+len(changes))
		for k, v := range prev {
			next[k] = v
		}
		for k, v := range changes {
			if v == nil {
				delete(next, k)
			} else {
				next[k] = v
			}
		}
		if err := s.cfg.SetStored(next); err != nil {
			var ve *config.ValidationError
			if errors.As(err, &ve) {
				return svcerr.New(svcerr.ErrInvalid, "%s", strings.Join(ve.Problems, "; "))
			}
			return err
		}
		if err := s.store.PutSettings(ctx, changes); err != nil {
			if rerr := s.cfg.SetStored(prev); rerr != nil {
				err = errors.Join(err, rerr)
			}
			return fmt.Errorf("store runtime settings: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.List(ctx, by)
}
