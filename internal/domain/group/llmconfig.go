package group

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// LLMConfigInput is a new model configuration. APIKey is the plaintext key (nil or empty: none);
// it is sealed before it reaches the store and never returned.
type LLMConfigInput struct {
	Name            string
	Driver          string
	Model           string
	BaseURL         *string
	APIKey          *string
	Temperature     *float64
	MaxTokensOutput *int
	ContextWindow   *int
	Timeout         *int
	IsDefault       bool
	IsGlobal        bool
	Prices          store.LLMPrices
}

// LLMConfigPatch lists the fields to change; nil fields keep their value and Clear names
// optional fields to reset (store.LLMField*). APIKey is the plaintext of a new key.
type LLMConfigPatch struct {
	Name            *string
	Driver          *string
	Model           *string
	BaseURL         *string
	APIKey          *string
	Temperature     *float64
	MaxTokensOutput *int
	ContextWindow   *int
	Timeout         *int
	IsDefault       *bool
	IsGlobal        *bool
	Prices          *store.LLMPrices // replaces the three prices
	Clear           []string
}

// LLMConfigs lists the group's model configurations and, with includeGlobal, the global ones
// of other groups (members and administrators). The results carry the sealed key; callers must
// not show it. Errors: ErrNotFound.
func (s *Service) LLMConfigs(ctx context.Context, u *store.User, id int64, includeGlobal bool) ([]store.LLMConfig, error) {
	if _, _, err := s.visible(ctx, u, id); err != nil {
		return nil, err
	}
	return s.store.ListLLMConfigs(ctx, id, includeGlobal)
}

// seal encrypts an API key for storage. The error never contains the key.
func (s *Service) seal(key string) (string, error) {
	if err := checkAPIKey(key); err != nil {
		return "", err
	}
	if s.box == nil {
		return "", errors.New("group: no secret box to seal the api key")
	}
	sealed, err := s.box.Seal([]byte(key))
	if err != nil {
		return "", fmt.Errorf("seal api key: %w", err)
	}
	return sealed, nil
}

// needsAdmin reports whether a configuration in this state is the administrators' to change:
// global configurations are usable by everyone, and the scripted driver reads a file of the
// server.
func needsAdmin(c *store.LLMConfig) bool {
	return c != nil && (c.IsGlobal || c.Driver == store.LLMDriverScripted)
}

// screenedURL returns the base URL to screen before next is stored: that of a group
// (non-global) configuration of an HTTP driver, when it is new, changed, or was trusted before
// (global or scripted); "" when nothing needs screening.
func screenedURL(cur, next *store.LLMConfig) string {
	if next.IsGlobal || next.Driver == store.LLMDriverScripted || next.BaseURL == nil {
		return ""
	}
	if cur != nil && !needsAdmin(cur) && cur.BaseURL != nil && *cur.BaseURL == *next.BaseURL {
		return ""
	}
	return *next.BaseURL
}

// LLMNet returns the screen of group model configurations' base URLs: base (the service's
// outbound options) with the hosts of llm_allowed_hosts (allowedHosts, validated with the
// configuration) exempt. Requests to such an endpoint go through netguard.GuardedTransport
// with these options too, so a name that resolves elsewhere later is refused at dial time.
func LLMNet(base netguard.Options, allowedHosts string) netguard.Options {
	base.Exempt, _ = netguard.ParseHostList(allowedHosts)
	base.RequireHTTPS = false
	return base
}

// screenBaseURL screens a group configuration's base URL with netguard (public addresses and
// llm_allowed_hosts only). Errors: ErrInvalid naming base_url.
func (s *Service) screenBaseURL(ctx context.Context, raw string) error {
	if s.llmNet == nil {
		return nil
	}
	if _, err := netguard.CheckURL(ctx, raw, s.llmNet()); err != nil {
		return svcerr.New(svcerr.ErrInvalid, "base_url: %s; group model configurations reach public addresses and the hosts of the setting llm_allowed_hosts only", err.Error())
	}
	return nil
}

// errScreen aborts an update whose new base URL has not been screened yet.
var errScreen = errors.New("group: base_url needs screening")

// CreateLLMConfig adds a model configuration to the group (owners, admins, administrators).
// is_global and the scripted driver need the administrator flag. Errors: ErrNotFound,
// ErrForbidden, ErrInvalid (field rules: CheckLLMConfig, after the permission, the base URL
// screen and the key), ErrConflict (name taken in the group).
func (s *Service) CreateLLMConfig(ctx context.Context, u *store.User, id int64, in LLMConfigInput) (*store.LLMConfig, error) {
	sc, _, err := s.managed(ctx, u, id)
	if err != nil {
		return nil, err
	}
	c := store.LLMConfig{
		Name: in.Name, Driver: in.Driver, Model: in.Model, BaseURL: in.BaseURL, Temperature: in.Temperature,
		MaxTokensOutput: in.MaxTokensOutput, ContextWindow: in.ContextWindow, Timeout: in.Timeout,
		IsDefault: in.IsDefault, IsGlobal: in.IsGlobal, Prices: in.Prices,
	}
	if !sc.Admin && needsAdmin(&c) {
		return nil, forbidden("global configurations and the scripted driver need administrator rights")
	}
	if u := screenedURL(nil, &c); u != "" {
		if err := s.screenBaseURL(ctx, u); err != nil {
			return nil, err
		}
	}
	if in.APIKey != nil && *in.APIKey != "" {
		if c.APIKeySealed, err = s.seal(*in.APIKey); err != nil {
			return nil, err
		}
	}
	if err := CheckLLMConfig(&c); err != nil {
		return nil, err
	}
	return s.store.CreateLLMConfig(ctx, id, c)
}

