package agent

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/agentsvc/svc/internal/vocab/fieldcheck"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/store"
)

// CheckFields applies the field rules of an agent to f, the fields of a create (create: the
// name is required) or of an update (nil fields are unchanged and not checked): name not
// blank, the text fields valid UTF-8 within their column limits (store.MaxAgent…Len),
// max_steps within limits.MinSteps..limits.MaxSteps (document 1), the retry
// settings within 0 and the INT column's range, metadata a JSON object of at most
// store.MaxAgentMetadataLen bytes. Every service that writes agent fields (this one, the
// template import, the agent tool) calls it before the store, so a refused request writes
// nothing. Errors: ErrInvalid naming the field.
func CheckFields(f store.AgentFields, create bool) error {
	if create && f.Name == nil {
		return fieldcheck.Invalidf("name is required")
	}
	if f.Name != nil {
		if strings.TrimSpace(*f.Name) == "" {
			return fieldcheck.Invalidf("name is required")
		}
		if err := fieldcheck.Text("name", *f.Name, limits.AgentNameLen); err != nil {
			return err
		}
	}
	for _, t := range []struct {
		field string
		v     *string
		max   int
	}{
		{"description", f.Description, limits.AgentDescriptionLen},
		{"system_prompt", f.SystemPrompt, store.MaxAgentSystemPromptLen},
		{"notes", f.Notes, limits.AgentNotesLen},
	} {
		if t.v == nil {
			continue
		}
		if err := fieldcheck.Text(t.field, *t.v, t.max); err != nil {
			return err
		}
	}
	if f.MaxSteps != nil {
		if err := CheckMaxSteps("max_steps", *f.MaxSteps); err != nil {
			return err
		}
	}
	if f.RetryAfterMinutes != nil && (*f.RetryAfterMinutes < 0 || *f.RetryAfterMinutes > store.MaxAgentRetryAfterMinute) {
		return fieldcheck.Invalidf("retry_after_minutes must be between 0 and %d", store.MaxAgentRetryAfterMinute)
	}
	if f.MaxRetries != nil && (*f.MaxRetries < 0 || *f.MaxRetries > store.MaxAgentRetries) {
		return fieldcheck.Invalidf("max_retries must be between 0 and %d", store.MaxAgentRetries)
	}
	if f.Metadata != nil {
		return checkMetadata(*f.Metadata)
	}
	return nil
}

// CheckMaxSteps applies the step budget rule of document 1 (limits.MinSteps to
// limits.MaxSteps) to n, the value of field: an agent's max_steps and the overrides of
// prompt templates and scheduled runs. Errors: ErrInvalid naming the field.
func CheckMaxSteps(field string, n int) error {
	if n < limits.MinSteps || n > limits.MaxSteps {
		return fieldcheck.Invalidf("%s must be between %d and %d", field, limits.MinSteps, limits.MaxSteps)
	}
	return nil
}

// checkMetadata encodes md as the store does (compact, HTML not escaped) and bounds it.
func checkMetadata(md map[string]any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(md); err != nil {
		return fieldcheck.Invalidf("metadata must be a JSON object")
	}
	s := strings.TrimSuffix(buf.String(), "\n")
	if len(s) > store.MaxAgentMetadataLen {
		return fieldcheck.Invalidf("metadata must be at most %d bytes of JSON", store.MaxAgentMetadataLen)
	}
	return fieldcheck.Text("metadata", s, store.MaxAgentMetadataLen)
}
