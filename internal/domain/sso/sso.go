// Package sso is single sign-on with OpenID Connect (issue 30): the providers an administrator
// configures, the authorization code flow with PKCE, state and nonce (kept server-side in a
// one-time row), the ID token's verification (go-oidc: signature, issuer, audience, expiry),
// then the account: a known identity signs in, a same-email account is linked only after its
// password is proved once, else an account is created when the provider allows registration.
// A provider's group mapping is applied at every sign-in (membership source "oidc:<slug>").
//
// Every request to a provider (discovery, keys, token) goes through the netguard screen unless
// the issuer's host is among oidc_allowed_hosts.
package sso

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/platform/secret"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// StateTTL is how long a sign-in in progress or a link ticket stays valid.
const StateTTL = 10 * time.Minute

// httpTimeout bounds each request to a provider.
const httpTimeout = 15 * time.Second

// Limits of what a provider's ID token may carry into the account.
const (
	maxGroups     = 200
	maxSubjectLen = 255
)

var slugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// Mapping is one group mapping of a provider.
type Mapping struct {
	ClaimValue string `json:"claim_value"`
	GroupID    int64  `json:"group_id"`
	Role       string `json:"role"`
}

// Provider is a provider as the API shows it (no secret).
type Provider struct {
	Slug, DisplayName, IssuerURL, ClientID string
	SecretSet                              bool
	Scopes                                 []string
	AllowRegistration                      bool
	GroupsClaim                            string
	Mappings                               []Mapping
	LogoutURL                              string
	CreatedAt, UpdatedAt                   time.Time
}

// Input is a create (every field but the optional ones set) or an update (nil: keep).
type Input struct {
	Slug                                                      string
	DisplayName, IssuerURL, ClientID, ClientSecret, LogoutURL *string
	GroupsClaim                                               *string
	Scopes                                                    *[]string
	AllowRegistration                                         *bool
	Mappings                                                  *[]Mapping
}

// Options build a Service.
type Options struct {
	Store    *store.Principals
	Accounts *account.Service
	Box      *secret.Box
	Config   func() *config.Config
	// Net is the outbound screen's base (tests set AllowLoopback); oidc_allowed_hosts is added
	// at each request.
	Net    netguard.Options
	Logger *slog.Logger
	Clock  func() time.Time
}

// Service runs the providers and the sign-in flow.
type Service struct {
	o Options
}

// New returns the service and installs the password gate on the accounts (see PasswordGate).
func New(o Options) *Service {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Service{o: o}
	if o.Accounts != nil {
		o.Accounts.SetPasswordGate(s.PasswordGate)
	}
	return s
}

// PasswordGate refuses a password sign-in while password_login_enabled is off and a provider
// is configured, except for administrators: their password always works (the break-glass path
// when the identity provider is down or misconfigured, so the last administrator cannot be
// locked out). Errors: ErrForbidden; the store's.
func (s *Service) PasswordGate(ctx context.Context, u *store.User) error {
	if s.o.Config().PasswordLoginEnabled || u.IsAdmin() {
		return nil
	}
	ps, err := s.o.Store.OIDCProviders(ctx)
	if err != nil {
		return err
	}
	if len(ps) == 0 {
		return nil
	}
	return svcerr.New(svcerr.ErrForbidden, "password sign-in is switched off: sign in with single sign-on")
}

// PasswordLoginOffered reports what the sign-in page shows: the password form unless it is
// switched off while a provider exists.
func (s *Service) PasswordLoginOffered(ctx context.Context) (bool, error) {
	if s.o.Config().PasswordLoginEnabled {
		return true, nil
	}
	ps, err := s.o.Store.OIDCProviders(ctx)
	return len(ps) == 0, err
}

