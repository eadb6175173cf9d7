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
// settings within 0 and the INT column's range, the compaction settings (CheckCompaction), metadata a JSON object of at most
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
	if err := CheckCompaction(f); err != nil {
		return err
	}
	if err := CheckApprovals(f.Approvers, f.ApprovalTimeoutSeconds, f.ApprovalTimeoutAction); err != nil {
		return err
	}
	if f.Metadata != nil {
		return checkMetadata(*f.Metadata)
	}
	return nil
}

// CheckCompaction applies the rules of the compaction settings (issue 25): the threshold
// within store.MinCompactionThreshold..store.MaxCompactionThreshold percent, the answer's
// reserve and the tool-result budget at least 0 (0: none) within the INT column, the summary
// model's id at least 0 (0 clears it; whether the agent's owner may use it is the store's check,
// in the transaction that writes it). Errors: ErrInvalid naming the field.
func CheckCompaction(f store.AgentFields) error {
	if v := f.CompactionThresholdPercent; v != nil && (*v < store.MinCompactionThreshold || *v > store.MaxCompactionThreshold) {
		return fieldcheck.Invalidf("compaction_threshold_percent must be between %d and %d", store.MinCompactionThreshold, store.MaxCompactionThreshold)
	}
	if v := f.CompactionAnswerReserve; v != nil && (*v < 0 || *v > store.MaxCompactionAnswerReserve) {
		return fieldcheck.Invalidf("compaction_answer_reserve must be between 0 and %d", store.MaxCompactionAnswerReserve)
	}
	if v := f.ToolResultMaxChars; v != nil && (*v < 0 || *v > store.MaxToolResultChars) {
		return fieldcheck.Invalidf("tool_result_max_chars must be between 0 and %d", store.MaxToolResultChars)
	}
	if v := f.SummaryLLMConfigID; v != nil && *v < 0 {
		return fieldcheck.Invalidf("summary_llm_config_id must be a model configuration's id, or 0 for none")
	}
	return nil
}

// CheckApprovals applies the rules of an agent's approval settings (nil: unchanged): approvers
// name at least one kind of decider, at most store.MaxNamedApprovers users, each once and a
// positive id (that they exist the store checks in the writing transaction); the timeout is 0
// (none) to store.MaxApprovalTimeoutSeconds; the action is reject or abort. Errors: ErrInvalid
// naming the field.
func CheckApprovals(a *store.Approvers, timeout *int, action *string) error {
	if a != nil {
		if !a.Owner && !a.Managers && len(a.Users) == 0 {
			return fieldcheck.Invalidf("approvers must name at least one decider (owner, managers or user_ids)")
		}
		if len(a.Users) > store.MaxNamedApprovers {
			return fieldcheck.Invalidf("approvers.user_ids holds at most %d users", store.MaxNamedApprovers)
		}
		seen := map[int64]bool{}
		for _, id := range a.Users {
			if id < 1 || seen[id] {
				return fieldcheck.Invalidf("approvers.user_ids must hold distinct positive user ids")
			}
			seen[id] = true
		}
	}
	if timeout != nil && (*timeout < 0 || *timeout > store.MaxApprovalTimeoutSeconds) {
		return fieldcheck.Invalidf("approval_timeout_seconds must be between 0 and %d", store.MaxApprovalTimeoutSeconds)
	}
	if action != nil && *action != store.ApprovalTimeoutReject && *action != store.ApprovalTimeoutAbort {
		return fieldcheck.Invalidf("approval_timeout_action must be reject or abort")
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
