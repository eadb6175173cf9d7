// Package oidcop runs a real OpenID provider on loopback for the tests and the browser suite:
// zitadel/oidc's op server (pkg/op) over its example in-memory storage and login form, with the
// test's users and one web client. Nothing here is mocked on our side: discovery, the
// authorization endpoint, the login form, the token endpoint (PKCE checked) and the keys are
// the provider's own. Two switches make it misbehave the way a compromised or misconfigured
// provider (or a tampering network) would: Tamper corrupts the ID token's signature on its way
// out of the token endpoint, Audience re-signs ID tokens (with the provider's key) for another audience.
//
// Only tests and scripts/oidcop import it (the zitadel module is a test-time dependency).
package oidcop

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// User is an account at the provider.
type User struct {
	Subject       string
	Username      string
	Password      string
	Email         string
	EmailVerified bool
	Name          string
	Groups        []string // the "groups" claim
}

// Options configure the provider.
type Options struct {
	ClientID, ClientSecret string
	RedirectURIs           []string
	Users                  []User
	// Addr is the loopback address to listen on ("127.0.0.1:0" when empty).
	Addr string
}

// OP is a running provider.
type OP struct {
	URL string // the issuer
	srv *httptest.Server

	mu       sync.Mutex
	tamper   bool
	audience string
	users    map[string]User
	store    *store
}

// Start starts the provider; Close stops it.
func Start(o Options) (*OP, error) {
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &OP{URL: "http://" + ln.Addr().String(), users: map[string]User{}}
	us := userStore{p: p}
	for _, u := range o.Users {
		p.users[u.Subject] = u
	}
	st := &store{Storage: storage.NewStorageWithClients(us, map[string]*storage.Client{
		o.ClientID: storage.WebClient(o.ClientID, o.ClientSecret, o.RedirectURIs...),
	}), p: p}
	p.store = st
	h := exampleop.SetupServer(p.URL, st, nil, false)
	p.srv = httptest.NewUnstartedServer(p.tamperTokens(h))
	p.srv.Listener = ln
	p.srv.Start()
	return p, nil
}

// Close stops the provider.
func (p *OP) Close() { p.srv.Close() }

// SetTamper makes the token endpoint corrupt the ID token's signature (true) or not.
func (p *OP) SetTamper(on bool) { p.mu.Lock(); p.tamper = on; p.mu.Unlock() }

// SetAudience makes the token endpoint answer ID tokens signed for aud alone ("": as issued).
func (p *OP) SetAudience(aud string) { p.mu.Lock(); p.audience = aud; p.mu.Unlock() }

// tamperTokens rewrites the token endpoint's answer while a switch is on: Tamper changes one
// character of the ID token's signature; Audience re-signs the ID token, with the provider's own
// signing key, for that audience alone (a token the provider issued to another client).
func (p *OP) tamperTokens(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		tamper, aud := p.tamper, p.audience
		p.mu.Unlock()
		if (!tamper && aud == "") || r.URL.Path != "/oauth/token" {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		var m map[string]any
		if json.Unmarshal(body, &m) == nil {
			if t, ok := m["id_token"].(string); ok && len(t) > 10 {
				if aud != "" {
					t = p.resign(r.Context(), t, aud)
				}
				if tamper {
					c := t[len(t)-5]
					repl := byte('A')
					if c == 'A' {
						repl = 'B'
					}
					t = t[:len(t)-5] + string(repl) + t[len(t)-4:]
				}
				m["id_token"] = t
				body, _ = json.Marshal(m)
			}
		}
		for k, v := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// resign returns the ID token t with its audience replaced by aud (and azp dropped), signed
// with the provider's signing key; t unchanged when that fails.
func (p *OP) resign(ctx context.Context, t, aud string) string {
	parts := strings.Split(t, ".")
	if len(parts) != 3 {
		return t
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return t
	}
	var claims map[string]any
	if json.Unmarshal(raw, &claims) != nil {
		return t
	}
	claims["aud"] = []string{aud}
	delete(claims, "azp")
	payload, _ := json.Marshal(claims)
	key, err := p.store.SigningKey(ctx)
	if err != nil {
		return t
	}
	signer, err := op.SignerFromKey(key)
	if err != nil {
		return t
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return t
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		return t
	}
	return out
}

// SignIn plays the browser at the provider: it follows authURL (the redirect of our start
// endpoint) to the login form, posts username and password, and returns the redirect back to
// the client (our callback with code and state) without following it.
func (p *OP) SignIn(authURL, username, password string) (*url.URL, error) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if !strings.HasPrefix(req.URL.String(), p.URL) {
			return http.ErrUseLastResponse // back to the client: stop here
		}
		return nil
	}}
	res, err := c.Get(authURL)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	id := res.Request.URL.Query().Get("authRequestID")
	if id == "" {
		return nil, fmt.Errorf("oidcop: no login form (status %d at %s)", res.StatusCode, res.Request.URL)
	}
	form := url.Values{"id": {id}, "username": {username}, "password": {password}}
	res, err = c.Post(p.URL+"/login/username", "application/x-www-form-urlencoded", bytes.NewBufferString(form.Encode()))
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusFound || loc == "" {
		b, _ := io.ReadAll(res.Body)
		return nil, fmt.Errorf("oidcop: sign-in refused (status %d): %.200s", res.StatusCode, b)
	}
	return url.Parse(loc)
}

// userStore serves the test's users to the example storage.
type userStore struct{ p *OP }

func (u userStore) ExampleClientID() string { return "service" }

func (u userStore) GetUserByID(id string) *storage.User {
	u.p.mu.Lock()
	defer u.p.mu.Unlock()
	if x, ok := u.p.users[id]; ok {
		return toUser(x)
	}
	return nil
}

func (u userStore) GetUserByUsername(name string) *storage.User {
	u.p.mu.Lock()
	defer u.p.mu.Unlock()
	for _, x := range u.p.users {
		if x.Username == name {
			return toUser(x)
		}
	}
	return nil
}

func toUser(x User) *storage.User {
	first, last, _ := strings.Cut(x.Name, " ")
	return &storage.User{ID: x.Subject, Username: x.Username, Password: x.Password, FirstName: first, LastName: last,
		Email: x.Email, EmailVerified: x.EmailVerified}
}

// store is the example storage with the claims the tests need in the ID token itself (email,
// email_verified, name, groups) and the Audience switch.
type store struct {
	*storage.Storage
	p *OP
}

// SetUserinfoFromScopes puts the user's email, verification, name and groups into every ID
// token (the example puts only the subject there when an access token is issued too).
func (s *store) SetUserinfoFromScopes(ctx context.Context, ui *oidc.UserInfo, userID, clientID string, scopes []string) error {
	if err := s.Storage.SetUserinfoFromScopes(ctx, ui, userID, clientID, scopes); err != nil {
		return err
	}
	s.p.mu.Lock()
	u, ok := s.p.users[userID]
	s.p.mu.Unlock()
	if !ok {
		return nil
	}
	ui.Subject = u.Subject
	ui.Email = u.Email
	ui.EmailVerified = oidc.Bool(u.EmailVerified)
	ui.Name = u.Name
	if u.Groups != nil {
		ui.AppendClaims("groups", u.Groups)
	}
	return nil
}

// SetUser adds or replaces a user (by subject): a changed groups claim applies at the next
// sign-in.
func (p *OP) SetUser(u User) { p.mu.Lock(); p.users[u.Subject] = u; p.mu.Unlock() }
