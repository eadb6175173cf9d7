package core

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// MemoryTool gives an agent long-term memory that outlives a chat: facts it remembers in one
// task are recalled in later ones. The scope setting decides whose memories a call sees:
// agent_user (the default) keeps each user's memories apart, so an agent serving several people
// never mixes them; agent shares one memory across everyone the agent serves.
type MemoryTool struct{}

// Memory scopes (the scope setting).
const (
	MemoryScopeAgentUser = "agent_user"
	MemoryScopeAgent     = "agent"
)

// Recall's page size: defaultRecall when no limit is asked, at most limits.MaxSearchHits.
const defaultRecall = 10

// Spec declares the tool.
func (MemoryTool) Spec() tools.Spec {
	return tools.Spec{
		Class:       "core.MemoryTool",
		Name:        "memory",
		DisplayName: "Memory",
		Description: "Long-term memory that outlives this chat: remember a fact worth keeping (a preference, a decision, a name), recall what was remembered by keywords, forget a memory that is wrong or outdated.",
		Category:    tools.CategoryProductivity,
		Icon:        "brain",
		Operations: []tools.Operation{
			op("remember", "Store one self-contained fact."),
			readOp("recall", "Find remembered facts by keywords, best matches first; without a query, the most recent."),
			approvedOp("forget", "Delete one memory by its id."),
		},
		Params: []tools.Param{
			{
				Name: "text", Type: tools.TypeString, Description: "remember: the fact, as a self-contained sentence.",
				Required: tools.RequiredFor("remember"),
			},
			{Name: "query", Type: tools.TypeString, Description: "recall: keywords to look for.", Required: tools.Optional()},
			{
				Name: "limit", Type: tools.TypeInteger, Description: "recall: how many memories at most.",
				Default: defaultRecall, Minimum: tools.Float(1), Maximum: tools.Float(limits.MaxSearchHits),
			},
			{
				Name: "id", Type: tools.TypeInteger, Minimum: tools.Float(1), Description: "forget: the memory's id, as recall returned it.",
				Required: tools.RequiredFor("forget"),
			},
		},
		Settings: []tools.Setting{{
			Key: "scope", Label: "Scope", Type: tools.SettingSelect, Options: []string{MemoryScopeAgentUser, MemoryScopeAgent},
			Default:     MemoryScopeAgentUser,
			Description: "agent_user: each user the agent serves has their own memories, never seen by another. agent: one memory shared by everyone the agent serves.",
		}},
	}
}

// MemoryStore keeps the agents' memories; *store.Store satisfies it. Remember fails with
// ErrNotFound for an unknown agent and ErrInvalidState when the agent keeps the most memories
// allowed; ForgetMemory with ErrNotFound for a memory out of scope.
type MemoryStore interface {
	Remember(ctx context.Context, m store.NewMemory, check store.AgentCheck) (*store.Memory, error)
	RecallMemories(ctx context.Context, q store.MemoryQuery) ([]store.Memory, int64, error)
	ForgetMemory(ctx context.Context, agentID, id int64, scoped bool, userID *int64) error
}

type memoryExec struct{ memories MemoryStore }

// memoryView is a memory as the model sees it.
type memoryView struct {
	ID        int64     `json:"id"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

// Execute runs remember (recording the calling task and message), recall (ranked by matched
// keywords, then recency) and forget within the call's scope. Bad arguments, a full memory and
// unknown ids are ToolErrors; store failures are returned as errors.
func (e *memoryExec) Execute(ctx context.Context, call tools.Call) (tools.Result, error) {
	if e.memories == nil || call.AgentID == 0 {
		return tools.Result{}, toolErr("memory is not available here")
	}
	var user *int64
	switch scope, _ := call.Settings["scope"].(string); scope {
	case MemoryScopeAgent:
	case MemoryScopeAgentUser, "":
		if call.UserID == 0 {
			return tools.Result{}, toolErr("memory is kept per user, and this task has no user")
		}
		user = &call.UserID
	default:
		return tools.Result{}, toolErr("the memory tool's scope setting %q is not agent_user or agent", scope)
	}
	switch call.Operation {
	case "remember":
		text, err := requiredString(call.Args, "text")
		if err != nil {
			return tools.Result{}, err
		}
		text = strings.TrimSpace(text)
		if !utf8.ValidString(text) || utf8.RuneCountInString(text) > limits.MemoryTextLen {
			return tools.Result{}, toolErr("text is longer than %d characters", limits.MemoryTextLen)
		}
		nm := store.NewMemory{AgentID: call.AgentID, UserID: user, Text: text}
		if call.TaskID != 0 {
			nm.TaskID, nm.MessageSequence = &call.TaskID, &call.MessageSequence
		}
		m, err := e.memories.Remember(ctx, nm, nil)
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(map[string]any{"remembered": memoryView{ID: m.ID, Text: m.Text, CreatedAt: m.CreatedAt}})
	case "recall":
		query, _, err := stringArg(call.Args, "query")
		if err != nil {
			return tools.Result{}, err
		}
		if utf8.RuneCountInString(query) > limits.MemoryQueryLen {
			return tools.Result{}, toolErr("query is longer than %d characters", limits.MemoryQueryLen)
		}
		limit, _, err := intArg(call.Args, "limit", defaultRecall)
		if err != nil {
			return tools.Result{}, err
		}
		if limit < 1 || limit > limits.MaxSearchHits {
			return tools.Result{}, toolErr("limit must be between 1 and %d", limits.MaxSearchHits)
		}
		ms, _, err := e.memories.RecallMemories(ctx, store.MemoryQuery{AgentID: call.AgentID, UserID: user, Text: query, Limit: int(limit)})
		if err != nil {
			return tools.Result{}, err
		}
		views := make([]memoryView, len(ms))
		for i, m := range ms {
			views[i] = memoryView{ID: m.ID, Text: m.Text, CreatedAt: m.CreatedAt}
		}
		return jsonResult(map[string]any{"memories": views})
	case "forget":
		id, _, err := intArg(call.Args, "id", 0)
		if err != nil {
			return tools.Result{}, err
		}
		if err := e.memories.ForgetMemory(ctx, call.AgentID, id, true, user); err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(map[string]any{"forgotten": id})
	default:
		return tools.Result{}, unknownOp(call.Operation)
	}
}
