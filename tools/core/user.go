package core

import "github.com/agentsvc/svc/tools"

// UserInfoTool tells the agent about the user it works for: name, locale, time zone and saved
// locations. The user is the owner of the agent, never the signed-in session user.
type UserInfoTool struct{}

// Spec declares the tool.
func (UserInfoTool) Spec() tools.Spec {
	return tools.Spec{
		Class:       "core.UserInfoTool",
		Name:        "user_info",
		DisplayName: "User info",
		Description: "Information about the user the agent works for: name, email, locale, time zone and saved locations.",
		Category:    tools.CategoryGeneral,
		Icon:        "user",
		Operations: []tools.Operation{
			op("get_base_data", "Return the user's name, email, locale, time zone and profile text."),
			op("get_locations", "Return the user's saved locations (name, address, coordinates, default flag)."),
		},
		Params: []tools.Param{{
			Name: "default_only", Type: tools.TypeBoolean, Default: false,
			Description: "get_locations: return only the default location.",
		}},
	}
}

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
