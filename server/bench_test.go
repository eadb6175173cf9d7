package server_test

import (
	"net/http"
	"testing"

	"github.com/agentsvc/svc/apitest"
)

// BenchmarkGetMe measures one authenticated read through the whole engine: contract routing,
// session lookup in the database, request validation, handler, and the test harness's
// response validation against openapi.yaml.
func BenchmarkGetMe(b *testing.B) {
	env := apitest.New(b)
	c, _ := env.UserClient("bench@example.com")
	b.ReportAllocs()
	for b.Loop() {
		if res := c.Get("/auth/me"); res.Status != http.StatusOK {
			b.Fatalf("status %d", res.Status)
		}
	}
}

// BenchmarkPatchAccount measures a validated, CSRF-checked write that updates a row.
func BenchmarkPatchAccount(b *testing.B) {
	env := apitest.New(b)
	c, _ := env.UserClient("bench@example.com")
	body := map[string]any{"display_name": "Bench"}
	b.ReportAllocs()
	for b.Loop() {
		if res := c.Patch("/auth/account", body); res.Status != http.StatusOK {
			b.Fatalf("status %d", res.Status)
		}
	}
}
