package server_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

// TestNewUserWalkthrough is the "done when": register, log in, read /auth/me, and the
// envelope and code of each refusal.
func TestNewUserWalkthrough(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	c := env.Client()
	u := c.Register("Ada@Example.com", "correct horse battery")
	if u.Email != "ada@example.com" || !u.IsAdmin || u.EmailVerified {
		t.Fatalf("first user = %+v; want lowercased address, administrator, unverified", u)
	}
	c.Get("/auth/me").Expect(t, 401, "UNAUTHENTICATED")
	c.Login("ada@example.com", "correct horse battery")
	var me gen.SessionResponse
	c.Get("/auth/me").Expect(t, 200).Decode(t, &me)
	if me.Data.User.Id != u.Id || me.Data.CsrfToken != c.CSRF || c.CSRF == "" {
		t.Fatalf("me = %+v, csrf %q", me.Data, c.CSRF)
	}
	patch := func(r apitest.Request) *apitest.Response {
		r.Method, r.Path = http.MethodPatch, "/auth/account"
		return c.Do(r)
	}
	patch(apitest.Request{Body: map[string]any{"display_name": "Ada"}, NoCSRF: true}).Expect(t, 403, "CSRF_TOKEN_INVALID")
	patch(apitest.Request{Body: map[string]any{"display_name": "Ada"}, NoCSRF: true, Header: map[string]string{"X-CSRF-Token": "forged"}}).Expect(t, 403, "CSRF_TOKEN_INVALID")
	patch(apitest.Request{Body: `{"display_name": "Ada"`}).Expect(t, 400, "BAD_REQUEST")
	patch(apitest.Request{Body: map[string]any{"display_name": "Ada", "nmae": 1}}).Expect(t, 422, "VALIDATION_ERROR")
	patch(apitest.Request{Body: map[string]any{"display_name": 42}}).Expect(t, 422, "VALIDATION_ERROR")
	patch(apitest.Request{Body: map[string]any{"display_name": "   "}}).Expect(t, 422, "VALIDATION_ERROR")
	for _, ct := range []string{"application/xml", "text/plain", "application/x-www-form-urlencoded"} {
		res := patch(apitest.Request{Body: `{"display_name": "Ada"}`, ContentType: ct}).Expect(t, 415, "UNSUPPORTED_MEDIA_TYPE")
		if !strings.Contains(string(res.Body), ct) || !strings.Contains(string(res.Body), "application/json") {
			t.Errorf("415 message does not name the type sent and the type accepted: %s", res.Body)
		}
	}
	var upd gen.UserResponse
	patch(apitest.Request{Body: map[string]any{"display_name": "Ada L."}}).Expect(t, 200).Decode(t, &upd)
	if upd.Data.User.DisplayName != "Ada L." {
		t.Fatalf("display name not changed: %+v", upd.Data.User)
	}
	c.Get("/no/such/route").Expect(t, 404, "NOT_FOUND")
	// Outside the API: GET of a page path is the web console (server/console.go); anything
	// else, and the reserved folders, answer the envelope.
	c.Post(apitest.Prefix+"/elsewhere", nil).Expect(t, 404, "NOT_FOUND")
	c.Get(apitest.Prefix+"/schemas/elsewhere").Expect(t, 404, "NOT_FOUND")
	c.Do(apitest.Request{Method: http.MethodPut, Path: "/auth/me"}).Expect(t, 405, "METHOD_NOT_ALLOWED")

	c.Post("/auth/logout", nil).Expect(t, 200)
	c.Get("/auth/me").Expect(t, 401, "UNAUTHENTICATED")
}

func TestRegistration(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	first := env.Client().Register("first@example.com", "password-1")
	second := env.Client().Register("second@example.com", "password-2")
	if !first.IsAdmin || second.IsAdmin {
		t.Fatalf("admin flags: first %v second %v; only the first account is an administrator", first.IsAdmin, second.IsAdmin)
	}
	c := env.Client()
	c.Post("/auth/register", map[string]any{"email": "SECOND@example.com", "password": "password-3"}).Expect(t, 409, "CONFLICT")
	c.Post("/auth/register", map[string]any{"email": "x@example.com", "password": "short"}).Expect(t, 422, "VALIDATION_ERROR")
	c.Post("/auth/register", map[string]any{"email": "not-an-address", "password": "password-3"}).Expect(t, 422, "VALIDATION_ERROR")
	c.Post("/auth/register", map[string]any{"password": "password-3"}).Expect(t, 422, "VALIDATION_ERROR")

	closed := apitest.New(t, "SVC_ALLOW_REGISTRATION=false")
	closed.Client().Post("/auth/register", map[string]any{"email": "a@example.com", "password": "password-1"}).Expect(t, 403, "FORBIDDEN")
	var cfg gen.PublicConfigResponse
	closed.Client().Get("/config").Expect(t, 200).Decode(t, &cfg)
	if cfg.Data.Config.AllowRegistration || cfg.Data.Config.AppPrefix != apitest.Prefix || cfg.Data.Config.Push != gen.PublicConfigPushEmbedded {
		t.Fatalf("config = %+v", cfg.Data.Config)
	}
}

