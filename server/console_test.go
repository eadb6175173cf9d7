package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
)

// The console is served at {prefix}/ by the real engine, bundle built or not, with its own
// Content-Security-Policy, and never in place of the API's JSON 404.
func TestConsoleRoute(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	h := env.App.HTTP.Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, apitest.Prefix+"/reset-password?selector=a&token=b", nil))
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") ||
		!strings.Contains(rec.Header().Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("console: %d %v", rec.Code, rec.Header())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, apitest.API+"/no/such/route", nil))
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), `"NOT_FOUND"`) {
		t.Fatalf("api 404: %d %s", rec.Code, rec.Body)
	}
}
