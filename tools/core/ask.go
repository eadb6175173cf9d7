package core

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentsvc/svc/tools"
)

// AskUserQuestionTool parks the task until the user answers a short batch of multiple-choice
// questions.
type AskUserQuestionTool struct{}

// Spec declares the tool.
func (AskUserQuestionTool) Spec() tools.Spec {
	return tools.Spec{
		Class:       "core.AskUserQuestionTool",
		Name:        "ask_user_question",
		DisplayName: "Ask user question",
		Description: "Ask the user 1 to 4 multiple-choice questions and wait for the answers. Use it when a decision is the user's to make; the task pauses until they answer.",
		Category:    tools.CategoryCommunication,
		Icon:        "message-circle-question",
		Operations:  []tools.Operation{op("ask", "Ask the questions and wait for the answers.")},
		Params: []tools.Param{{
			Name:        "questions",
			Type:        tools.TypeArray,
			Description: "1 to 4 questions, each with 2 to 4 options and a short unique header.",
			Items: obj(map[string]any{
				"question": prop("string", "The full question."),
				"header":   prop("string", "Short unique label of the question (at most 30 characters); answers name the question by it."),
				"options": map[string]any{
					"type": "array", "description": "2 to 4 option labels; answers repeat them verbatim.",
					"items": map[string]any{"type": "string"}, "minItems": 2, "maxItems": 4,
				},
				"multiple":      map[string]any{"type": "boolean", "description": "More than one option may be chosen.", "default": false},
				"allowFreeText": map[string]any{"type": "boolean", "description": "A free-text answer is accepted besides the options.", "default": false},
			}, "question", "header", "options"),
		}},
	}
}

// Question batch limits (the declaration's 1–4 questions of 2–4 options; text lengths are ours).
const (
	maxQuestions      = 4
	minOptions        = 2
	maxOptions        = 4
	maxHeaderLen      = 30   // characters
	maxQuestionLen    = 1000 // characters
	maxOptionLabelLen = 200  // characters
)

// Question is one validated question of an ask_user_question batch, as Pause.Questions carries
// it (a JSON array of these, in the order asked).
type Question struct {
	Header        string   `json:"header"`
	Question      string   `json:"question"`
	Options       []string `json:"options"`
	Multiple      bool     `json:"multiple"`
	AllowFreeText bool     `json:"allowFreeText"`
}

type askExec struct{}

// Execute validates the batch and parks the task with it: Result.Pause is a PauseQuestion whose
// Questions is the normalised batch (text trimmed, defaults filled). Refusals (count, missing
// or oversize text, duplicate headers or options, unknown keys, wrong types) are ToolErrors.
func (askExec) Execute(_ context.Context, call tools.Call) (tools.Result, error) {
	if call.Operation != "ask" {
		return tools.Result{}, unknownOp(call.Operation)
	}
	qs, err := ParseQuestions(call.Args["questions"])
	if err != nil {
		return tools.Result{}, err
	}
	batch := jsonData(qs)
	return tools.Result{
		Content: fmt.Sprintf("Asked the user %d question(s); the task continues when they answer.", len(qs)),
		Data:    batch,
		Pause:   &tools.Pause{Kind: tools.PauseQuestion, Questions: batch},
	}, nil
}

// ParseQuestions validates the questions argument of ask_user_question (decoded JSON) and returns
// the normalised batch, or a *tools.ToolError naming the first problem.
func ParseQuestions(v any) ([]Question, error) {
	list, ok := v.([]any)
	if !ok {
		if v == nil {
			return nil, toolErr("argument \"questions\" is required")
		}
		return nil, toolErr("argument \"questions\" must be a list")
	}
	if len(list) < 1 || len(list) > maxQuestions {
		return nil, toolErr("ask 1 to %d questions, not %d", maxQuestions, len(list))
	}
	out := make([]Question, 0, len(list))
	headers := map[string]bool{}
	for i, raw := range list {
		n := i + 1
		m, ok := raw.(map[string]any)
		if !ok {
			return nil, toolErr("question %d must be an object", n)
		}
		for k := range m {
			switch k {
			case "header", "question", "options", "multiple", "allowFreeText":
			default:
				return nil, toolErr("question %d: unknown key %q (header, question, options, multiple, allowFreeText)", n, k)
			}
		}
		var q Question
		var err error
		if q.Question, err = text(m, "question", n, maxQuestionLen); err != nil {
			return nil, err
		}
		if q.Header, err = text(m, "header", n, maxHeaderLen); err != nil {
			return nil, err
		}
		key := strings.ToLower(q.Header)
		if headers[key] {
			return nil, toolErr("question %d: header %q is used twice; headers must be unique", n, q.Header)
		}
		headers[key] = true
		opts, ok := m["options"].([]any)
		if !ok {
			return nil, toolErr("question %d: options must be a list of %d to %d strings", n, minOptions, maxOptions)
		}
		if len(opts) < minOptions || len(opts) > maxOptions {
			return nil, toolErr("question %d: give %d to %d options, not %d", n, minOptions, maxOptions, len(opts))
		}
		seen := map[string]bool{}
		for j, o := range opts {
			s, ok := o.(string)
			s = strings.TrimSpace(s)
			if !ok || s == "" {
				return nil, toolErr("question %d: option %d must be a non-empty string", n, j+1)
			}
			if utf8.RuneCountInString(s) > maxOptionLabelLen {
				return nil, toolErr("question %d: option %d is longer than %d characters", n, j+1, maxOptionLabelLen)
			}
			if seen[s] {
				return nil, toolErr("question %d: option %q is given twice", n, s)
			}
			seen[s] = true
			q.Options = append(q.Options, s)
		}
		if q.Multiple, err = boolArg(m, "multiple", false); err != nil {
			return nil, toolErr("question %d: multiple must be a boolean", n)
		}
		if q.AllowFreeText, err = boolArg(m, "allowFreeText", false); err != nil {
			return nil, toolErr("question %d: allowFreeText must be a boolean", n)
		}
		out = append(out, q)
	}
	return out, nil
}

func text(m map[string]any, key string, n, maxLen int) (string, error) {
	s, ok := m[key].(string)
	s = strings.TrimSpace(s)
	if !ok || s == "" {
		return "", toolErr("question %d: %s is required (a non-empty string)", n, key)
	}
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxLen {
		return "", toolErr("question %d: %s is longer than %d characters", n, key, maxLen)
	}
	return s, nil
}
