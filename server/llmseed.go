package server

import (
	"context"
	"crypto/subtle"
	"fmt"

	"github.com/agentsvc/svc/internal/domain/group"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/store"
)

// Names of what the start-up seed creates (docs/design.md "Model configurations").
const (
	seedGroupName  = "Instance defaults"
	seedConfigName = "Default model"
)

// seedLLMConfig creates, or updates, the global default model configuration from llm_driver,
// llm_model, llm_base_url and llm_api_key (SVC_LLM_*), so a new user is one command away from a
// first chat. Nothing happens unless driver and model are both set. The key is sealed with the
// master key like every configuration's and never logged.
func (a *App) seedLLMConfig(ctx context.Context, cfg *config.Config) error {
	if cfg.LLMDriver == "" || cfg.LLMModel == "" {
		return nil
	}
	seed := store.LLMSeed{GroupName: seedGroupName, Name: seedConfigName, Driver: cfg.LLMDriver, Model: cfg.LLMModel}
	if cfg.LLMBaseURL != "" {
		base := cfg.LLMBaseURL
		seed.BaseURL = &base
	}
	if cfg.LLMAPIKey != "" {
		box := a.Secrets
		var err error
		if seed.APIKeySealed, err = box.Seal([]byte(cfg.LLMAPIKey)); err != nil {
			return fmt.Errorf("seal llm_api_key: %w", err)
		}
		seed.SameKey = func(sealed string) bool {
			key, err := box.Open(sealed)
			return err == nil && subtle.ConstantTimeCompare(key, []byte(cfg.LLMAPIKey)) == 1
		}
	}
	if err := group.CheckLLMSeed(&seed); err != nil {
		return fmt.Errorf("seed the global model configuration from llm_driver and llm_model: %w", err)
	}
	r, err := a.Store.SeedGlobalLLMConfig(ctx, seed)
	if err != nil {
		return fmt.Errorf("seed the global model configuration from llm_driver and llm_model: %w", err)
	}
	outcome := "unchanged"
	switch {
	case r.Created:
		outcome = "created"
	case r.Updated:
		outcome = "updated"
	}
	a.Logger.Info("model configuration seed applied", "outcome", outcome, "config", *r.Config)
	if !r.Config.IsDefault {
		a.Logger.Info("the seeded model configuration is not the global default: another global configuration is",
			"config_id", r.Config.ID)
	}
	return nil
}