func toProvider(p *store.OIDCProvider) Provider {
	var m []Mapping
	_ = json.Unmarshal([]byte(p.GroupMappings), &m)
	if m == nil {
		m = []Mapping{}
	}
	return Provider{Slug: p.Slug, DisplayName: p.DisplayName, IssuerURL: p.IssuerURL, ClientID: p.ClientID,
		SecretSet: p.ClientSecretSealed != "", Scopes: strings.Fields(p.Scopes), AllowRegistration: p.AllowRegistration,
		GroupsClaim: p.GroupsClaim, Mappings: m, LogoutURL: p.LogoutURL, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// List returns every provider to an administrator. Errors: ErrForbidden; the store's.
func (s *Service) List(ctx context.Context, by *store.User) ([]Provider, error) {
	if err := access.Administrator(by); err != nil {
		return nil, err
	}
	return s.Public(ctx)
}

// Public returns every provider (for the sign-in page, which shows slug and name only).
func (s *Service) Public(ctx context.Context) ([]Provider, error) {
	ps, err := s.o.Store.OIDCProviders(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Provider, 0, len(ps))
	for i := range ps {
		out = append(out, toProvider(&ps[i]))
	}
	return out, nil
}

// Create adds a provider for an administrator. Errors: ErrForbidden, ErrInvalid (a field),
// ErrConflict (slug taken); the store's.
func (s *Service) Create(ctx context.Context, by *store.User, in Input) (*Provider, error) {
	if err := access.Administrator(by); err != nil {
		return nil, err
	}
	if !slugRE.MatchString(in.Slug) {
		return nil, svcerr.New(svcerr.ErrInvalid, "slug: lowercase letters, digits and dashes, at most 63")
	}
	p := store.OIDCProvider{Slug: in.Slug, Scopes: "openid email profile", GroupMappings: "[]"}
	if in.DisplayName == nil || in.IssuerURL == nil || in.ClientID == nil || in.ClientSecret == nil {
		return nil, svcerr.New(svcerr.ErrInvalid, "display_name, issuer_url, client_id and client_secret are required")
	}
	if err := s.apply(&p, in); err != nil {
		return nil, err
	}
	out, err := s.o.Store.CreateOIDCProvider(ctx, p)
	if err != nil {
		return nil, err
	}
	r := toProvider(out)
	return &r, nil
}

// Update changes a provider for an administrator. Errors: ErrForbidden, ErrNotFound,
// ErrInvalid; the store's.
func (s *Service) Update(ctx context.Context, by *store.User, slug string, in Input) (*Provider, error) {
	if err := access.Administrator(by); err != nil {
		return nil, err
	}
	p, err := s.o.Store.OIDCProviderBySlug(ctx, slug)
	if err != nil {
		return nil, err
	}
	if err := s.apply(p, in); err != nil {
		return nil, err
	}
	out, err := s.o.Store.SaveOIDCProvider(ctx, *p)
	if err != nil {
		return nil, err
	}
	r := toProvider(out)
	return &r, nil
}

// Delete removes a provider for an administrator. Errors: ErrForbidden, ErrNotFound.
func (s *Service) Delete(ctx context.Context, by *store.User, slug string) error {
	if err := access.Administrator(by); err != nil {
		return err
	}
	return s.o.Store.DeleteOIDCProvider(ctx, slug)
}

// apply checks and copies the set fields of in onto p. Errors: ErrInvalid.
func (s *Service) apply(p *store.OIDCProvider, in Input) error {
	if v := in.DisplayName; v != nil {
		t := strings.TrimSpace(*v)
		if t == "" || len(t) > 100 {
			return svcerr.New(svcerr.ErrInvalid, "display_name: 1 to 100 characters")
		}
		p.DisplayName = t
	}
	if v := in.IssuerURL; v != nil {
		if err := checkURL("issuer_url", *v, false); err != nil {
			return err
		}
		p.IssuerURL = strings.TrimSpace(*v)
	}
	if v := in.ClientID; v != nil {
		if strings.TrimSpace(*v) == "" || len(*v) > 255 {
			return svcerr.New(svcerr.ErrInvalid, "client_id: 1 to 255 characters")
		}
		p.ClientID = strings.TrimSpace(*v)
	}
	if v := in.ClientSecret; v != nil {
		if *v == "" || len(*v) > 4096 {
			return svcerr.New(svcerr.ErrInvalid, "client_secret: 1 to 4096 characters")
		}
		sealed, err := s.o.Box.Seal([]byte(*v))
		if err != nil {
			return err
		}
		p.ClientSecretSealed = sealed
	}
	if v := in.LogoutURL; v != nil {
		if *v != "" {
			if err := checkURL("logout_url", *v, true); err != nil {
				return err
			}
		}
		p.LogoutURL = strings.TrimSpace(*v)
	}
	if v := in.GroupsClaim; v != nil {
		if len(*v) > 100 || strings.ContainsAny(*v, " \t\r\n") {
			return svcerr.New(svcerr.ErrInvalid, "groups_claim: a claim name of at most 100 characters, no spaces")
		}
		p.GroupsClaim = *v
	}
	if v := in.Scopes; v != nil {
		scopes := []string{"openid"}
		for _, sc := range *v {
			if sc == "" || len(sc) > 100 || strings.ContainsAny(sc, " \t\r\n\"\\") {
				return svcerr.New(svcerr.ErrInvalid, "scopes: each a word of at most 100 characters")
			}
			if !slices.Contains(scopes, sc) {
				scopes = append(scopes, sc)
			}
		}
		p.Scopes = strings.Join(scopes, " ")
	}
	if v := in.AllowRegistration; v != nil {
		p.AllowRegistration = *v
	}
	if v := in.Mappings; v != nil {
		for i, m := range *v {
			if m.ClaimValue == "" || len(m.ClaimValue) > 200 || m.GroupID <= 0 || (m.Role != store.GroupRoleMember && m.Role != store.GroupRoleAdmin) {
				return svcerr.New(svcerr.ErrInvalid, "group_mappings[%d]: a claim value, a group id and the role member or admin", i)
			}
		}
		b, _ := json.Marshal(*v)
		if *v == nil {
			b = []byte("[]")
		}
		p.GroupMappings = string(b)
	}
	return nil
}

// checkURL accepts an absolute http(s) URL without user information; http only for a loopback
// host unless anyHTTP (a logout address the browser follows). Errors: ErrInvalid naming field.
func checkURL(field, raw string, anyHTTP bool) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && u.Scheme != "http") || len(raw) > 2000 {
		return svcerr.New(svcerr.ErrInvalid, "%s: an absolute http(s) URL", field)
	}
	if u.Scheme == "http" && !anyHTTP && !netguard.LoopbackHost(u.Hostname()) {
		return svcerr.New(svcerr.ErrInvalid, "%s: https is required (plain http only on a loopback host)", field)
	}
	return nil
}

