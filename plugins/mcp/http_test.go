package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/plugins/mcp"
	"github.com/agentsvc/svc/tools"
)

type addIn struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

type addOut struct {
	Sum int `json:"sum"`
}

// webServer runs the SDK's own streamable HTTP server on 127.0.0.1 with a tool "add"; every
// request must carry `Authorization: Bearer tok`. It returns the server, its URL and the count
// of requests that reached it.
func webServer(t *testing.T) (*sdk.Server, string, *atomic.Int64) {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "web", Version: "1.0.0"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Adds two integers."},
		func(ctx context.Context, req *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("X-Static") != "yes" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return s, srv.URL + "/mcp", &hits
}

func webConfig(url string) mcp.ServerConfig {
	return mcp.ServerConfig{Slug: "demo", Name: "web", URL: url, Headers: map[string]string{"X-Static": "yes"},
		Secrets: []mcp.SecretDecl{{Key: "token", Required: true}}}
}

// syncWeb declares the web server at url (its host allowed explicitly, the listing done with
// the token) and returns the registry its tools were synced into.
func syncWeb(t *testing.T, url string) *tools.Registry {
	t.Helper()
	m := newManager(t, mcp.Options{
		AllowedHosts: []string{"127.0.0.1"},
		ListSecrets:  func(mcp.ServerConfig) map[string]string { return map[string]string{"token": "tok"} },
	})
	if err := m.Add(webConfig(url)); err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if err := m.Sync(context.Background(), reg); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	return reg
}

func TestHTTPServerAllowedExplicitly(t *testing.T) {
	t.Parallel()
	s, url, _ := webServer(t)
	reg := syncWeb(t, url)
	spec, ok := reg.Spec("demo.McpWebAdd")
	if !ok || tools.ModelName(spec) != "demo:web_add" {
		t.Fatalf("registered %v", modelNames(reg))
	}
	var schema map[string]any
	if err := json.Unmarshal(tools.Schema(spec), &schema); err != nil {
		t.Fatal(err)
	}
	props, _ := schema["properties"].(map[string]any)
	if schema["type"] != "object" || props["a"] == nil || props["b"] == nil {
		t.Fatalf("schema = %v, want the SDK-inferred schema of addIn", schema)
	}

	add := executor(t, reg, "demo:web_add")
	res, err := add.Execute(context.Background(), tools.Call{Operation: mcp.Operation,
		Args: map[string]any{"a": 2, "b": 40}, Settings: map[string]any{"token": "tok"}})
	if err != nil {
		t.Fatalf("add: %v", err)
	}
	if string(res.Data) != `{"sum":42}` {
		t.Fatalf("add data = %s, content %q", res.Data, res.Content)
	}

	// Another user's wrong token gets its own connection, which the server refuses.
	_, err = add.Execute(context.Background(), tools.Call{Operation: mcp.Operation,
		Args: map[string]any{"a": 1, "b": 1}, Settings: map[string]any{"token": "wrong"}})
	toolErr(t, err, "unavailable")

	// A tool added on the server reaches the registry without a restart.
	sdk.AddTool(s, &sdk.Tool{Name: "negate", Description: "Negates."},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct {
			X int `json:"x"`
		}) (*sdk.CallToolResult, addOut, error) {
			return nil, addOut{Sum: -in.X}, nil
		})
	waitFor(t, reg, "demo:web_negate", true)
}

// TestHTTPServerToolRemoved: a tool the server drops leaves the registry (the SDK server sends
// notifications/tools/list_changed; no periodic refresh is configured).
func TestHTTPServerToolRemoved(t *testing.T) {
	t.Parallel()
	s, url, _ := webServer(t)
	reg := syncWeb(t, url)
	s.RemoveTools("add")
	waitFor(t, reg, "demo:web_add", false)
}

func TestHTTPPrivateURLRefusedUnlessAllowed(t *testing.T) {
	t.Parallel()
	_, url, hits := webServer(t)
	m := newManager(t, mcp.Options{Net: netguard.Options{}})
	if err := m.Add(webConfig(url)); err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	err := m.Sync(context.Background(), reg)
	if !errors.Is(err, netguard.ErrBlocked) || !errors.Is(err, svcerr.ErrInvalid) {
		t.Fatalf("Sync = %v, want a netguard refusal (ErrBlocked, ErrInvalid)", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback server got %d requests", n)
	}
	if got := modelNames(reg); len(got) != 0 {
		t.Fatalf("tools registered from a refused server: %v", got)
	}
}

// TestAnnotationsDeclareRepeatable: a tool's call is repeatable after a crash when the server
// annotates it read-only or idempotent; without annotations, or destructive and not idempotent,
// it is not (both hints default to false in the MCP specification).
func TestAnnotationsDeclareRepeatable(t *testing.T) {
	t.Parallel()
	s, url, _ := webServer(t)
	yes, no := true, false
	handler := func(ctx context.Context, req *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
		return nil, addOut{Sum: in.A + in.B}, nil
	}
	for name, a := range map[string]*sdk.ToolAnnotations{
		"lookup":  {ReadOnlyHint: true},
		"put":     {IdempotentHint: true, DestructiveHint: &yes},
		"append":  {DestructiveHint: &no},
		"erase":   {DestructiveHint: &yes, OpenWorldHint: &no},
		"titled":  {Title: "Titled only"},
		"cleanup": {IdempotentHint: true, ReadOnlyHint: true},
	} {
		sdk.AddTool(s, &sdk.Tool{Name: name, Description: name, Annotations: a}, handler)
	}
	reg := syncWeb(t, url)
	want := map[string]bool{"add": false, "lookup": true, "put": true, "append": false, "erase": false, "titled": false, "cleanup": true}
	for name, rep := range want {
		tl, ok := reg.LookupModelName("demo:web_" + name)
		if !ok {
			t.Fatalf("demo:web_%s not registered: %v", name, modelNames(reg))
		}
		if got := tl.Spec().Operations[0].Repeatable; got != rep {
			t.Errorf("%s: repeatable %v, want %v", name, got, rep)
		}
	}
}
