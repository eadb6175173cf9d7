package core

import (
	"github.com/agentsvc/svc/internal/limits"
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
				Minimum: tools.Float(limits.MinSteps), Maximum: tools.Float(limits.MaxSteps), Required: tools.Optional(),
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

// SubAgentTool delegates work to another agent of the same owner, either waiting for its answer
// (sub_agent) or handing the conversation over (handover). Both need approval by default, and only
// the agents listed in allowed_target_agents can be reached.
type SubAgentTool struct{}

// Spec declares the tool.
func (SubAgentTool) Spec() tools.Spec {
	return tools.Spec{
		Class:       "core.SubAgentTool",
		Name:        "sub_agent",
		DisplayName: "Sub-agent",
		Description: "Delegate work to another agent of the same owner: sub_agent runs it on a task and returns its answer; handover passes the conversation to it.",
		Category:    tools.CategorySystem,
		Icon:        "users",
		Operations: []tools.Operation{
			approvedOp("sub_agent", "Run the target agent on a task and return its answer."),
			approvedOp("handover", "Hand the conversation over to the target agent."),
		},
		Params: []tools.Param{
			{Name: "agent_id", Type: tools.TypeInteger, Minimum: tools.Float(1), Description: "Target agent; must be in the allowed target agents."},
			{Name: "prompt", Type: tools.TypeString, Description: "sub_agent: the complete task, with all context the target needs. handover: the message the target continues with."},
			{
				Name: "max_steps", Type: tools.TypeInteger, Description: "sub_agent: model turns the target may take (defaults to its own setting).",
				Minimum: tools.Float(limits.MinSteps), Maximum: tools.Float(limits.MaxSteps), Required: tools.Optional(),
			},
		},
		Settings: []tools.Setting{{
			Key: "allowed_target_agents", Label: "Allowed target agents", Type: tools.SettingIntegerList, Required: true,
			Description: "Ids of the agents this agent may delegate to; they must belong to the same owner.",
		}},
	}
}

// SkillTool loads Agent Skills on demand: the model sees the names and descriptions of its
// allowed skills and reads a skill's instructions and files when a task calls for them.
type SkillTool struct{}

// Spec declares the tool.
func (SkillTool) Spec() tools.Spec {
	return tools.Spec{
		Class:       "core.SkillTool",
		Name:        "skill",
		DisplayName: "Skills",
		Description: "Load an allowed skill: read returns its instructions, files lists or reads the files that come with it.",
		Category:    tools.CategoryGeneral,
		Icon:        "book-open",
		Operations: []tools.Operation{
			op("read", "Return the skill's instructions (SKILL.md)."),
			op("files", "List the skill's files, or read one when path is given."),
		},
		Params: []tools.Param{
			{Name: "name", Type: tools.TypeString, Description: "Skill name, one of skills.allowed."},
			{Name: "path", Type: tools.TypeString, Description: "files: relative path of a file to read; omit to list the files.", Required: tools.Optional()},
		},
		Settings: []tools.Setting{{
			Key: "allowed_skills", Label: "Allowed skills", Type: tools.SettingStringList,
			Description: "Names of the skills this agent may load; none when empty.",
		}},
	}
}