// UpdateLLMConfig changes a configuration of the group (owners, admins, administrators); a
// global or scripted configuration, before or after the change, needs the administrator flag.
// Errors: ErrNotFound (group or configuration), ErrForbidden, ErrInvalid (a field both set and
// cleared, checked first; the field rules on the result, CheckLLMConfig in the store's check),
// ErrConflict (name taken in the group).
func (s *Service) UpdateLLMConfig(ctx context.Context, u *store.User, id, cid int64, p LLMConfigPatch) (*store.LLMConfig, error) {
	sc, _, err := s.managed(ctx, u, id)
	if err != nil {
		return nil, err
	}
	upd := store.LLMConfigUpdate{
		Name: p.Name, Driver: p.Driver, Model: p.Model, BaseURL: p.BaseURL, Temperature: p.Temperature,
		MaxTokensOutput: p.MaxTokensOutput, ContextWindow: p.ContextWindow, Timeout: p.Timeout,
		IsDefault: p.IsDefault, IsGlobal: p.IsGlobal, Prices: p.Prices, Clear: p.Clear,
	}
	if p.APIKey != nil {
		sealed, err := s.seal(*p.APIKey)
		if err != nil {
			return nil, err
		}
		upd.APIKeySealed = &sealed
	}
	if err := checkLLMClear(upd); err != nil {
		return nil, err
	}
	// The base URL the update leads to is known inside the store's transaction only: a first
	// attempt stops there when it needs screening, the URL is screened outside the transaction
	// (it resolves the host), and a second attempt stores it if it is still the one screened.
	screened, pending := "", ""
	check := func(cur, next *store.LLMConfig) error {
		if !sc.Admin && (needsAdmin(cur) || needsAdmin(next)) {
			return forbidden("global configurations and the scripted driver need administrator rights")
		}
		if u := screenedURL(cur, next); s.llmNet != nil && u != "" && u != screened {
			pending = u
			return errScreen
		}
		return CheckLLMConfig(next) // the result of the update is known only here
	}
	c, err := s.store.UpdateLLMConfig(ctx, id, cid, upd, check)
	if !errors.Is(err, errScreen) {
		return c, err
	}
	if err := s.screenBaseURL(ctx, pending); err != nil {
		return nil, err
	}
	screened = pending
	c, err = s.store.UpdateLLMConfig(ctx, id, cid, upd, check)
	if errors.Is(err, errScreen) {
		return nil, svcerr.New(svcerr.ErrInvalidState, "the model configuration changed during the update; try again")
	}
	return c, err
}

// adminForGlobal refuses non-administrators a global configuration.
func adminForGlobal(admin bool) store.LLMConfigCheck {
	return func(cur, _ *store.LLMConfig) error {
		if cur.IsGlobal && !admin {
			return forbidden("global configurations need administrator rights")
		}
		return nil
	}
}

// DeleteLLMConfig removes a configuration of the group (owners, admins, administrators; a global
// one needs the administrator flag). Errors: ErrNotFound, ErrForbidden.
func (s *Service) DeleteLLMConfig(ctx context.Context, u *store.User, id, cid int64) error {
	sc, _, err := s.managed(ctx, u, id)
	if err != nil {
		return err
	}
	return s.store.DeleteLLMConfig(ctx, id, cid, adminForGlobal(sc.Admin))
}

// SetDefaultLLMConfig makes a configuration the default of its scope (owners, admins,
// administrators; a global one, which becomes the installation-wide default, needs the
// administrator flag). Idempotent. Errors: ErrNotFound, ErrForbidden.
func (s *Service) SetDefaultLLMConfig(ctx context.Context, u *store.User, id, cid int64) (*store.LLMConfig, error) {
	sc, _, err := s.managed(ctx, u, id)
	if err != nil {
		return nil, err
	}
	return s.store.SetDefaultLLMConfig(ctx, id, cid, adminForGlobal(sc.Admin))
}

// LLMConfigToTest returns a configuration of the group for a test call, which spends the
// configuration's key: the group's owners and admins and administrators; a global or scripted
// configuration needs the administrator flag. Errors: ErrNotFound, ErrForbidden.
func (s *Service) LLMConfigToTest(ctx context.Context, u *store.User, id, cid int64) (*store.LLMConfig, error) {
	sc, _, err := s.managed(ctx, u, id)
	if err != nil {
		return nil, err
	}
	c, err := s.store.LLMConfig(ctx, id, cid)
	if err != nil {
		return nil, err
	}
	if !sc.Admin && needsAdmin(c) {
		return nil, forbidden("testing a global or scripted configuration needs administrator rights")
	}
	return c, nil
}

// ResolvedLLMConfig returns the configuration the tasks of an agent owned by principal run
// with (the group's default, else the global default; principal nil: the global default) and
// whether it is the group's, or nil when none resolves. The caller has checked that the user
// may see the agent. Errors: the store's.
func (s *Service) ResolvedLLMConfig(ctx context.Context, principal *int64) (*store.LLMConfig, bool, error) {
	c, err := s.store.ResolveLLMConfig(ctx, principal)
	if errors.Is(err, svcerr.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return c, !c.IsGlobal, nil
}
