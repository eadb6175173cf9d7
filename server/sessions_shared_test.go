package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/store/storetest"
)

// TestPasswordChangeEndsSessionsAcrossInstances: two API processes on one database; a session
// opened and used on A (so A's session cache holds it) ends on A once a password change made
// through B ends the user's other sessions: A's cache follows another process's change within
// its one-second window (docs/decisions.md, "Store and databases"), and the session B
// changed the password with stays valid.
func TestPasswordChangeEndsSessionsAcrossInstances(t *testing.T) {
	t.Parallel()
	a := apitest.New(t)
	b := apitest.NewWith(t, apitest.Options{Store: storetest.Twin(t, a.App.Store)})
	onA, _ := a.UserClient("ada@example.com")
	for range 3 {
		onA.Get("/auth/me").Expect(t, http.StatusOK) // cached on A from the first read
	}
	onB := b.Client()
	onB.Login("ada@example.com", "password-ada@example.com")
	onB.Patch("/auth/password", map[string]any{"current_password": "password-ada@example.com", "new_password": "a-new-password"}).
		Expect(t, http.StatusOK)

	// The window is one second; give a loaded machine five before calling it a failure.
	deadline := time.Now().Add(5 * time.Second)
	for {
		res := onA.Get("/auth/me")
		if res.Status == http.StatusUnauthorized {
			res.Expect(t, http.StatusUnauthorized, "UNAUTHENTICATED")
			break
		}
		res.Expect(t, http.StatusOK)
		if time.Now().After(deadline) {
			t.Fatal("the session ended through B is still accepted by A after 5 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	onB.Get("/auth/me").Expect(t, http.StatusOK)
	onA.Login("ada@example.com", "a-new-password")
	onA.Get("/auth/me").Expect(t, http.StatusOK)
}
