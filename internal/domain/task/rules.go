package task

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"

	"github.com/agentsvc/svc/internal/vocab/fieldcheck"
	"github.com/agentsvc/svc/store"
)

// The task aggregate's rules on what a caller writes (a new task, a follow-up, decisions,
// answers), checked before the store call so a refused request writes nothing. The store keeps
// what only its transaction knows (the task's status under lock, which calls and batches are
// still pending, whether a media asset is still there) and guards the rows the agent loop
// builds itself (messages, tool calls, outcomes).

// CheckPrompt applies the rule of a task's prompt: not blank, valid UTF-8 of at most
// store.MaxTaskPromptLen characters. Errors: ErrInvalid naming "prompt".
func CheckPrompt(prompt string) error {
	if strings.TrimSpace(prompt) == "" {
		return fieldcheck.Invalidf("prompt is required")
	}
	return fieldcheck.Text("prompt", prompt, store.MaxTaskPromptLen)
}

// CheckNew applies the rules of a new task to nt: the prompt (CheckPrompt), max_steps at least 1
// (and within the column), the source (empty means store.TaskSourceSession) and data a JSON
// object within store.MaxTaskJSONLen bytes. Every caller of store.CreateTask applies it first
// (Start, the scheduled runs, the loop's sub-agents). Errors: ErrInvalid naming the field.
func CheckNew(nt store.NewTask) error {
	if err := CheckPrompt(nt.Prompt); err != nil {
		return err
	}
	if nt.MaxSteps < 1 || nt.MaxSteps > math.MaxInt32 {
		return fieldcheck.Invalidf("max_steps must be at least 1")
	}
	if nt.Source != "" && nt.Source != store.TaskSourceSession && nt.Source != store.TaskSourceAgentAPI {
		return fieldcheck.Invalidf("source must be %q or %q", store.TaskSourceSession, store.TaskSourceAgentAPI)
	}
	if nt.Data != nil {
		return CheckJSON("data", nt.Data)
	}
	return nil
}

// CheckFollowUp applies the rule of a follow-up message's text (a user message appended to a
// task): valid UTF-8 of at most store.MaxTaskPromptLen characters; blank text is the caller's
// own refusal. Errors: ErrInvalid naming "message text".
func CheckFollowUp(text string) error {
	return fieldcheck.Text("message text", text, store.MaxTaskPromptLen)
}

// CheckJSON encodes v as the store does (compact, HTML not escaped) and bounds it by
// store.MaxTaskJSONLen bytes, the size of the task tables' JSON columns. Errors: ErrInvalid
// naming field.
func CheckJSON(field string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fieldcheck.Invalidf("%s must be valid JSON", field)
	}
	if len(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))) > store.MaxTaskJSONLen {
		return fieldcheck.Invalidf("%s must be at most %d bytes of JSON", field, store.MaxTaskJSONLen)
	}
	return nil
}

// CheckReason applies the rule of a decision's reason: valid UTF-8 of at most
// store.MaxTaskReasonLen characters. Errors: ErrInvalid naming "reason".
func CheckReason(reason string) error {
	return fieldcheck.Text("reason", reason, store.MaxTaskReasonLen)
}

// CheckDecisions applies the rules of tool-call decisions that need no pending call: at least
// one decision; approved arguments encodable within store.MaxTaskJSONLen; arguments only on an
// approval, allow_for_task too; reasons within CheckReason. Which provider call ids are pending (unknown, already
// decided, given twice) only the store's transaction knows. Errors: ErrInvalid.
func CheckDecisions(ds []store.ToolDecision) error {
	if len(ds) == 0 {
		return fieldcheck.Invalidf("decisions must not be empty")
	}
	for _, d := range ds {
		if d.Approve && d.Arguments != nil {
			if err := CheckJSON("arguments", d.Arguments); err != nil {
				return err
			}
		}
		if !d.Approve && d.Arguments != nil {
			return fieldcheck.Invalidf("decisions: arguments are only accepted when approving (%q)", d.ProviderCallID)
		}
		if !d.Approve && d.AllowForTask {
			return fieldcheck.Invalidf("decisions: allow_for_task is only accepted when approving (%q)", d.ProviderCallID)
		}
		if d.Reason != nil {
			if err := CheckReason(*d.Reason); err != nil {
				return err
			}
		}
	}
	return nil
}
