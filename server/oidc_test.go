package server_test

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/sso"
	"github.com/agentsvc/svc/internal/testkit/oidcop"
)

// ssoEnv is a service whose administrator configured provider "corp" against a real OpenID
// provider (zitadel's op server) on loopback, reachable because 127.0.0.1 is among
// oidc_allowed_hosts (the outbound screen refuses loopback otherwise).
type ssoEnv struct {
	env *apitest.Env
	adm *apitest.Client
	op  *oidcop.OP
}

var ssoUsers = []oidcop.User{
	{Subject: "sub-ada", Username: "ada", Password: "ada-pass", Email: "ada@corp.test", EmailVerified: true, Name: "Ada Corp", Groups: []string{"research", "ops"}},
	{Subject: "sub-root", Username: "root", Password: "root-pass", Email: "root@example.com", EmailVerified: true, Name: "Root"},
	{Subject: "sub-eve", Username: "eve", Password: "eve-pass", Email: "eve@corp.test", EmailVerified: false, Name: "Eve"},
}

func newSSOEnv(t *testing.T, env ...string) *ssoEnv {
	t.Helper()
	e := apitest.New(t, append([]string{"SVC_OIDC_ALLOWED_HOSTS=127.0.0.1"}, env...)...)
	redirect := sso.RedirectURI(e.App.Config.Current().PublicBase(), "corp")
	op, err := oidcop.Start(oidcop.Options{ClientID: "svc-client", ClientSecret: "svc-secret", RedirectURIs: []string{redirect}, Users: ssoUsers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Close)
	adm, _ := e.UserClient("root@example.com")
	return &ssoEnv{env: e, adm: adm, op: op}
}

func (s *ssoEnv) createProvider(t *testing.T, extra map[string]any) gen.OidcProvider {
	t.Helper()
	body := map[string]any{"slug": "corp", "display_name": "Corp SSO", "issuer_url": s.op.URL,
		"client_id": "svc-client", "client_secret": "svc-secret", "logout_url": s.op.URL + "/logged-out"}
	for k, v := range extra {
		body[k] = v
	}
	var out gen.OidcProviderResponse
	s.adm.Post("/oidc-providers", body).Expect(t, 201).Decode(t, &out)
	return out.Data.Provider
}

// signIn runs the redirect flow for c as the provider's user username and returns the
// callback's answer.
func (s *ssoEnv) signIn(t *testing.T, c *apitest.Client, username, password string) *apitest.Response {
	t.Helper()
	back := s.providerLeg(t, c, username, password)
	return c.Get(apitest.Prefix + back.Path[len(apitest.Prefix):] + "?" + back.RawQuery)
}

// providerLeg starts the flow and signs in at the provider, returning the redirect back to
// our callback.
func (s *ssoEnv) providerLeg(t *testing.T, c *apitest.Client, username, password string) *url.URL {
	t.Helper()
	res := c.Get("/auth/oidc/corp/start").Expect(t, 302)
	loc := res.Header.Get("Location")
	if !strings.HasPrefix(loc, s.op.URL) || !strings.Contains(loc, "code_challenge_method=S256") || !strings.Contains(loc, "nonce=") {
		t.Fatalf("start redirects to %q", loc)
	}
	back, err := s.op.SignIn(loc, username, password)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(back.Path, "/api/v1/auth/oidc/corp/callback") || back.Query().Get("code") == "" {
		t.Fatalf("the provider sends back to %s", back)
	}
	return back
}

func me(t *testing.T, c *apitest.Client) gen.User {
	t.Helper()
	var out gen.SessionResponse
	c.Get("/auth/me").Expect(t, 200).Decode(t, &out)
	c.CSRF = out.Data.CsrfToken
	return out.Data.User
}

// TestOIDCProviderAdmin: administrators add, list, change and remove providers; the client
// secret is sealed at rest and never returned; bad input is refused and writes nothing.
func TestOIDCProviderAdmin(t *testing.T) {
	t.Parallel()
	s := newSSOEnv(t)
	member, _ := s.env.UserClient("member@example.com")
	member.Get("/oidc-providers").Expect(t, 403, "FORBIDDEN")
	member.Post("/oidc-providers", map[string]any{"slug": "x", "display_name": "X", "issuer_url": "https://idp.example.com",
		"client_id": "a", "client_secret": "b"}).Expect(t, 403, "FORBIDDEN")

	p := s.createProvider(t, map[string]any{"scopes": []string{"email", "groups"}})
	if !p.ClientSecretSet || p.RedirectUri != sso.RedirectURI(s.env.App.Config.Current().PublicBase(), "corp") ||
		strings.Join(p.Scopes, " ") != "openid email groups" || p.AllowRegistration {
		t.Fatalf("created %+v", p)
	}
	raw := string(s.adm.Get("/oidc-providers").Expect(t, 200).Body)
	if strings.Contains(raw, "svc-secret") {
		t.Fatalf("the secret is returned: %s", raw)
	}
	row, err := s.env.App.Store.Principals.OIDCProviderBySlug(context.Background(), "corp")
	if err != nil || row.ClientSecretSealed == "" || strings.Contains(row.ClientSecretSealed, "svc-secret") {
		t.Fatalf("stored secret %q (%v)", row.ClientSecretSealed, err)
	}

	s.createProviderExpect(t, map[string]any{"slug": "corp"}, 409, "CONFLICT")
	s.createProviderExpect(t, map[string]any{"slug": "plain", "issuer_url": "http://idp.example.com"}, 422, "VALIDATION_ERROR")
	s.createProviderExpect(t, map[string]any{"slug": "Bad Slug"}, 422, "VALIDATION_ERROR")
	s.createProviderExpect(t, map[string]any{"slug": "map", "group_mappings": []map[string]any{{"claim_value": "x", "group_id": "1", "role": "owner"}}}, 422, "VALIDATION_ERROR")
	var list gen.OidcProviderListResponse
	s.adm.Get("/oidc-providers").Expect(t, 200).Decode(t, &list)
	if len(list.Data.Providers) != 1 {
		t.Fatalf("refusals wrote providers: %+v", list.Data.Providers)
	}

	var upd gen.OidcProviderResponse
	s.adm.Patch("/oidc-providers/corp", map[string]any{"display_name": "Corp", "allow_registration": true}).Expect(t, 200).Decode(t, &upd)
	if upd.Data.Provider.DisplayName != "Corp" || !upd.Data.Provider.AllowRegistration || !upd.Data.Provider.ClientSecretSet {
		t.Fatalf("updated %+v", upd.Data.Provider)
	}
	after, _ := s.env.App.Store.Principals.OIDCProviderBySlug(context.Background(), "corp")
	if after.ClientSecretSealed != row.ClientSecretSealed {
		t.Fatal("an update without client_secret changed the stored secret")
	}
	s.adm.Patch("/oidc-providers/nope", map[string]any{"display_name": "N"}).Expect(t, 404, "NOT_FOUND")

	var pub gen.PublicOidcProviderListResponse
	s.env.Client().Get("/auth/oidc/providers").Expect(t, 200).Decode(t, &pub)
	if len(pub.Data.Providers) != 1 || pub.Data.Providers[0].StartUrl != apitest.API+"/auth/oidc/corp/start" || !pub.Data.PasswordLoginEnabled {
		t.Fatalf("public list %+v", pub.Data)
	}
	s.adm.Delete("/oidc-providers/corp").Expect(t, 200)
	s.adm.Delete("/oidc-providers/corp").Expect(t, 404, "NOT_FOUND")
}

func (s *ssoEnv) createProviderExpect(t *testing.T, extra map[string]any, status int, code string) {
	t.Helper()
	body := map[string]any{"slug": "corp", "display_name": "Corp SSO", "issuer_url": s.op.URL, "client_id": "svc-client", "client_secret": "svc-secret"}
	for k, v := range extra {
		body[k] = v
	}
	s.adm.Post("/oidc-providers", body).Expect(t, status, code)
}

// TestOIDCSignInCreatesAccountAndMapsGroups: a first sign-in through a provider that allows
// registration creates the account (email verified), signs in with a session that works as a
// password session, and applies the group mapping with source oidc:corp; a later sign-in with
// fewer groups removes what the mapping granted, never a manual membership.
func TestOIDCSignInCreatesAccountAndMapsGroups(t *testing.T) {
	t.Parallel()
	s := newSSOEnv(t)
	var g1, g2 gen.GroupResponse
	s.adm.Post("/groups", map[string]any{"name": "Research"}).Expect(t, 201).Decode(t, &g1)
	s.adm.Post("/groups", map[string]any{"name": "Ops"}).Expect(t, 201).Decode(t, &g2)
	s.createProvider(t, map[string]any{"allow_registration": true, "groups_claim": "groups", "group_mappings": []map[string]any{
		{"claim_value": "research", "group_id": g1.Data.Group.Id, "role": "member"},
		{"claim_value": "ops", "group_id": g2.Data.Group.Id, "role": "admin"},
	}})

	c := s.env.Client()
	res := s.signIn(t, c, "ada", "ada-pass").Expect(t, 302)
	if res.Header.Get("Location") != apitest.Prefix+"/" {
		t.Fatalf("signed in to %q", res.Header.Get("Location"))
	}
	u := me(t, c)
	if u.Email != "ada@corp.test" || !u.EmailVerified || u.DisplayName != "Ada Corp" {
		t.Fatalf("account %+v", u)
	}
	members := func(gid int64) map[string]gen.GroupMember {
		var out gen.GroupMemberListResponse
		s.adm.Get("/groups/"+strconv.FormatInt(gid, 10)+"/members").Expect(t, 200).Decode(t, &out)
		m := map[string]gen.GroupMember{}
		for _, x := range out.Data.Members {
			m[string(x.Email)] = x
		}
		return m
	}
	if m := members(g1.Data.Group.Id)["ada@corp.test"]; m.Role != "member" || m.Source != "oidc:corp" {
		t.Fatalf("research membership %+v", m)
	}
	if m := members(g2.Data.Group.Id)["ada@corp.test"]; m.Role != "admin" || m.Source != "oidc:corp" {
		t.Fatalf("ops membership %+v", m)
	}
	if m := members(g1.Data.Group.Id)["root@example.com"]; m.Source != "manual" {
		t.Fatalf("owner membership %+v", m)
	}
	c.Post("/auth/logout", nil).Expect(t, 200)
	c.Get("/auth/me").Expect(t, 401, "UNAUTHENTICATED")

	// The claim loses "ops": the next sign-in removes that mapped membership only.
	ssoUsers2 := ssoUsers[0]
	ssoUsers2.Groups = []string{"research"}
	s.op.SetUser(ssoUsers2)
	c2 := s.env.Client()
	s.signIn(t, c2, "ada", "ada-pass").Expect(t, 302)
	if me(t, c2).Id != u.Id {
		t.Fatal("the second sign-in did not find the same account")
	}
	if _, ok := members(g2.Data.Group.Id)["ada@corp.test"]; ok {
		t.Fatal("the ops membership stayed after the claim lost it")
	}
	if m := members(g1.Data.Group.Id)["ada@corp.test"]; m.Source != "oidc:corp" {
		t.Fatalf("research membership after the second sign-in %+v", m)
	}
}

// TestOIDCRefusals: a replayed state, a tampered ID token, an ID token for another audience,
// an unverified email and registration not allowed are refused, and none signs in.
func TestOIDCRefusals(t *testing.T) {
	t.Parallel()
	s := newSSOEnv(t)
	s.createProvider(t, map[string]any{"allow_registration": true})

	// Replayed state: the first use signs in, the second is refused.
	c := s.env.Client()
	back := s.providerLeg(t, c, "ada", "ada-pass")
	path := apitest.Prefix + back.Path[len(apitest.Prefix):] + "?" + back.RawQuery
	c.Get(path).Expect(t, 302)
	s.env.Client().Get(path).Expect(t, 401, "UNAUTHENTICATED")
	s.env.Client().Get("/auth/oidc/corp/callback?state=forged&code=x").Expect(t, 401, "UNAUTHENTICATED")

	refused := func(name string, setup, undo func(), username, password string, status int, code string) {
		t.Helper()
		setup()
		defer undo()
		c := s.env.Client()
		s.signIn(t, c, username, password).Expect(t, status, code)
		c.Get("/auth/me").Expect(t, 401, "UNAUTHENTICATED")
	}
	none := func() {}
	refused("tampered", func() { s.op.SetTamper(true) }, func() { s.op.SetTamper(false) }, "ada", "ada-pass", 401, "UNAUTHENTICATED")
	refused("audience", func() { s.op.SetAudience("another-client") }, func() { s.op.SetAudience("") }, "ada", "ada-pass", 401, "UNAUTHENTICATED")
	refused("unverified", none, none, "eve", "eve-pass", 403, "FORBIDDEN")
	if _, err := s.env.App.Accounts.UserByEmail(context.Background(), "eve@corp.test"); err == nil {
		t.Fatal("an account was created for an unverified email")
	}
	s.adm.Patch("/oidc-providers/corp", map[string]any{"allow_registration": false}).Expect(t, 200)
	s.op.SetUser(oidcop.User{Subject: "sub-new", Username: "new", Password: "new-pass", Email: "new@corp.test", EmailVerified: true})
	refused("registration closed", none, none, "new", "new-pass", 403, "FORBIDDEN")
}

// TestOIDCLinkNeedsPassword: a first sign-in whose verified email matches an existing account
// does not sign in; the ticket links only with that account's password (a wrong one keeps
// it), once; later sign-ins need no password. Password sign-in switched off refuses members
// but keeps the administrators' break-glass path.
func TestOIDCLinkNeedsPassword(t *testing.T) {
	t.Parallel()
	s := newSSOEnv(t)
	s.createProvider(t, nil)
	member, mu := s.env.UserClient("ada@corp.test")
	_ = member

	c := s.env.Client()
	res := s.signIn(t, c, "ada", "ada-pass").Expect(t, 302)
	loc, _ := url.Parse(res.Header.Get("Location"))
	ticket := loc.Query().Get("oidc_link")
	if loc.Path != apitest.Prefix+"/login" || ticket == "" || res.Header.Get("Set-Cookie") != "" {
		t.Fatalf("callback for an existing email: %v %v", loc, res.Header)
	}
	c.Get("/auth/me").Expect(t, 401, "UNAUTHENTICATED")
	c.Post("/auth/oidc/link", map[string]any{"ticket": ticket, "password": "wrong password"}).Expect(t, 401, "UNAUTHENTICATED")
	var out gen.SessionResponse
	c.Post("/auth/oidc/link", map[string]any{"ticket": ticket, "password": "password-ada@corp.test"}).Expect(t, 200).Decode(t, &out)
	if out.Data.User.Id != mu.Id {
		t.Fatalf("linked to %+v", out.Data.User)
	}
	s.env.Client().Post("/auth/oidc/link", map[string]any{"ticket": ticket, "password": "password-ada@corp.test"}).Expect(t, 401, "UNAUTHENTICATED")

	c2 := s.env.Client()
	s.signIn(t, c2, "ada", "ada-pass").Expect(t, 302)
	if me(t, c2).Id != mu.Id {
		t.Fatal("the linked identity does not sign in to the account")
	}

	// Password sign-in off: members are refused (after a correct password), administrators not.
	s.adm.Patch("/runtime-settings", map[string]any{"settings": map[string]any{"password_login_enabled": false}}).Expect(t, 200)
	s.env.Client().Post("/auth/login", map[string]any{"email": "ada@corp.test", "password": "password-ada@corp.test"}).Expect(t, 403, "FORBIDDEN")
	s.env.Client().Login("root@example.com", "password-root@example.com")
	var pub gen.PublicOidcProviderListResponse
	s.env.Client().Get("/auth/oidc/providers").Expect(t, 200).Decode(t, &pub)
	if pub.Data.PasswordLoginEnabled {
		t.Fatal("the sign-in page still offers the password form")
	}
}

// TestOIDCScreen: without oidc_allowed_hosts, the outbound screen refuses a loopback issuer.
func TestOIDCScreen(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	op, err := oidcop.Start(oidcop.Options{ClientID: "c", ClientSecret: "s", RedirectURIs: []string{"http://localhost/cb"}})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	adm, _ := e.UserClient("root@example.com")
	adm.Post("/oidc-providers", map[string]any{"slug": "corp", "display_name": "Corp", "issuer_url": op.URL,
		"client_id": "c", "client_secret": "s"}).Expect(t, 201)
	e.Client().Get("/auth/oidc/corp/start").Expect(t, 503, "SERVICE_UNAVAILABLE")
	e.Client().Get("/auth/oidc/nope/start").Expect(t, 404, "NOT_FOUND")
}
