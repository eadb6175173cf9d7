package group

import (
	"context"
	"errors"
	"fmt"

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

// CreateLLMConfig adds a model configuration to the group (owners, admins, administrators).
// is_global and the scripted driver need the administrator flag. Errors: ErrNotFound,
// ErrForbidden, ErrInvalid (field rules), ErrConflict (name taken in the group).
func (s *Service) CreateLLMConfig(ctx context.Context, u *store.User, id int64, in LLMConfigInput) (*store.LLMConfig, error) {
	sc, _, err := s.managed(ctx, u, id)
	if err != nil {
		return nil, err
	}
	c := store.LLMConfig{
		Name: in.Name, Driver: in.Driver, Model: in.Model, BaseURL: in.BaseURL, Temperature: in.Temperature,
		MaxTokensOutput: in.MaxTokensOutput, ContextWindow: in.ContextWindow, Timeout: in.Timeout,
		IsDefault: in.IsDefault, IsGlobal: in.IsGlobal,
	}
	if !sc.Admin && needsAdmin(&c) {
		return nil, forbidden("global configurations and the scripted driver need administrator rights")
	}
	if in.APIKey != nil && *in.APIKey != "" {
		if c.APIKeySealed, err = s.seal(*in.APIKey); err != nil {
			return nil, err
		}
	}
	return s.store.CreateLLMConfig(ctx, id, c)
}

// UpdateLLMConfig changes a configuration of the group (owners, admins, administrators); a
// global or scripted configuration, before or after the change, needs the administrator flag.
// Errors: ErrNotFound (group or configuration), ErrForbidden, ErrInvalid (field rules, a field
// both set and cleared), ErrConflict (name taken in the group).
func (s *Service) UpdateLLMConfig(ctx context.Context, u *store.User, id, cid int64, p LLMConfigPatch) (*store.LLMConfig, error) {
	sc, _, err := s.managed(ctx, u, id)
	if err != nil {
		return nil, err
	}
	upd := store.LLMConfigUpdate{
		Name: p.Name, Driver: p.Driver, Model: p.Model, BaseURL: p.BaseURL, Temperature: p.Temperature,
		MaxTokensOutput: p.MaxTokensOutput, ContextWindow: p.ContextWindow, Timeout: p.Timeout,
		IsDefault: p.IsDefault, IsGlobal: p.IsGlobal, Clear: p.Clear,
	}
	if p.APIKey != nil {
		sealed, err := s.seal(*p.APIKey)
		if err != nil {
			return nil, err
		}
		upd.APIKeySealed = &sealed
	}
	return s.store.UpdateLLMConfig(ctx, id, cid, upd, func(cur, next *store.LLMConfig) error {
		if !sc.Admin && (needsAdmin(cur) || needsAdmin(next)) {
			return forbidden("global configurations and the scripted driver need administrator rights")
		}
		return nil
	})
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
