// Package core holds the core tools every installation ships (docs/design.md "Tools"): one
// file per tool, holding its declaration (a type whose Spec is the tool's declaration) and its
// executor together. Register adds the declarations to a registry; Executors builds the
// executors over one Deps value.
package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
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
			Default: limits.DefaultPerPage, Minimum: tools.Float(1), Maximum: tools.Float(limits.MaxPerPage),
		},
	}}
)

func op(name, description string) tools.Operation {
	return tools.Operation{Name: name, Description: description, EnabledByDefault: true}
}

// readOp is an operation that only reads (or computes): repeatable after a crash.
func readOp(name, description string) tools.Operation {
	o := op(name, description)
	o.Repeatable = true
	return o
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

// DefaultHTTPTimeout is the read_url timeout when neither Deps.HTTPTimeout nor the
// tool_http_timeout setting gives one (the config default of tool_http_timeout).
const DefaultHTTPTimeout = 30 * time.Second

// UserInfoSource is what user_info and time read about the agent's owner, and the schedule tool
// about the task's user; *store.Store satisfies it. Each method fails with an error wrapping
// svcerr.ErrNotFound for an unknown user.
type UserInfoSource interface {
	UserByID(ctx context.Context, id int64) (*store.User, error)
	Profile(ctx context.Context, userID int64) (*store.Profile, error)
	ListLocations(ctx context.Context, userID int64) ([]store.Location, error)
}

// Todo is one item of a task's checklist.
type Todo struct {
	Content string `json:"content"`
	Status  string `json:"status"` // pending, in_progress or completed
}

// TodoStore keeps each task's checklist; the agent loop implements it over task data. Todos
// returns an empty list for a task without one.
type TodoStore interface {
	Todos(ctx context.Context, taskID int64) ([]Todo, error)
	SaveTodos(ctx context.Context, taskID int64, todos []Todo) error
}

// Deps are what the core executors need, given once to Executors. The services arrive behind
// small interfaces declared here, so that tools/core depends on no service package and never on
// the agent loop (which imports it): the server hands in its store and services, the loop its
// own implementations (TodoStore, SubAgents). Every field may be left zero: the tools depending
// on a missing one answer with a ToolError saying the feature is unavailable.
type Deps struct {
	// Clock is the time source of the time tool; nil means time.Now.
	Clock func() time.Time
	// Skills is the skill index the skill tool reads.
	Skills *skill.Index
	// Users answers user_info, and gives the time tool the owner's time zone.
	Users UserInfoSource
	// Todos keeps the todo tool's checklists.
	Todos TodoStore
	// HTTPTimeout is tool_http_timeout; 0 means DefaultHTTPTimeout. A numeric
	// tool_http_timeout in a call's settings (seconds) overrides it.
	HTTPTimeout time.Duration
	// Net configures read_url's SSRF screen (a resolver; AllowLoopback in tests only).
	// RequireHTTPS, MaxLength and Resolver are used as given; AllowHost is combined with the
	// call's allowed and blocked domains.
	Net netguard.Options
	// UserAgent is read_url's User-Agent when the user_agent setting is empty.
	UserAgent string
	// Media is what the media tool reads of the media an agent may see (*store.Store).
	Media MediaSource
	// Files opens the files of media assets for the media tool (*media.Service).
	Files MediaFiles
	// Schedules runs the schedule tool's operations (*schedule.Service); it needs Users too.
	Schedules ScheduleService
	// Agents runs the agent tool's operations (*toolconfig.Service).
	Agents AgentService
	// SubAgents starts and reads the sub-agent tool's child tasks (agentloop.SubAgents).
	SubAgents SubAgents
}

// Executors returns the executor of every core tool keyed by tool class: the one registry of
// core executors the agent loop receives (agentloop.Loop.Executors), built once over deps.
func Executors(deps Deps) map[string]tools.Executor {
	if deps.Clock == nil {
		deps.Clock = time.Now
	}
	return map[string]tools.Executor{
		"core.AgentTool":           &agentExec{agents: deps.Agents},
		"core.AskUserQuestionTool": askExec{},
		"core.CalculatorTool":      calcExec{},
		"core.MediaTool":           &mediaExec{media: deps.Media, files: deps.Files},
		"core.ReadURLTool":         &readURLExec{deps: deps},
		"core.ScheduleTool":        &scheduleExec{schedules: deps.Schedules, users: deps.Users},
		"core.SkillTool":           &skillExec{idx: deps.Skills},
		"core.SubAgentTool":        &subAgentExec{agents: deps.SubAgents},
		"core.TimeTool":            &timeExec{deps: deps},
		"core.TodoTool":            &todoExec{todos: deps.Todos},
		"core.UserInfoTool":        &userInfoExec{users: deps.Users},
	}
}

func toolErr(format string, args ...any) error {
	return &tools.ToolError{Msg: fmt.Sprintf(format, args...)}
}

func unknownOp(op string) error { return toolErr("unknown operation %q", op) }

// jsonData marshals v for Result.Data; v is always marshalable here.
func jsonData(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// stringArg returns the string argument key; present is false when it is absent or null.
func stringArg(args map[string]any, key string) (s string, present bool, err error) {
	v, ok := args[key]
	if !ok || v == nil {
		return "", false, nil
	}
	s, ok = v.(string)
	if !ok {
		return "", true, toolErr("argument %q must be a string", key)
	}
	return s, true, nil
}

func requiredString(args map[string]any, key string) (string, error) {
	s, present, err := stringArg(args, key)
	if err != nil {
		return "", err
	}
	if !present || strings.TrimSpace(s) == "" {
		return "", toolErr("argument %q is required", key)
	}
	return s, nil
}

// number converts a JSON-decoded number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// intArg returns the integer argument key, or def when absent or null.
func intArg(args map[string]any, key string, def int64) (int64, bool, error) {
	v, ok := args[key]
	if !ok || v == nil {
		return def, false, nil
	}
	f, ok := number(v)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, true, toolErr("argument %q must be an integer", key)
	}
	return int64(f), true, nil
}

func boolArg(args map[string]any, key string, def bool) (bool, error) {
	v, ok := args[key]
	if !ok || v == nil {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, toolErr("argument %q must be a boolean", key)
	}
	return b, nil
}

// stringList reads a string_list setting ([]any of strings or []string).
func stringList(v any) []string {
	switch l := v.(type) {
	case []string:
		return l
	case []any:
		out := make([]string, 0, len(l))
		for _, e := range l {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// toolError turns a categorised refusal into a ToolError with its public message; other errors
// are returned as they are.
func toolError(err error) error {
	if msg, _, ok := svcerr.Public(err); ok {
		return &tools.ToolError{Msg: msg}
	}
	return err
}

// jsonResult is v as the model sees it (JSON) and as the transcript keeps it.
func jsonResult(v any) (tools.Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return tools.Result{}, err
	}
	return tools.Result{Content: string(b), Data: b}, nil
}

// intOf converts a JSON-decoded whole number.
func intOf(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return 0, false
		}
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// intList reads an integer_list setting.
func intList(v any) []int64 {
	var out []int64
	switch l := v.(type) {
	case []any:
		for _, e := range l {
			if n, ok := intOf(e); ok {
				out = append(out, n)
			}
		}
	case []int64:
		out = l
	case []float64:
		for _, e := range l {
			if n, ok := intOf(e); ok {
				out = append(out, n)
			}
		}
	case []int:
		for _, e := range l {
			out = append(out, int64(e))
		}
	}
	return out
}
