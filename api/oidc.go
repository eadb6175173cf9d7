package api

import (
	"context"
	"net/url"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/domain/sso"
)

func (a *API) toOidcProvider(ctx context.Context, p *sso.Provider) gen.OidcProvider {
	ms := make([]gen.OidcGroupMapping, 0, len(p.Mappings))
	for _, m := range p.Mappings {
		ms = append(ms, gen.OidcGroupMapping{ClaimValue: m.ClaimValue, GroupId: m.GroupID, Role: gen.OidcGroupMappingRole(m.Role)})
	}
	scopes := p.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return gen.OidcProvider{Slug: p.Slug, DisplayName: p.DisplayName, IssuerUrl: p.IssuerURL, ClientId: p.ClientID,
		ClientSecretSet: p.SecretSet, Scopes: scopes, AllowRegistration: p.AllowRegistration, GroupsClaim: p.GroupsClaim,
		GroupMappings: ms, LogoutUrl: p.LogoutURL, RedirectUri: sso.RedirectURI(a.publicBase(ctx), p.Slug),
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func fromMappings(in *[]gen.OidcGroupMapping) (*[]sso.Mapping, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]sso.Mapping, 0, len(*in))
	for _, m := range *in {
		out = append(out, sso.Mapping{ClaimValue: m.ClaimValue, GroupID: m.GroupId, Role: string(m.Role)})
	}
	return &out, nil
}

// ListOidcProviders lists the providers for an administrator.
func (a *API) ListOidcProviders(ctx context.Context, _ gen.ListOidcProvidersRequestObject) (gen.ListOidcProvidersResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	ps, err := a.sso.List(ctx, id.User)
	if err != nil {
		return nil, err
	}
	var r gen.ListOidcProviders200JSONResponse
	r.Data.Providers = make([]gen.OidcProvider, 0, len(ps))
	for i := range ps {
		r.Data.Providers = append(r.Data.Providers, a.toOidcProvider(ctx, &ps[i]))
	}
	return r, nil
}

// CreateOidcProvider adds a provider (201).
func (a *API) CreateOidcProvider(ctx context.Context, req gen.CreateOidcProviderRequestObject) (gen.CreateOidcProviderResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	ms, err := fromMappings(b.GroupMappings)
	if err != nil {
		return nil, err
	}
	p, err := a.sso.Create(ctx, id.User, sso.Input{Slug: b.Slug, DisplayName: &b.DisplayName, IssuerURL: &b.IssuerUrl,
		ClientID: &b.ClientId, ClientSecret: &b.ClientSecret, LogoutURL: b.LogoutUrl, GroupsClaim: b.GroupsClaim,
		Scopes: b.Scopes, AllowRegistration: b.AllowRegistration, Mappings: ms})
	if err != nil {
		return nil, err
	}
	var r gen.CreateOidcProvider201JSONResponse
	r.Data.Provider = a.toOidcProvider(ctx, p)
	return r, nil
}

// UpdateOidcProvider changes a provider.
func (a *API) UpdateOidcProvider(ctx context.Context, req gen.UpdateOidcProviderRequestObject) (gen.UpdateOidcProviderResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	ms, err := fromMappings(b.GroupMappings)
	if err != nil {
		return nil, err
	}
	p, err := a.sso.Update(ctx, id.User, req.Slug, sso.Input{DisplayName: b.DisplayName, IssuerURL: b.IssuerUrl,
		ClientID: b.ClientId, ClientSecret: b.ClientSecret, LogoutURL: b.LogoutUrl, GroupsClaim: b.GroupsClaim,
		Scopes: b.Scopes, AllowRegistration: b.AllowRegistration, Mappings: ms})
	if err != nil {
		return nil, err
	}
	var r gen.UpdateOidcProvider200JSONResponse
	r.Data.Provider = a.toOidcProvider(ctx, p)
	return r, nil
}

// DeleteOidcProvider removes a provider.
func (a *API) DeleteOidcProvider(ctx context.Context, req gen.DeleteOidcProviderRequestObject) (gen.DeleteOidcProviderResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.sso.Delete(ctx, id.User, req.Slug); err != nil {
		return nil, err
	}
	var r gen.DeleteOidcProvider200JSONResponse
	r.Data.Deleted = true
	return r, nil
}

// ListPublicOidcProviders lists the providers for the sign-in page.
func (a *API) ListPublicOidcProviders(ctx context.Context, _ gen.ListPublicOidcProvidersRequestObject) (gen.ListPublicOidcProvidersResponseObject, error) {
	ps, err := a.sso.Public(ctx)
	if err != nil {
		return nil, err
	}
	offered, err := a.sso.PasswordLoginOffered(ctx)
	if err != nil {
		return nil, err
	}
	var r gen.ListPublicOidcProviders200JSONResponse
	r.Data.PasswordLoginEnabled = offered
	r.Data.Providers = make([]gen.PublicOidcProvider, 0, len(ps))
	base := a.cfg.Current().AppPrefix + "/api/v1/auth/oidc/"
	for _, p := range ps {
		r.Data.Providers = append(r.Data.Providers, gen.PublicOidcProvider{Slug: p.Slug, DisplayName: p.DisplayName,
			StartUrl: base + p.Slug + "/start", LogoutUrl: p.LogoutURL})
	}
	return r, nil
}

// StartOidcLogin redirects to the provider's authorization endpoint.
func (a *API) StartOidcLogin(ctx context.Context, req gen.StartOidcLoginRequestObject) (gen.StartOidcLoginResponseObject, error) {
	loc, err := a.sso.Start(ctx, req.Slug, sso.RedirectURI(a.publicBase(ctx), req.Slug))
	if err != nil {
		return nil, err
	}
	return gen.StartOidcLogin302Response{Headers: gen.StartOidcLogin302ResponseHeaders{Location: &loc}}, nil
}

// OidcCallback completes a provider sign-in: a session and a redirect to the console, or a
// redirect to the sign-in page with a link ticket.
func (a *API) OidcCallback(ctx context.Context, req gen.OidcCallbackRequestObject) (gen.OidcCallbackResponseObject, error) {
	p := req.Params
	str := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	ip, ua := client(ctx)
	res, err := a.sso.Callback(ctx, req.Slug, str(p.State), str(p.Code), str(p.Error),
		sso.RedirectURI(a.publicBase(ctx), req.Slug), ip, ua)
	if err != nil {
		return nil, err
	}
	console := a.cfg.Current().AppPrefix + "/"
	if res.LinkTicket != "" {
		loc := console + "login?oidc_link=" + url.QueryEscape(res.LinkTicket)
		return gen.OidcCallback302Response{Headers: gen.OidcCallback302ResponseHeaders{Location: &loc}}, nil
	}
	cookie := a.cookie(res.Login.Token, int(account.SessionTTL.Seconds()))
	return gen.OidcCallback302Response{Headers: gen.OidcCallback302ResponseHeaders{Location: &console, SetCookie: &cookie}}, nil
}

// LinkOidcIdentity links a provider identity after the account's password is proved.
func (a *API) LinkOidcIdentity(ctx context.Context, req gen.LinkOidcIdentityRequestObject) (gen.LinkOidcIdentityResponseObject, error) {
	ip, ua := client(ctx)
	res, err := a.sso.Link(ctx, req.Body.Ticket, req.Body.Password, ip, ua)
	if err != nil {
		return nil, err
	}
	body, cookie := a.opened(ctx, res)
	return gen.LinkOidcIdentity200JSONResponse{Body: body, Headers: gen.LinkOidcIdentity200ResponseHeaders{SetCookie: &cookie}}, nil
}
