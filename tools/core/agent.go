package core

import (
	"github.com/agentsvc/svc/tools"
)

// AgentTool lets an agent inspect and configure agents of its owner: discover tools, configure
// them, create, read, list and update agents, and keep notes. Changes need approval by default.
type AgentTool struct{}

// Spec declares the tool.
func (AgentTool) Spec() tools.Spec {
	operationEntry := obj(map[string]any{
		"name":         prop("string", "Operation name declared by the tool."),
		"enabled":      prop("boolean", "true turns the operation on, false off."),
		"auto_approve": prop("boolean", "true pre-approves calls, false requires confirmation."),
	}, "name")
	toolEntry := obj(map[string]any{
		"tool_class": prop("string", "Tool class from get_available_tools, for example core.ReadURLTool."),
		"enabled":    prop("boolean", "true enables the tool, false disables it; omit to leave it."),
		"settings": map[string]any{
			"type":        "object",
			"description": "Agent-level settings; each key replaces its value, null or an empty string removes it.",
		},
		"operations": map[string]any{"type": "array", "description": "Operation changes.", "items": operationEntry},
	}, "tool_class")
	return tools.Spec{
		Class:            "core.AgentTool",
		Name:             "agent",
		DisplayName:      "Agents",
		Description:      "Inspect and configure agents of the same owner: discover and configure tools, create, read, list and update agents, read and write agent notes.",
		Category:         tools.CategorySystem,
		Icon:             "bot",
		RecommendsSkills: []string{"agent-setup"},
		Base:             &pagingBase,
		Operations: []tools.Operation{
			op("get_available_tools", "List every tool with its state for the agent, and the skills it can see."),
			approvedOp("configure_tools", "Enable or disable tools and operations of an agent and write its tool settings."),
			approvedOp("create_agent", "Create an agent."),
			op("read_agent", "Read an agent's definition."),
			op("list_agents", "List the agents of the owner."),
			approvedOp("update_agent", "Change an agent's definition; fields left out keep their value."),
			op("read_notes", "Read an agent's notes."),
			approvedOp("write_notes", "Replace an agent's notes."),
		},
		Params: []tools.Param{
			{
				Name: "agent_id", Type: tools.TypeInteger, Minimum: tools.Float(1),
				Description: "Target agent. get_available_tools, read_notes and write_notes default to the calling agent.",
				Required:    tools.RequiredFor("configure_tools", "read_agent", "update_agent"),
			},
			{
				Name: "tools", Type: tools.TypeArray, Items: toolEntry,
				Description: "configure_tools: the changes, one entry per tool.",
				Required:    tools.RequiredFor("configure_tools"),
			},
			{
				Name: "name", Type: tools.TypeString, Description: "Agent name (1 to 200 characters).",
				Required: tools.RequiredFor("create_agent"),
			},
			{Name: "description", Type: tools.TypeString, Description: "Agent description (at most 2000 characters).", Required: tools.Optional()},
			{Name: "system_prompt", Type: tools.TypeString, Description: "The agent's system prompt.", Required: tools.Optional()},
			{
				Name: "max_steps", Type: tools.TypeInteger, Description: "Model turns per run.",
				Minimum: tools.Float(1), Maximum: tools.Float(100), Required: tools.Optional(),
			},
			{Name: "allow_followup", Type: tools.TypeBoolean, Description: "Whether a finished chat accepts follow-up messages.", Required: tools.Optional()},
			{
				Name: "retry_after_minutes", Type: tools.TypeInteger, Description: "Minutes before a failed run is retried.",
				Minimum: tools.Float(0), Required: tools.Optional(),
			},
			{
				Name: "max_retries", Type: tools.TypeInteger, Description: "Retries of a failed run.",
				Minimum: tools.Float(0), Required: tools.Optional(),
			},
			{
				Name: "notes", Type: tools.TypeString, Description: "write_notes: the complete new notes (Markdown, at most 200000 characters).",
				Required: tools.RequiredFor("write_notes"),
			},
		},
	}
}
