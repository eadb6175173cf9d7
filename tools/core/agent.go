package core

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/toolconfig"
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
			readOp("get_available_tools", "List every tool with its state for the agent, and the skills it can see."),
			approvedOp("configure_tools", "Enable or disable tools and operations of an agent and write its tool settings."),
			approvedOp("create_agent", "Create an agent."),
			readOp("read_agent", "Read an agent's definition."),
			readOp("list_agents", "List the agents of the owner."),
			approvedOp("update_agent", "Change an agent's definition; fields left out keep their value."),
			readOp("read_notes", "Read an agent's notes."),
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

// AgentService is what the agent tool needs of the tool configuration service
// (*toolconfig.Service). Every method acts for the calling agent callerID (and, for a change,
// the task's user userID) with the same rules as the API: svcerr.ErrNotFound for an agent of
// another owner or none, svcerr.ErrForbidden for a change without the manage role,
// svcerr.ErrInvalid for a configuration or fields the rules refuse. The tool shows every
// categorised refusal to the model; other errors fail the call as infrastructure failures.
type AgentService interface {
	AgentDiscovery(ctx context.Context, callerID, targetID int64) (tools.Discovery, error)
	ConfigureAgentTools(ctx context.Context, callerID, userID, targetID int64, entries []toolconfig.ToolEntry) ([]toolconfig.Manifest, error)
	ManagedAgent(ctx context.Context, callerID, targetID int64) (*store.Agent, error)
	WriteAgentNotes(ctx context.Context, callerID, userID, targetID int64, notes string) (*store.Agent, error)
	CreateAgentForAgent(ctx context.Context, callerID, userID int64, f toolconfig.SlimAgentFields) (*store.Agent, error)
	AgentsOfAgentOwner(ctx context.Context, callerID int64, page, perPage int) ([]store.Agent, error)
	UpdateAgentForAgent(ctx context.Context, callerID, userID, targetID int64, f toolconfig.SlimAgentFields) (*store.Agent, error)
}

// agentExec runs the agent tool on the tool configuration service: get_available_tools,
// configure_tools, create_agent, read_agent, list_agents, update_agent, read_notes and
// write_notes. The caller is the calling agent (Call.AgentID), acting for its owner: it may
// inspect agents of the same principal (itself included), and change or create them only when
// the task's user (Call.UserID) could do the same through the API (the manage role on the
// principal); otherwise the call fails and the model is told why.
type agentExec struct{ agents AgentService }

// Execute runs one call. Refusals (bad arguments, an agent of another owner, a configuration the
// rules refuse) are ToolErrors the model sees; other errors are infrastructure failures.
func (x *agentExec) Execute(ctx context.Context, call tools.Call) (tools.Result, error) {
	if x.agents == nil {
		return tools.Result{}, toolErr("agents are not available")
	}
	switch call.Operation {
	case "get_available_tools":
		target, err := agentIDArg(call.Args, false)
		if err != nil {
			return tools.Result{}, err
		}
		d, err := x.agents.AgentDiscovery(ctx, call.AgentID, target)
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(d)
	case "configure_tools":
		target, err := agentIDArg(call.Args, true)
		if err != nil {
			return tools.Result{}, err
		}
		entries, err := toolconfig.ParseToolEntries(call.Args["tools"])
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		manifests, err := x.agents.ConfigureAgentTools(ctx, call.AgentID, call.UserID, target, entries)
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(map[string]any{"agent_id": target, "tools": manifests})
	case "read_agent", "read_notes":
		target, err := agentIDArg(call.Args, call.Operation == "read_agent")
		if err != nil {
			return tools.Result{}, err
		}
		a, err := x.agents.ManagedAgent(ctx, call.AgentID, target)
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		if call.Operation == "read_notes" {
			return jsonResult(map[string]any{"agent_id": a.ID, "notes": a.Notes})
		}
		return jsonResult(agentDefinition(a))
	case "write_notes":
		target, err := agentIDArg(call.Args, false)
		if err != nil {
			return tools.Result{}, err
		}
		notes, ok := call.Args["notes"].(string)
		if !ok {
			return tools.Result{}, &tools.ToolError{Msg: "notes must be a string"}
		}
		a, err := x.agents.WriteAgentNotes(ctx, call.AgentID, call.UserID, target, notes)
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(map[string]any{"agent_id": a.ID, "notes_length": len([]rune(a.Notes))})
	case "create_agent":
		f, err := slimFields(call.Args)
		if err != nil {
			return tools.Result{}, err
		}
		if f.Name == nil {
			return tools.Result{}, &tools.ToolError{Msg: "name is required"}
		}
		a, err := x.agents.CreateAgentForAgent(ctx, call.AgentID, call.UserID, f)
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(agentDefinition(a))
	case "update_agent":
		target, err := agentIDArg(call.Args, true)
		if err != nil {
			return tools.Result{}, err
		}
		f, err := slimFields(call.Args)
		if err != nil {
			return tools.Result{}, err
		}
		a, err := x.agents.UpdateAgentForAgent(ctx, call.AgentID, call.UserID, target, f)
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(agentDefinition(a))
	case "list_agents":
		page, err := intInRange(call.Args, "page", 1, math.MaxInt32)
		if err != nil {
			return tools.Result{}, err
		}
		per, err := intInRange(call.Args, "per_page", 1, limits.MaxPerPage)
		if err != nil {
			return tools.Result{}, err
		}
		p, pp := 1, limits.DefaultPerPage
		if page != nil {
			p = *page
		}
		if per != nil {
			pp = *per
		}
		list, err := x.agents.AgentsOfAgentOwner(ctx, call.AgentID, p, pp)
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		agents := make([]map[string]any, 0, len(list))
		for i := range list {
			agents = append(agents, agentSummary(&list[i]))
		}
		return jsonResult(map[string]any{"page": p, "per_page": pp, "count": len(agents), "agents": agents})
	}
	return tools.Result{}, &tools.ToolError{Msg: fmt.Sprintf("the agent tool has no operation %q", call.Operation)}
}