func TestLoginFailuresAndRateLimit(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	c := env.Client()
	c.Register("ada@example.com", "correct horse")
	bad := map[string]any{"email": "ada@example.com", "password": "wrong horse"}
	c.Post("/auth/login", bad).Expect(t, 401, "UNAUTHENTICATED")
	c.Post("/auth/login", map[string]any{"email": "nobody@example.com", "password": "whatever1"}).Expect(t, 401, "UNAUTHENTICATED")
	for i := 2; i < 10; i++ {
		c.Post("/auth/login", bad).Expect(t, 401)
	}
	res := c.Post("/auth/login", map[string]any{"email": "ada@example.com", "password": "correct horse"}).Expect(t, 429, "TOO_MANY_REQUESTS")
	if ra := res.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("Retry-After = %q", ra)
	}
	other := env.Client()
	other.IP = "198.51.100.7"
	other.Login("ada@example.com", "correct horse") // another address has its own budget
	env.Clock.Advance(2 * time.Minute)              // the sliding window has fully passed
	c.Login("ada@example.com", "correct horse")
}

var linkRE = regexp.MustCompile(`https?://[^\s"<>]+`)

// mailedLink waits for the n-th message and returns the first link in its text.
func mailedLink(t *testing.T, env *apitest.Env, n int, to string) *url.URL {
	t.Helper()
	msgs := env.WaitMail(n)
	m := msgs[n-1]
	if len(m.To) != 1 || m.To[0] != to {
		t.Fatalf("message %d went to %v, want %s", n, m.To, to)
	}
	raw := linkRE.FindString(m.TextBody)
	if raw == "" {
		t.Fatalf("no link in message %q: %s", m.Subject, m.TextBody)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestVerificationLink(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	c := env.Client()
	c.Register("ada@example.com", "correct horse")
	link := mailedLink(t, env, 1, "ada@example.com")
	if !strings.HasPrefix(link.Path, apitest.API+"/auth/verify/") {
		t.Fatalf("verification link %s does not target the verify operation", link)
	}
	path := strings.TrimPrefix(link.Path, apitest.API) + "?" + link.RawQuery
	c.Get(strings.Replace(path, "token=", "token=x", 1)).Expect(t, 422, "VALIDATION_ERROR")
	var out gen.UserResponse
	c.Get(path).Expect(t, 200).Decode(t, &out)
	if !out.Data.User.EmailVerified {
		t.Fatal("account not verified by its link")
	}
	c.Get(path).Expect(t, 422, "VALIDATION_ERROR") // single use

	c.Login("ada@example.com", "correct horse")
	c.Post("/auth/verification/resend", nil).Expect(t, 409, "CONFLICT")

	d := env.Client()
	d.Register("bob@example.com", "correct horse")
	env.WaitMail(2) // the outbox sends a batch concurrently: the first link must be out before the resend
	d.Login("bob@example.com", "correct horse")
	d.Post("/auth/verification/resend", nil).Expect(t, 200)
	fresh := mailedLink(t, env, 3, "bob@example.com")
	d.Get(strings.TrimPrefix(fresh.Path, apitest.API)+"?"+fresh.RawQuery).Expect(t, 200)
}

func TestPasswordResetAndChange(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	c := env.Client()
	c.Register("ada@example.com", "correct horse")
	c.Login("ada@example.com", "correct horse")
	env.WaitMail(1) // verification

	anon := env.Client()
	anon.Post("/auth/forgot-password", map[string]any{"email": "nobody@example.com"}).Expect(t, 200)
	anon.Post("/auth/forgot-password", map[string]any{"email": "ADA@example.com"}).Expect(t, 200)
	link := mailedLink(t, env, 2, "ada@example.com")
	if got := len(env.Mails()); got != 2 {
		t.Fatalf("%d messages; an unknown address must not be mailed", got)
	}
	q := link.Query()
	anon.Post("/auth/reset-password", map[string]any{"selector": q.Get("selector"), "token": "wrong", "new_password": "new horse battery"}).Expect(t, 422)
	anon.Post("/auth/reset-password", map[string]any{"selector": q.Get("selector"), "token": q.Get("token"), "new_password": "new horse battery"}).Expect(t, 200)
	anon.Post("/auth/reset-password", map[string]any{"selector": q.Get("selector"), "token": q.Get("token"), "new_password": "third horse battery"}).Expect(t, 422)
	c.Get("/auth/me").Expect(t, 401) // a reset ends every session
	anon.Post("/auth/login", map[string]any{"email": "ada@example.com", "password": "correct horse"}).Expect(t, 401)
	c.Login("ada@example.com", "new horse battery")

	second := env.Client()
	second.Login("ada@example.com", "new horse battery")
	c.Patch("/auth/password", map[string]any{"current_password": "nope nope", "new_password": "fourth horse"}).Expect(t, 422, "VALIDATION_ERROR")
	c.Patch("/auth/password", map[string]any{"current_password": "new horse battery", "new_password": "fourth horse"}).Expect(t, 200)
	c.Get("/auth/me").Expect(t, 200)
	second.Get("/auth/me").Expect(t, 401) // other sessions end
	env.Client().Login("ada@example.com", "fourth horse")
}

func TestEmailChange(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	c, _ := env.UserClient("ada@example.com")
	env.UserClient("taken@example.com")
	env.WaitMail(2)
	pw := "password-ada@example.com"
	c.Post("/auth/email/change-request", map[string]any{"new_email": "taken@example.com", "password": pw}).Expect(t, 409, "CONFLICT")
	c.Post("/auth/email/change-request", map[string]any{"new_email": "ada@new.example.com", "password": "wrong password"}).Expect(t, 422)
	var pending gen.UserResponse
	c.Post("/auth/email/change-request", map[string]any{"new_email": "ada@new.example.com", "password": pw}).Expect(t, 200).Decode(t, &pending)
	if pending.Data.User.Email != "ada@example.com" || pending.Data.User.PendingEmail == nil || *pending.Data.User.PendingEmail != "ada@new.example.com" {
		t.Fatalf("pending change = %+v", pending.Data.User)
	}
	link := mailedLink(t, env, 3, "ada@new.example.com")
	q := link.Query()
	var done gen.UserResponse
	env.Client().Post("/auth/email/confirm", map[string]any{"selector": q.Get("selector"), "token": q.Get("token")}).Expect(t, 200).Decode(t, &done)
	if done.Data.User.Email != "ada@new.example.com" || done.Data.User.PendingEmail != nil || !done.Data.User.EmailVerified {
		t.Fatalf("after confirm = %+v", done.Data.User)
	}
	env.Client().Post("/auth/email/confirm", map[string]any{"selector": q.Get("selector"), "token": q.Get("token")}).Expect(t, 422)
	env.Client().Login("ada@new.example.com", pw)
}

func TestBodyTooLarge(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	c := env.Client()
	big := `{"email":"a@example.com","password":"` + strings.Repeat("x", 2<<20) + `"}`
	c.Post("/auth/register", big).Expect(t, 413, "PAYLOAD_TOO_LARGE")
}

// TestMailedLinksIgnoreRequestHeaders: a forgot-password request (whose Host is httptest's
// example.com) carrying forwarding headers mails a link to the configured origin, never to the
// request's host.
func TestMailedLinksIgnoreRequestHeaders(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		env  []string
		want string
	}{
		{"development without app_url", nil, "http://localhost:8080" + apitest.Prefix + "/reset-password"},
		{"app_url", []string{"SVC_APP_URL=https://svc.example/base"}, "https://svc.example/base/reset-password"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := apitest.New(t, tt.env...)
			env.Client().Register("ada@example.com", "correct horse")
			env.WaitMail(1) // verification
			env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/auth/forgot-password",
				Body:   map[string]any{"email": "ada@example.com"},
				Header: map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "attacker.example"},
			}).Expect(t, 200)
			link := mailedLink(t, env, 2, "ada@example.com")
			if got := link.Scheme + "://" + link.Host + link.Path; got != tt.want {
				t.Fatalf("reset link %s, want it at %s", link, tt.want)
			}
		})
	}
}

// TestForwardedForTrustedOnlyFromProxies: by default X-Forwarded-For is ignored, so varying it
// does not escape the auth rate limit; with trusted_proxies covering the peer, each forwarded
// client has its own budget.
func TestForwardedForTrustedOnlyFromProxies(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		env     []string
		limited bool
	}{
		{"default", nil, true},
		{"trusted proxy", []string{"SVC_TRUSTED_PROXIES=127.0.0.1, 192.0.2.0/24"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := apitest.New(t, tt.env...)
			c := env.Client() // the peer address is 192.0.2.10
			for i := range 11 {
				res := c.Do(apitest.Request{Method: http.MethodPost, Path: "/auth/forgot-password",
					Body:   map[string]any{"email": "nobody@example.com"},
					Header: map[string]string{"X-Forwarded-For": fmt.Sprintf("203.0.113.%d", i+1)}})
				if i < 10 || !tt.limited {
					res.Expect(t, 200)
				} else {
					res.Expect(t, 429, "TOO_MANY_REQUESTS")
				}
			}
		})
	}
}
