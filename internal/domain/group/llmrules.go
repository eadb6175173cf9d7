package group

import (
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentsvc/svc/internal/vocab/fieldcheck"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/store"
)

// ValidLLMDriver reports whether d names a model driver (store.LLMDriver*).
func ValidLLMDriver(d string) bool {
	switch d {
	case store.LLMDriverOpenAI, store.LLMDriverAnthropic, store.LLMDriverScripted:
		return true
	}
	return false
}

// CheckLLMConfig applies the field rules of a model configuration to c, a new configuration or
// the result of an update (the same rules hold for both), and trims its name and model in
// place: name and model not empty and within limits.LLMConfigNameLen and limits.LLMModelLen
// characters, a known driver, the base URL by driver (checkBaseURL), the sealed key within
// store.MaxLLMSealedKeyLen bytes, temperature and the integer settings within their ranges.
// Errors: ErrInvalid naming the field.
func CheckLLMConfig(c *store.LLMConfig) error {
	c.Name = strings.TrimSpace(c.Name)
	if c.Name == "" {
		return fieldcheck.Invalidf("name must not be empty")
	}
	if err := fieldcheck.Text("name", c.Name, limits.LLMConfigNameLen); err != nil {
		return err
	}
	if !ValidLLMDriver(c.Driver) {
		return fieldcheck.Invalidf("driver must be openai, anthropic or scripted")
	}
	c.Model = strings.TrimSpace(c.Model)
	if c.Model == "" {
		return fieldcheck.Invalidf("model must not be empty")
	}
	if err := fieldcheck.Text("model", c.Model, limits.LLMModelLen); err != nil {
		return err
	}
	if err := checkBaseURL(c.Driver, c.BaseURL); err != nil {
		return err
	}
	if len(c.APIKeySealed) > store.MaxLLMSealedKeyLen {
		return fieldcheck.Invalidf("the sealed api_key is too long")
	}
	if t := c.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > limits.MaxLLMTemperature) {
		return fieldcheck.Invalidf("temperature must be between 0 and %d", limits.MaxLLMTemperature)
	}
	for _, f := range []struct {
		name string
		v    *int
		max  int
	}{
		{store.LLMFieldMaxTokensOutput, c.MaxTokensOutput, limits.MaxLLMTokensOutput},
		{store.LLMFieldContextWindow, c.ContextWindow, limits.MaxLLMContextWindow},
		{store.LLMFieldTimeout, c.Timeout, limits.MaxLLMTimeoutSeconds},
	} {
		if f.v != nil && (*f.v < 1 || *f.v > f.max) {
			return fieldcheck.Invalidf("%s must be between 1 and %d", f.name, f.max)
		}
	}
	for _, f := range []struct {
		name string
		v    *int64
	}{{"prices.input", c.Prices.Input}, {"prices.output", c.Prices.Output}, {"prices.cached_input", c.Prices.CachedInput}} {
		if f.v != nil && (*f.v < 0 || *f.v > limits.MaxLLMPriceMicros) {
			return fieldcheck.Invalidf("%s must be between 0 and %d micro-units per million tokens", f.name, limits.MaxLLMPriceMicros)
		}
	}
	return nil
}

// checkBaseURL: the openai and anthropic drivers take an absolute http(s) URL without
// credentials (nil means the driver default); the scripted driver needs the script's path,
// relative to the working directory and inside it.
func checkBaseURL(driver string, base *string) error {
	if base == nil {
		if driver == store.LLMDriverScripted {
			return fieldcheck.Invalidf("base_url (the script path) is required for the scripted driver")
		}
		return nil
	}
	v := *base
	if v == "" {
		return fieldcheck.Invalidf("base_url must not be empty (clear it to use the driver default)")
	}
	if err := fieldcheck.Text("base_url", v, limits.URLLen); err != nil {
		return err
	}
	if driver == store.LLMDriverScripted {
		if strings.Contains(v, "://") || !filepath.IsLocal(v) {
			return fieldcheck.Invalidf("base_url of the scripted driver must be a relative path inside the working directory")
		}
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return fieldcheck.Invalidf("base_url must be an absolute http or https URL")
	}
	if u.User != nil {
		return fieldcheck.Invalidf("base_url must not contain credentials (use api_key)")
	}
	if u.Fragment != "" || strings.Contains(v, "#") {
		return fieldcheck.Invalidf("base_url must not contain a fragment")
	}
	return nil
}

var llmClearable = []string{store.LLMFieldAPIKey, store.LLMFieldBaseURL, store.LLMFieldTemperature,
	store.LLMFieldMaxTokensOutput, store.LLMFieldContextWindow, store.LLMFieldTimeout, store.LLMFieldPrices}

// checkLLMClear refuses an unknown field in upd.Clear and a field both set and cleared.
// Errors: ErrInvalid.
func checkLLMClear(upd store.LLMConfigUpdate) error {
	set := map[string]bool{
		store.LLMFieldAPIKey: upd.APIKeySealed != nil, store.LLMFieldBaseURL: upd.BaseURL != nil,
		store.LLMFieldTemperature: upd.Temperature != nil, store.LLMFieldMaxTokensOutput: upd.MaxTokensOutput != nil,
		store.LLMFieldContextWindow: upd.ContextWindow != nil, store.LLMFieldTimeout: upd.Timeout != nil,
		store.LLMFieldPrices: upd.Prices != nil,
	}
	for _, f := range upd.Clear {
		if !slices.Contains(llmClearable, f) {
			return fieldcheck.Invalidf("clear: %q is not an optional field", f)
		}
		if set[f] {
			return fieldcheck.Invalidf("%s is both set and cleared", f)
		}
	}
	return nil
}

// CheckLLMSeed applies the rules of a configuration (CheckLLMConfig) and of a group name
// (NormName) to the start-up seed, trimming its names and model in place, before
// store.SeedGlobalLLMConfig. Errors: ErrInvalid naming the field.
func CheckLLMSeed(seed *store.LLMSeed) error {
	c := store.LLMConfig{Name: seed.Name, Driver: seed.Driver, Model: seed.Model, BaseURL: seed.BaseURL,
		APIKeySealed: seed.APIKeySealed, IsGlobal: true}
	if err := CheckLLMConfig(&c); err != nil {
		return err
	}
	g, err := NormName(seed.GroupName)
	if err != nil {
		return err
	}
	seed.Name, seed.Model, seed.GroupName = c.Name, c.Model, g
	return nil
}
