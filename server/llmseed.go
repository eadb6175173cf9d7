package server

import (
	"context"
	"crypto/subtle"
	"fmt"

	"github.com/agentsvc/svc/config"
	"github.com/agentsvc/svc/secret"
	"github.com/agentsvc/svc/store"
)

// Names of what the start-up seed creates (DESIGN.md §3 "Model configurations").
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
		box, err := secret.NewBox(a.MasterKey)
		if err != nil {
			return err
		}
		if seed.APIKeySealed, err = box.Seal([]byte(cfg.LLMAPIKey)); err != nil {
			return fmt.Errorf("seal llm_api_key: %w", err)
		}
		seed.SameKey = func(sealed string) bool {
			key, err := box.Open(sealed)
			return err == nil && subtle.ConstantTimeCompare(key, []byte(cfg.LLMAPIKey)) == 1
		}
	}
	r, err := a.Store.SeedGlobalLLMConfig(ctx, seed)
	if err != nil {
		return fmt.Errorf("seed the global model configuration from llm_driver and llm_model: %w", err)
	}
	switch {
	case r.Created:
		a.Log.Info("seeded the global model configuration", "config", *r.Config)
	case r.Updated:
		a.Log.Info("updated the seeded global model configuration", "config", *r.Config)
	}
	if !r.Config.IsDefault {
		a.Log.Info("the seeded model configuration is not the global default: another global configuration is",
			"config_id", r.Config.ID)
	}
	return nil
}