// client is the HTTP client for provider p: screened by netguard, the issuer host exempt when
// listed in oidc_allowed_hosts.
func (s *Service) client() *http.Client {
	opts := s.o.Net
	if l, err := netguard.ParseHostList(s.o.Config().OIDCAllowedHosts); err == nil && l != nil {
		opts.Exempt = l.With(opts.Exempt)
	}
	return netguard.Client(httpTimeout, opts)
}

// oauth builds the provider's discovery and OAuth configuration. Errors: ErrUnavailable when
// discovery fails (the screen's refusal included).
func (s *Service) oauth(ctx context.Context, p *store.OIDCProvider, redirectURI string) (*oidc.Provider, *oauth2.Config, context.Context, error) {
	hc := s.client()
	ctx = oidc.ClientContext(ctx, hc)
	op, err := oidc.NewProvider(ctx, p.IssuerURL)
	if err != nil {
		s.o.Logger.Warn("sso: discovery failed", "provider", p.Slug, "err", err)
		return nil, nil, nil, svcerr.New(svcerr.ErrUnavailable, "the provider %q cannot be reached (discovery failed)", p.Slug)
	}
	secretBytes, err := s.o.Box.Open(p.ClientSecretSealed)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sso: open client secret of %s: %w", p.Slug, err)
	}
	cfg := &oauth2.Config{ClientID: p.ClientID, ClientSecret: string(secretBytes), Endpoint: op.Endpoint(),
		RedirectURL: redirectURI, Scopes: strings.Fields(p.Scopes)}
	return op, cfg, ctx, nil
}

// RedirectURI is the callback address of provider slug under the public base.
func RedirectURI(publicBase, slug string) string {
	return strings.TrimRight(publicBase, "/") + "/api/v1/auth/oidc/" + slug + "/callback"
}

func random(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// Start begins a sign-in through provider slug: it stores the one-time state (PKCE verifier,
// nonce) and returns the authorization URL. Errors: ErrNotFound, ErrUnavailable (discovery).
func (s *Service) Start(ctx context.Context, slug, redirectURI string) (string, error) {
	p, err := s.o.Store.OIDCProviderBySlug(ctx, slug)
	if err != nil {
		return "", err
	}
	_, cfg, _, err := s.oauth(ctx, p, redirectURI)
	if err != nil {
		return "", err
	}
	_ = s.o.Store.PruneOIDCStates(ctx)
	state, nonce, verifier := random(32), random(32), oauth2.GenerateVerifier()
	if err := s.o.Store.CreateOIDCState(ctx, store.OIDCState{StateDigest: secret.Digest(state), Kind: store.OIDCStateLogin,
		ProviderID: p.ID, Nonce: nonce, PkceVerifier: verifier, ExpiresAt: s.o.Clock().UTC().Add(StateTTL)}); err != nil {
		return "", err
	}
	return cfg.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), nil
}

// Result is a completed callback: a session, or a link ticket to prove the password with.
type Result struct {
	Login      *account.LoginResult
	LinkTicket string
}

// claims are what the ID token carries into the account.
type claims struct {
	Email         string `json:"email"`
	EmailVerified *bool  `json:"email_verified"`
	Name          string `json:"name"`
}

