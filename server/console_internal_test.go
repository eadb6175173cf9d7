package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gin-gonic/gin"
)

func consoleEngine(prefix string, files fstest.MapFS) *gin.Engine {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	con := newConsole(prefix, files)
	e := gin.New()
	e.GET(prefix+"/api/v1/agents", func(c *gin.Context) { c.String(200, "api") })
	e.NoRoute(func(c *gin.Context) {
		if !con.serve(c) {
			s.fail(c, errNotFoundForTest)
		}
	})
	return e
}

var errNotFoundForTest = &notFoundErr{}

type notFoundErr struct{}

func (*notFoundErr) Error() string { return "not found" }

func get(e http.Handler, method, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

func TestConsoleServesBundleWithFallback(t *testing.T) {
	t.Parallel()
	files := fstest.MapFS{
		"index.html":         {Data: []byte(`<meta name="svc-prefix" content="__SVC_PREFIX__"><script src="__SVC_PREFIX__/assets/app-X.js"></script>`)},
		"assets/app-X.js":    {Data: []byte("console.log(1)")},
		".placeholder":       {Data: []byte("marker")},
		"assets/nested/x.js": {Data: []byte("x")},
	}
	e := consoleEngine("/svc", files)
	// /svc/plugins is the console's Plugins page (reloading it answered the JSON 404: the plugin
	// frontends below /svc/plugins/ took the bare path too); /svc/apps/x shows a plugin's page.
	for _, p := range []string{"/svc/", "/svc/agents/3", "/svc/reset-password?selector=a&token=b", "/svc/confirm-email?selector=a&token=b", "/svc/plugins", "/svc/apps/maps"} {
		rec := get(e, http.MethodGet, p)
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `content="/svc"`) || !strings.Contains(rec.Body.String(), `src="/svc/assets/app-X.js"`) {
			t.Fatalf("%s: %d %s", p, rec.Code, rec.Body)
		}
		csp := rec.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "connect-src 'self'") ||
			!strings.Contains(csp, "frame-src 'self'") {
			t.Fatalf("%s: CSP %q", p, csp)
		}
		if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
			t.Fatalf("%s: type %q", p, rec.Header().Get("Content-Type"))
		}
	}
	if rec := get(e, http.MethodGet, "/svc/assets/app-X.js"); rec.Code != 200 || rec.Body.String() != "console.log(1)" ||
		!strings.Contains(rec.Header().Get("Content-Type"), "javascript") || !strings.Contains(rec.Header().Get("Cache-Control"), "immutable") {
		t.Fatalf("asset: %d %q %v", rec.Code, rec.Body, rec.Header())
	}
	if rec := get(e, http.MethodGet, "/svc"); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/svc/" {
		t.Fatalf("bare prefix: %d %v", rec.Code, rec.Header())
	}
	if rec := get(e, http.MethodGet, "/svc/api/v1/agents"); rec.Body.String() != "api" {
		t.Fatalf("the API route was shadowed: %s", rec.Body)
	}
	// Not the console's: the API, schemas, plugins, hub and health paths, other methods, other
	// prefixes and missing files keep the JSON 404.
	for _, c := range []struct{ method, path string }{
		{"GET", "/svc/api/v1/nope"}, {"GET", "/svc/api/"}, {"GET", "/svc/schemas/x.json"}, {"GET", "/svc/plugins/a/b"},
		{"GET", "/svc/.well-known/mercure"}, {"GET", "/svc/healthz"}, {"GET", "/svc/readyz"}, {"GET", "/svc/metrics"},
		{"POST", "/svc/agents"}, {"GET", "/other/"},
		{"GET", "/svc/assets/missing.js"}, {"GET", "/svcx/"},
	} {
		rec := get(e, c.method, c.path)
		if rec.Code != 404 && rec.Code != 500 || strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
			t.Fatalf("%s %s answered %d %s", c.method, c.path, rec.Code, rec.Header().Get("Content-Type"))
		}
	}
}

func TestConsoleNotBuiltSaysHowToBuild(t *testing.T) {
	t.Parallel()
	e := consoleEngine("/svc", fstest.MapFS{".placeholder": {Data: []byte("marker")}})
	rec := get(e, http.MethodGet, "/svc/agents")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "make web") || rec.Header().Get("Content-Security-Policy") != consoleCSP {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

func TestConsoleAtHostRoot(t *testing.T) {
	t.Parallel()
	e := consoleEngine("", fstest.MapFS{"index.html": {Data: []byte(`p=__SVC_PREFIX__;`)}})
	if rec := get(e, http.MethodGet, "/agents"); rec.Code != 200 || rec.Body.String() != "p=;" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if rec := get(e, http.MethodGet, "/api/v1/x"); rec.Code == 200 {
		t.Fatal("the API was shadowed at the host root")
	}
}
