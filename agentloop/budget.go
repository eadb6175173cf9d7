package agentloop

import (
	"fmt"
	"unicode/utf8"

	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// Tool-result budgets (issue 25 item 4): a result longer than its budget — the tool's own
// result_max_chars setting (tools.SettingResultMaxChars), else the agent's
// tool_result_max_chars — is stored whole but sent cut to the budget with a note, so one big
// page cannot fill the context window. The cut is decided when the result is recorded and kept
// with it (resultRecord.SentChars), so every later request sends the same text and the
// transcript shows what the model saw.

// resultBudget is the budget of call c's result in characters; 0 when it has none.
func (e *execution) resultBudget(c store.ToolCall) int {
	if spec, ok := e.loop.Registry.Spec(c.ToolClass); ok {
		if n := tools.ResultMaxChars(spec, e.states[spec.Class].Layers...); n > 0 {
			return n
		}
	}
	return e.agent.Compaction.ToolResultMaxChars
}

// budgeted records on r the characters of its text the model is sent when that text passes
// budget (0: none).
func budgeted(r resultRecord, budget int) resultRecord {
	text := r.Content
	if r.Error != "" {
		text = r.Error
	}
	if budget > 0 && utf8.RuneCountInString(text) > budget {
		r.SentChars = &budget
	}
	return r
}

// cutResult is text as sent when its record says it was cut: the first sent characters and a
// note saying how much of it that is.
func cutResult(text string, sent *int) string {
	if sent == nil {
		return text
	}
	runes := []rune(text)
	if len(runes) <= *sent {
		return text
	}
	return string(runes[:*sent]) + fmt.Sprintf("\n\n[Result cut to fit the context window: the first %d of %d characters are shown. "+
		"The whole result is stored; ask for a narrower part (for instance another format or a more specific URL) if you need more.]",
		*sent, len(runes))
}
