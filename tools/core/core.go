// Package core declares the core tools every installation ships (docs/design.md "Tools").
// Each tool is a type whose Spec is its declaration; execution is added with the agent loop.
// Register adds them all to a registry.
package core

import (
	"errors"
	"fmt"

	"github.com/agentsvc/svc/tools"
)

// All returns one value of every core tool, in class order.
func All() []tools.Tool {
	return []tools.Tool{
		AgentTool{},
		AskUserQuestionTool{},
		CalculatorTool{},
		MediaTool{},
		ReadURLTool{},
		ScheduleTool{},
		SkillTool{},
		SubAgentTool{},
		TimeTool{},
		TodoTool{},
		UserInfoTool{},
	}
}

// Register adds every core tool to reg. It fails (wrapping the categories of
// tools.Registry.Register) when a declaration is refused or a class or name is already taken;
// the tools registered before the failure stay registered.
func Register(reg *tools.Registry) error {
	var errs []error
	for _, t := range All() {
		if err := reg.Register(t); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("register core tools: %w", errors.Join(errs...))
	}
	return nil
}

// Shared parameter bases. A base declares parameters only; tools inherit them for schema
// generation, ahead of their own parameters.
var (
	// timezoneBase is shared by the tools that read or write wall-clock times.
	timezoneBase = tools.Spec{Params: []tools.Param{{
		Name:        "timezone",
		Type:        tools.TypeString,
		Description: "IANA time zone such as Europe/Berlin or America/New_York. Defaults to the user's time zone, else UTC.",
		Required:    tools.Optional(),
	}}}

	// pagingBase is shared by the tools whose list operations are paged.
	pagingBase = tools.Spec{Params: []tools.Param{
		{
			Name: "page", Type: tools.TypeInteger, Description: "Page of a list operation, starting at 1.",
			Default: 1, Minimum: tools.Float(1),
		},
		{
			Name: "per_page", Type: tools.TypeInteger, Description: "Entries per page of a list operation.",
			Default: 25, Minimum: tools.Float(1), Maximum: tools.Float(100),
		},
	}}
)

func op(name, description string) tools.Operation {
	return tools.Operation{Name: name, Description: description, EnabledByDefault: true}
}

func approvedOp(name, description string) tools.Operation {
	return tools.Operation{Name: name, Description: description, EnabledByDefault: true, RequiresApprovalByDefault: true}
}

func obj(properties map[string]any, required ...string) map[string]any {
	m := map[string]any{"type": "object", "properties": properties}
	if len(required) > 0 {
		m["required"] = required
	}
	return m
}

func prop(typ, description string) map[string]any {
	return map[string]any{"type": typ, "description": description}
}
