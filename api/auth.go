package api

import (
	"context"
	"net/http"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/account"
)

const sessionCookie = "svc_session"

// Register opens an account (201).
func (a *API) Register(ctx context.Context, req gen.RegisterRequestObject) (gen.RegisterResponseObject, error) {
	b := req.Body
	in := account.RegisterInput{Email: string(b.Email), Password: b.Password}
	if b.DisplayName != nil {
		in.DisplayName = *b.DisplayName
	}
	u, err := a.accounts.Register(ctx, in, a.publicBase(ctx))
	if err != nil {
		return nil, err
	}
	return gen.Register201JSONResponse(userResponse(a.publicBase(ctx), u)), nil
}

// Login opens a session and sets its cookie.
func (a *API) Login(ctx context.Context, req gen.LoginRequestObject) (gen.LoginResponseObject, error) {
	ip, ua := client(ctx)
	res, err := a.accounts.Login(ctx, req.Body.Email, req.Body.Password, ip, ua)
	if err != nil {
		return nil, err
	}
	body, cookie := a.opened(ctx, res)
	return gen.Login200JSONResponse{Body: body, Headers: gen.Login200ResponseHeaders{SetCookie: &cookie}}, nil
}

// opened is the answer to a sign-in that opened session res: the user with the session's CSRF
// token, and the session cookie to set.
func (a *API) opened(ctx context.Context, res *account.LoginResult) (gen.SessionResponse, string) {
	var body gen.SessionResponse
	body.Data.User = toUser(a.publicBase(ctx), res.User)
	body.Data.CsrfToken = res.CSRFToken
	return body, a.cookie(res.Token, int(account.SessionTTL.Seconds()))
}

// Logout ends the session and expires the cookie.
func (a *API) Logout(ctx context.Context, _ gen.LogoutRequestObject) (gen.LogoutResponseObject, error) {
	if r := request(ctx); r != nil {
		if c, err := r.Cookie(sessionCookie); err == nil {
			if err := a.accounts.Logout(ctx, c.Value); err != nil {
				return nil, err
			}
		}
	}
	cookie := a.cookie("", -1)
	return gen.Logout200JSONResponse{Body: accepted(), Headers: gen.Logout200ResponseHeaders{SetCookie: &cookie}}, nil
}

// cookie renders the session cookie; maxAge < 0 expires it.
func (a *API) cookie(value string, maxAge int) string {
	cfg := a.cfg.Current()
	path := cfg.AppPrefix
	if path == "" {
		path = "/"
	}
	c := http.Cookie{Name: sessionCookie, Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: cfg.IsProduction()}
	return c.String()
}

// GetMe returns the caller and the CSRF token.
func (a *API) GetMe(ctx context.Context, _ gen.GetMeRequestObject) (gen.GetMeResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	var body gen.SessionResponse
	body.Data.User = toUser(a.publicBase(ctx), id.User)
	body.Data.CsrfToken = id.Session.CSRFToken
	return gen.GetMe200JSONResponse(body), nil
}

// UpdateAccount changes the caller's display name.
func (a *API) UpdateAccount(ctx context.Context, req gen.UpdateAccountRequestObject) (gen.UpdateAccountResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	u, err := a.accounts.UpdateAccount(ctx, id.User.ID, req.Body.DisplayName)
	if err != nil {
		return nil, err
	}
	return gen.UpdateAccount200JSONResponse(userResponse(a.publicBase(ctx), u)), nil
}

// ChangePassword replaces the caller's password.
func (a *API) ChangePassword(ctx context.Context, req gen.ChangePasswordRequestObject) (gen.ChangePasswordResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	u, err := a.accounts.ChangePassword(ctx, id, req.Body.CurrentPassword, req.Body.NewPassword)
	if err != nil {
		return nil, err
	}
	return gen.ChangePassword200JSONResponse(userResponse(a.publicBase(ctx), u)), nil
}

// ForgotPassword mails a reset link if the address is known; the answer never tells.
func (a *API) ForgotPassword(ctx context.Context, req gen.ForgotPasswordRequestObject) (gen.ForgotPasswordResponseObject, error) {
	if err := a.accounts.ForgotPassword(ctx, req.Body.Email, a.publicBase(ctx)); err != nil {
		return nil, err
	}
	return gen.ForgotPassword200JSONResponse(accepted()), nil
}

// ResetPassword completes a reset.
func (a *API) ResetPassword(ctx context.Context, req gen.ResetPasswordRequestObject) (gen.ResetPasswordResponseObject, error) {
	b := req.Body
	if err := a.accounts.ResetPassword(ctx, b.Selector, b.Token, b.NewPassword); err != nil {
		return nil, err
	}
	return gen.ResetPassword200JSONResponse(accepted()), nil
}

// RequestEmailChange mails a confirmation link to the new address.
func (a *API) RequestEmailChange(ctx context.Context, req gen.RequestEmailChangeRequestObject) (gen.RequestEmailChangeResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	u, err := a.accounts.RequestEmailChange(ctx, id, string(req.Body.NewEmail), req.Body.Password, a.publicBase(ctx))
	if err != nil {
		return nil, err
	}
	return gen.RequestEmailChange200JSONResponse(userResponse(a.publicBase(ctx), u)), nil
}

// ConfirmEmailChange applies a pending change.
func (a *API) ConfirmEmailChange(ctx context.Context, req gen.ConfirmEmailChangeRequestObject) (gen.ConfirmEmailChangeResponseObject, error) {
	u, err := a.accounts.ConfirmEmailChange(ctx, req.Body.Selector, req.Body.Token)
	if err != nil {
		return nil, err
	}
	return gen.ConfirmEmailChange200JSONResponse(userResponse(a.publicBase(ctx), u)), nil
}

// ResendVerification mails a new verification link.
func (a *API) ResendVerification(ctx context.Context, _ gen.ResendVerificationRequestObject) (gen.ResendVerificationResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.accounts.ResendVerification(ctx, id.User, a.publicBase(ctx)); err != nil {
		return nil, err
	}
	return gen.ResendVerification200JSONResponse(accepted()), nil
}

// VerifyEmail consumes a verification link.
func (a *API) VerifyEmail(ctx context.Context, req gen.VerifyEmailRequestObject) (gen.VerifyEmailResponseObject, error) {
	u, err := a.accounts.VerifyEmail(ctx, req.Selector, req.Params.Token)
	if err != nil {
		return nil, err
	}
	return gen.VerifyEmail200JSONResponse(userResponse(a.publicBase(ctx), u)), nil
}

// GetConfig returns the public runtime flags.
func (a *API) GetConfig(_ context.Context, _ gen.GetConfigRequestObject) (gen.GetConfigResponseObject, error) {
	c := a.cfg.Current()
	var r gen.GetConfig200JSONResponse
	push := gen.PublicConfigPushEmbedded
	if c.MercureURL != "" {
		push = gen.PublicConfigPushMercure
	}
	r.Data.Config = gen.PublicConfig{
		AppPrefix:                 c.AppPrefix,
		AllowRegistration:         c.AllowRegistration,
		AgentApi:                  c.AgentAPI,
		WorkerRuntimeMode:         gen.PublicConfigWorkerRuntimeMode(c.WorkerRuntimeMode),
		Push:                      push,
		PluginInstallEnabled:      c.PluginInstallEnabled,
		PluginCatalogEnabled:      c.PluginCatalogEnabled,
		NotificationsEmailEnabled: c.NotificationsEmailEnabled,
	}
	return r, nil
}
