package agentloop

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/svcerr"
	"github.com/agentsvc/svc/toolconfig"
	"github.com/agentsvc/svc/tools"
)

// AgentToolClass is the class of the agent tool.
const AgentToolClass = "core.AgentTool"

// AgentToolExecutor runs the agent tool (core.AgentTool) on the tool configuration service:
// get_available_tools, configure_tools, read_agent, read_notes and write_notes. The caller is the calling agent (Call.AgentID), acting
// for its owner: it may inspect and configure itself and the agents of the same principal. The
// other operations are not available in this release and fail visibly.
type AgentToolExecutor struct {
	Config AgentToolService
}

// AgentToolService is what the agent tool needs of the tool configuration service
// (*toolconfig.Service).
type AgentToolService interface {
	AgentDiscovery(ctx context.Context, callerID, targetID int64) (tools.Discovery, error)
	ConfigureAgentTools(ctx context.Context, callerID, targetID int64, entries []toolconfig.ToolEntry) ([]toolconfig.Manifest, error)
	ManagedAgent(ctx context.Context, callerID, targetID int64) (*store.Agent, error)
	WriteAgentNotes(ctx context.Context, callerID, targetID int64, notes string) (*store.Agent, error)
}

var _ AgentToolService = (*toolconfig.Service)(nil)

var _ tools.Executor = (*AgentToolExecutor)(nil)

// Execute runs one call. Refusals (bad arguments, an agent of another owner, a configuration the
// rules refuse) are ToolErrors the model sees; other errors are infrastructure failures.
func (x *AgentToolExecutor) Execute(ctx context.Context, call tools.Call) (tools.Result, error) {
	switch call.Operation {
	case "get_available_tools":
		target, err := agentIDArg(call.Args, false)
		if err != nil {
			return tools.Result{}, err
		}
		d, err := x.Config.AgentDiscovery(ctx, call.AgentID, target)
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
		manifests, err := x.Config.ConfigureAgentTools(ctx, call.AgentID, target, entries)
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(map[string]any{"agent_id": target, "tools": manifests})
	case "read_agent", "read_notes":
		target, err := agentIDArg(call.Args, call.Operation == "read_agent")
		if err != nil {
			return tools.Result{}, err
		}
		a, err := x.Config.ManagedAgent(ctx, call.AgentID, target)
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
		a, err := x.Config.WriteAgentNotes(ctx, call.AgentID, target, notes)
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(map[string]any{"agent_id": a.ID, "notes_length": len([]rune(a.Notes))})
	}
	return tools.Result{}, &tools.ToolError{Msg: fmt.Sprintf("the operation %s of the agent tool is not available in this release", call.Operation)}
}

// agentDefinition is what read_agent shows: the definition without the notes (read_notes).
func agentDefinition(a *store.Agent) map[string]any {
	return map[string]any{
		"id": a.ID, "name": a.Name, "description": a.Description, "system_prompt": a.SystemPrompt,
		"max_steps": a.MaxSteps, "allow_followup": a.AllowFollowup, "retry_after_minutes": a.RetryAfterMinutes,
		"max_retries": a.MaxRetries, "metadata": a.Metadata, "created_at": a.CreatedAt, "updated_at": a.UpdatedAt,
	}
}

// toolError turns a categorised refusal into a ToolError with its public message; other errors
// are returned as they are.
func toolError(err error) error {
	if msg, _, ok := svcerr.Public(err); ok {
		return &tools.ToolError{Msg: msg}
	}
	return err
}

func jsonResult(v any) (tools.Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return tools.Result{}, err
	}
	return tools.Result{Content: string(b), Data: b}, nil
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

// builtins adds, once per Loop, the executors the Loop builds itself (see addBuiltins).
type builtins struct{ once sync.Once }

// addBuiltins adds the agent tool's executor when Executors has none for it and AgentTools is
// set. It runs once, before the first tick reads Executors.
func (l *Loop) addBuiltins() { l.Executors = withAgentTool(l.Executors, l.AgentTools) }

// withAgentTool returns execs plus the agent tool's executor when execs has none and cfg is set.
func withAgentTool(execs map[string]tools.Executor, cfg AgentToolService) map[string]tools.Executor {
	if _, ok := execs[AgentToolClass]; ok || cfg == nil {
		return execs
	}
	out := make(map[string]tools.Executor, len(execs)+1)
	for k, v := range execs {
		out[k] = v
	}
	out[AgentToolClass] = &AgentToolExecutor{Config: cfg}
	return out
}