// Callback completes a sign-in: it consumes the state, exchanges the code with the verifier,
// verifies the ID token and its nonce, then signs in, prepares a link or creates the account.
// Errors: ErrNotFound (no such provider), ErrUnauthenticated (unknown, used or expired state;
// the provider's error; a failed exchange; an ID token that does not verify: signature,
// issuer, audience, expiry, nonce), ErrForbidden (unverified email, registration not allowed),
// ErrUnavailable (discovery).
func (s *Service) Callback(ctx context.Context, slug, state, code, providerErr, redirectURI, ip, ua string) (*Result, error) {
	p, err := s.o.Store.OIDCProviderBySlug(ctx, slug)
	if err != nil {
		return nil, err
	}
	if state == "" {
		return nil, svcerr.New(svcerr.ErrUnauthenticated, "the sign-in has no state")
	}
	st, err := s.o.Store.TakeOIDCState(ctx, secret.Digest(state), store.OIDCStateLogin, p.ID)
	if errors.Is(err, svcerr.ErrNotFound) {
		return nil, svcerr.New(svcerr.ErrUnauthenticated, "unknown, used or expired sign-in state: start again")
	}
	if err != nil {
		return nil, err
	}
	if providerErr != "" || code == "" {
		return nil, svcerr.New(svcerr.ErrUnauthenticated, "the provider did not sign you in")
	}
	op, cfg, octx, err := s.oauth(ctx, p, redirectURI)
	if err != nil {
		return nil, err
	}
	tok, err := cfg.Exchange(octx, code, oauth2.VerifierOption(st.PkceVerifier))
	if err != nil {
		s.o.Logger.Info("sso: code exchange failed", "provider", slug, "err", err)
		return nil, svcerr.New(svcerr.ErrUnauthenticated, "the provider refused the sign-in code")
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, svcerr.New(svcerr.ErrUnauthenticated, "the provider sent no ID token")
	}
	idt, err := op.Verifier(&oidc.Config{ClientID: p.ClientID}).Verify(octx, raw)
	if err != nil {
		s.o.Logger.Info("sso: ID token refused", "provider", slug, "err", err)
		return nil, svcerr.New(svcerr.ErrUnauthenticated, "the ID token does not verify")
	}
	if idt.Nonce != st.Nonce {
		return nil, svcerr.New(svcerr.ErrUnauthenticated, "the ID token does not verify (nonce)")
	}
	if idt.Subject == "" || len(idt.Subject) > maxSubjectLen {
		return nil, svcerr.New(svcerr.ErrUnauthenticated, "the ID token has no usable subject")
	}
	var c claims
	if err := idt.Claims(&c); err != nil {
		return nil, svcerr.New(svcerr.ErrUnauthenticated, "the ID token's claims cannot be read")
	}
	groups := s.groupsOf(p, idt)

	if ident, err := s.o.Store.OIDCIdentityBySubject(ctx, p.ID, idt.Subject); err == nil {
		return s.signIn(ctx, p, ident.UserID, groups, ip, ua)
	} else if !errors.Is(err, svcerr.ErrNotFound) {
		return nil, err
	}
	verified := c.EmailVerified != nil && *c.EmailVerified
	if c.Email == "" || !verified {
		return nil, svcerr.New(svcerr.ErrForbidden, "the provider has not verified your email address")
	}
	if u, err := s.o.Accounts.UserByEmail(ctx, c.Email); err == nil {
		ticket := random(32)
		gb, _ := json.Marshal(groups)
		uid := u.ID
		if err := s.o.Store.CreateOIDCState(ctx, store.OIDCState{StateDigest: secret.Digest(ticket), Kind: store.OIDCStateLink,
			ProviderID: p.ID, Subject: idt.Subject, Email: c.Email, ClaimGroups: string(gb), UserID: &uid,
			ExpiresAt: s.o.Clock().UTC().Add(StateTTL)}); err != nil {
			return nil, err
		}
		return &Result{LinkTicket: ticket}, nil
	} else if !errors.Is(err, svcerr.ErrNotFound) {
		return nil, err
	}
	if !p.AllowRegistration {
		return nil, svcerr.New(svcerr.ErrForbidden, "no account matches, and registration through %s is not allowed", p.DisplayName)
	}
	u, err := s.o.Accounts.CreateExternalUser(ctx, c.Email, c.Name)
	if errors.Is(err, svcerr.ErrInvalid) && c.Name != "" {
		u, err = s.o.Accounts.CreateExternalUser(ctx, c.Email, "")
	}
	if err != nil {
		return nil, err
	}
	if _, err := s.o.Store.CreateOIDCIdentity(ctx, store.OIDCIdentity{ProviderID: p.ID, Subject: idt.Subject, UserID: u.ID, Email: c.Email}); err != nil {
		return nil, err
	}
	return s.signIn(ctx, p, u.ID, groups, ip, ua)
}

