package core

import (
	"github.com/agentsvc/svc/tools"
)

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
				Minimum: tools.Float(1), Maximum: tools.Float(100), Required: tools.Optional(),
			},
		},
		Settings: []tools.Setting{{
			Key: "allowed_target_agents", Label: "Allowed target agents", Type: tools.SettingIntegerList, Required: true,
			Description: "Ids of the agents this agent may delegate to; they must belong to the same owner.",
		}},
	}
}