// agentSummary is one entry of list_agents: the slim fields without the system prompt (read it
// with read_agent).
func agentSummary(a *store.Agent) map[string]any {
	return map[string]any{
		"id": a.ID, "name": a.Name, "description": a.Description, "max_steps": a.MaxSteps,
		"allow_followup": a.AllowFollowup, "retry_after_minutes": a.RetryAfterMinutes, "max_retries": a.MaxRetries,
	}
}

// slimFields reads the slim agent fields of create_agent and update_agent (document 2: name,
// description, system_prompt, max_steps, allow_followup, retry_after_minutes, max_retries);
// absent or null arguments stay nil. Wrong types and out-of-range numbers are ToolErrors; the
// store checks the rest (blank name, lengths) as for POST /agents. Notes are refused so a model
// does not believe it wrote them (write_notes does).
func slimFields(args map[string]any) (toolconfig.SlimAgentFields, error) {
	var f toolconfig.SlimAgentFields
	if v, ok := args["notes"]; ok && v != nil {
		return f, &tools.ToolError{Msg: "notes are not an agent field here; use write_notes"}
	}
	var err error
	for _, s := range []struct {
		name string
		dst  **string
	}{{"name", &f.Name}, {"description", &f.Description}, {"system_prompt", &f.SystemPrompt}} {
		if *s.dst, err = stringPtr(args, s.name); err != nil {
			return f, err
		}
	}
	if f.MaxSteps, err = intInRange(args, "max_steps", limits.MinSteps, limits.MaxSteps); err != nil {
		return f, err
	}
	if f.RetryAfterMinutes, err = intInRange(args, "retry_after_minutes", 0, store.MaxAgentRetryAfterMinute); err != nil {
		return f, err
	}
	if f.MaxRetries, err = intInRange(args, "max_retries", 0, store.MaxAgentRetries); err != nil {
		return f, err
	}
	if v, ok := args["allow_followup"]; ok && v != nil {
		b, ok := v.(bool)
		if !ok {
			return f, &tools.ToolError{Msg: "allow_followup must be true or false"}
		}
		f.AllowFollowup = &b
	}
	return f, nil
}

// stringPtr reads an optional string argument (nil when absent or null).
func stringPtr(args map[string]any, name string) (*string, error) {
	v, ok := args[name]
	if !ok || v == nil {
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, &tools.ToolError{Msg: name + " must be a string"}
	}
	return &s, nil
}

// intInRange reads an optional whole-number argument within lo..hi (nil when absent or null).
func intInRange(args map[string]any, name string, lo, hi int) (*int, error) {
	v, ok := args[name]
	if !ok || v == nil {
		return nil, nil
	}
	var n float64
	valid := true
	switch x := v.(type) {
	case float64:
		n = x
	case json.Number:
		f, err := x.Float64()
		n, valid = f, err == nil
	case int:
		n = float64(x)
	case int64:
		n = float64(x)
	default:
		valid = false
	}
	if !valid || n != math.Trunc(n) || n < float64(lo) || n > float64(hi) {
		return nil, &tools.ToolError{Msg: fmt.Sprintf("%s must be a whole number from %d to %d", name, lo, hi)}
	}
	i := int(n)
	return &i, nil
}

// agentDefinition is what read_agent shows: the definition without the notes (read_notes).
func agentDefinition(a *store.Agent) map[string]any {
	return map[string]any{
		"id": a.ID, "name": a.Name, "description": a.Description, "system_prompt": a.SystemPrompt,
		"max_steps": a.MaxSteps, "allow_followup": a.AllowFollowup, "retry_after_minutes": a.RetryAfterMinutes,
		"max_retries": a.MaxRetries, "metadata": a.Metadata, "created_at": a.CreatedAt, "updated_at": a.UpdatedAt,
	}
}

// agentIDArg reads the agent_id argument: 0 when absent and not required.
func agentIDArg(args map[string]any, required bool) (int64, error) {
	v, ok := args["agent_id"]
	if !ok || v == nil {
		if required {
			return 0, &tools.ToolError{Msg: "agent_id is required"}
		}
		return 0, nil
	}
	var id int64
	switch n := v.(type) {
	case float64:
		if n == math.Trunc(n) && n >= 1 && n <= 1<<53 {
			id = int64(n)
		}
	case json.Number:
		id, _ = n.Int64()
	case int64:
		id = n
	case int:
		id = int64(n)
	}
	if id < 1 {
		return 0, &tools.ToolError{Msg: "agent_id must be a positive integer"}
	}
	return id, nil
}