// Link completes a link ticket with the account's password: the identity is linked, the group
// mapping applied and a session opened. A wrong password keeps the ticket. Errors:
// ErrUnauthenticated (unknown, used or expired ticket; wrong password), ErrConflict (linked
// meanwhile).
func (s *Service) Link(ctx context.Context, ticket, password, ip, ua string) (*account.LoginResult, error) {
	st, err := s.o.Store.PeekOIDCLink(ctx, secret.Digest(ticket))
	if err != nil {
		return nil, svcerr.New(svcerr.ErrUnauthenticated, "unknown, used or expired link ticket: sign in with the provider again")
	}
	if _, err := s.o.Accounts.CheckPassword(ctx, *st.UserID, password); err != nil {
		return nil, err
	}
	st, err = s.o.Store.TakeOIDCState(ctx, st.StateDigest, store.OIDCStateLink, st.ProviderID)
	if err != nil {
		return nil, svcerr.New(svcerr.ErrUnauthenticated, "unknown, used or expired link ticket: sign in with the provider again")
	}
	if _, err := s.o.Store.CreateOIDCIdentity(ctx, store.OIDCIdentity{ProviderID: st.ProviderID, Subject: st.Subject, UserID: *st.UserID, Email: st.Email}); err != nil {
		return nil, err
	}
	p, err := s.o.Store.OIDCProviderByID(ctx, st.ProviderID)
	if err != nil {
		return nil, err
	}
	var groups []string
	_ = json.Unmarshal([]byte(st.ClaimGroups), &groups)
	r, err := s.signIn(ctx, p, *st.UserID, groups, ip, ua)
	if err != nil {
		return nil, err
	}
	return r.Login, nil
}

// signIn applies the group mapping and opens the session.
func (s *Service) signIn(ctx context.Context, p *store.OIDCProvider, userID int64, groups []string, ip, ua string) (*Result, error) {
	u, err := s.o.Accounts.UserByID(ctx, userID)
	if err != nil {
		return nil, err
	}
	if err := s.applyMappings(ctx, p, userID, groups); err != nil {
		return nil, err
	}
	res, err := s.o.Accounts.OpenSession(ctx, u, ip, ua)
	if err != nil {
		return nil, err
	}
	return &Result{Login: res}, nil
}

// Source is the membership source of provider slug's mappings.
func Source(slug string) string { return "oidc:" + slug }

// applyMappings syncs the memberships the provider's mapping grants (see
// store.SyncSourcedMemberships). A provider without a groups claim changes nothing.
func (s *Service) applyMappings(ctx context.Context, p *store.OIDCProvider, userID int64, groups []string) error {
	if p.GroupsClaim == "" {
		return nil
	}
	var ms []Mapping
	_ = json.Unmarshal([]byte(p.GroupMappings), &ms)
	byGroup := map[int64]string{}
	for _, m := range ms {
		if slices.Contains(groups, m.ClaimValue) {
			if byGroup[m.GroupID] != store.GroupRoleAdmin { // the higher role wins
				byGroup[m.GroupID] = m.Role
			}
		}
	}
	want := make([]store.MappedMembership, 0, len(byGroup))
	for g, r := range byGroup {
		want = append(want, store.MappedMembership{GroupID: g, Role: r})
	}
	slices.SortFunc(want, func(a, b store.MappedMembership) int { return int(a.GroupID - b.GroupID) })
	return s.o.Store.SyncSourcedMemberships(ctx, userID, Source(p.Slug), want)
}

// groupsOf reads the provider's groups claim: a string or an array of strings (numbers are
// accepted as their decimal text), at most maxGroups values.
func (s *Service) groupsOf(p *store.OIDCProvider, idt *oidc.IDToken) []string {
	if p.GroupsClaim == "" {
		return nil
	}
	var all map[string]any
	if err := idt.Claims(&all); err != nil {
		return nil
	}
	var out []string
	add := func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case float64:
			out = append(out, strconv.FormatFloat(x, 'f', -1, 64))
		}
	}
	switch v := all[p.GroupsClaim].(type) {
	case []any:
		for _, e := range v {
			if len(out) >= maxGroups {
				break
			}
			add(e)
		}
	default:
		add(v)
	}
	return out
}
