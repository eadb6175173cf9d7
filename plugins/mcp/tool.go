package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsvc/svc/tools"
)

// Operation is the single operation of every MCP tool.
const Operation = "call"

// Tool is one MCP tool as a registered agent tool: its Spec declares it under the plugin's slug
// with the server's inputSchema as the argument schema, and Execute calls it on the server.
type Tool struct {
	m       *Manager
	srv     *server
	mcpName string
	spec    tools.Spec
}

var (
	_ tools.Tool     = (*Tool)(nil)
	_ tools.Executor = (*Tool)(nil)
)

// Spec returns the declaration: class `<slug>.Mcp<Server><Tool>`, name `<server>_<tool>`
// (sanitised), one operation "call" requiring approval unless the server's config says
// otherwise and repeatable when the tool's annotations say it reads only or is idempotent, the
// server's secrets as password settings, and the MCP inputSchema as is.
func (t *Tool) Spec() tools.Spec { return t.spec }

// MCPName is the tool's name on its server.
func (t *Tool) MCPName() string { return t.mcpName }

// Server is the declaration of the tool's server.
func (t *Tool) Server() ServerConfig { return t.srv.cfg }

// newTool builds the registered form of an MCP tool.
func newTool(m *Manager, srv *server, mt *sdk.Tool, name, class string) (*Tool, error) {
	schema, err := inputSchema(mt.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", mt.Name, err)
	}
	display := mt.Title
	if display == "" && mt.Annotations != nil {
		display = mt.Annotations.Title
	}
	if display == "" {
		display = mt.Name
	}
	desc := mt.Description
	if desc == "" {
		desc = display
	}
	spec := tools.Spec{
		Class: class, Name: name, Description: desc, DisplayName: display,
		PluginSlug: srv.cfg.Slug,
		Operations: []tools.Operation{{Name: Operation, Description: desc, EnabledByDefault: true,
			RequiresApprovalByDefault: srv.cfg.approval(), Repeatable: repeatable(mt.Annotations)}},
		InputSchema: schema,
		Settings:    srv.cfg.settings(),
	}
	return &Tool{m: m, srv: srv, mcpName: mt.Name, spec: spec}, nil
}

// repeatable reads a tool's annotations: a call is safe to run again after a crash when the
// server declares the tool read-only (readOnlyHint) or idempotent (idempotentHint: a repeat
// with the same arguments has no further effect). Both default to false in the MCP
// specification, so a tool without annotations is never run twice.
func repeatable(a *sdk.ToolAnnotations) bool {
	return a != nil && (a.ReadOnlyHint || a.IdempotentHint)
}

// inputSchema normalises what the SDK decoded (a map for a JSON object) into the raw schema the
// registry sends to the model; a tool without one takes no arguments.
func inputSchema(v any) (map[string]any, error) {
	if v == nil {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	s, ok := v.(map[string]any)
	if !ok {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &s); err != nil || s == nil {
			return nil, errors.New("inputSchema is not a JSON object")
		}
	}
	if t, _ := s["type"].(string); t != tools.TypeObject {
		return nil, errors.New(`inputSchema must have "type": "object"`)
	}
	return s, nil
}

// Execute calls the MCP tool with the call's arguments, on the connection of the call's secret
// settings (starting or restarting the server when needed), within the Manager's CallTimeout.
// Text content is joined into Result.Content and structured content kept in Result.Data. What the
// model should see is a *tools.ToolError: an MCP result with isError, a protocol error from the
// server (unknown tool, bad arguments), a timeout, a server that cannot be started or reached or
// dies during the call (the next call restarts it), every process slot of the server busy beyond
// the wait (Options.BusyWait), a closed Manager. Only the caller's own
// cancellation is returned as is (ctx's error).
func (t *Tool) Execute(ctx context.Context, call tools.Call) (tools.Result, error) {
	label := tools.ModelName(t.spec)
	cctx, cancel := context.WithTimeout(ctx, t.m.opts.CallTimeout)
	defer cancel()
	c, err := t.m.liveSession(cctx, t.srv, t.srv.cfg.secretValues(call.Settings))
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return tools.Result{}, ctx.Err()
		case errors.Is(err, errBusy):
			return tools.Result{}, &tools.ToolError{Msg: fmt.Sprintf("%s: the MCP server %q is busy: %s", label, t.srv.cfg.Name, errBusy)}
		case cctx.Err() != nil:
			return tools.Result{}, &tools.ToolError{Msg: fmt.Sprintf("%s: the MCP server %q did not start within %s (timed out)", label, t.srv.cfg.Name, t.m.opts.CallTimeout)}
		}
		return tools.Result{}, &tools.ToolError{Msg: fmt.Sprintf("%s: the MCP server %q is unavailable: %s", label, t.srv.cfg.Name, publicMsg(err))}
	}
	defer t.m.release(c)
	args := call.Args
	if args == nil {
		args = map[string]any{}
	}
	res, err := c.cs.CallTool(cctx, &sdk.CallToolParams{Name: t.mcpName, Arguments: args})
	if err != nil {
		var rpcErr *jsonrpc.Error
		switch {
		case ctx.Err() != nil:
			return tools.Result{}, ctx.Err()
		case cctx.Err() != nil:
			return tools.Result{}, &tools.ToolError{Msg: fmt.Sprintf("%s: the MCP tool did not answer within %s (timed out)", label, t.m.opts.CallTimeout)}
		case errors.As(err, &rpcErr):
			// The server answered with an error: it is alive, the call was wrong.
			return tools.Result{}, &tools.ToolError{Msg: fmt.Sprintf("%s: %s", label, rpcErr.Message)}
		}
		t.m.drop(c)
		t.m.log.Warn("mcp call failed; the server will be restarted on next use", "server", t.srv.cfg.id(), "tool", t.mcpName, "err", err)
		return tools.Result{}, &tools.ToolError{Msg: fmt.Sprintf("%s: the MCP server %q failed during the call (connection lost)", label, t.srv.cfg.Name)}
	}
	text := contentText(res.Content)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error"
		}
		return tools.Result{}, &tools.ToolError{Msg: text}
	}
	out := tools.Result{Content: text}
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err == nil {
			out.Data = raw
			if out.Content == "" {
				out.Content = string(raw)
			}
		}
	}
	return out, nil
}

// contentText joins the text of a result's content blocks; blocks without text are named so
// the model knows they were there.
func contentText(content []sdk.Content) string {
	var parts []string
	for _, c := range content {
		switch v := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, v.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, not shown]", v.MIMEType))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, not shown]", v.MIMEType))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s]", v.URI))
		case *sdk.EmbeddedResource:
			if v.Resource != nil && v.Resource.Text != "" {
				parts = append(parts, v.Resource.Text)
			} else if v.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s, not shown]", v.Resource.URI))
			}
		}
	}
	return strings.Join(parts, "\n")
}

// publicMsg is the part of an error that may reach the model: the first line, without the
// server's internals beyond what the error says.
func publicMsg(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}
