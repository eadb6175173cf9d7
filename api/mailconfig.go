package api

import (
	"context"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/mail"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// GetMailConfig answers the effective mail configuration to administrators, without the
// password. Errors: ErrForbidden (not an administrator), ErrUnavailable.
func (a *API) GetMailConfig(ctx context.Context, _ gen.GetMailConfigRequestObject) (gen.GetMailConfigResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	c, err := a.mailConfig.Get(ctx, id.User)
	if err != nil {
		return nil, err
	}
	return gen.GetMailConfig200JSONResponse(mailConfigResponse(c)), nil
}

// UpdateMailConfig stores an administrator's mail configuration over the file and the
// environment; nothing is sent. Errors: ErrForbidden, ErrBadRequest (no body), ErrInvalid
// (a field or the port/encryption pairing is wrong).
func (a *API) UpdateMailConfig(ctx context.Context, req gen.UpdateMailConfigRequestObject) (gen.UpdateMailConfigResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if req.Body == nil {
		return nil, svcerr.New(svcerr.ErrBadRequest, "a JSON body is required")
	}
	b := req.Body
	u := mail.Update{Driver: string(b.Driver), Host: b.Host, Port: b.Port, Password: b.Password,
		Encryption: string(b.Encryption), From: string(b.FromAddress)}
	if b.Username != nil {
		u.Username = *b.Username
	}
	if b.FromName != nil {
		u.FromName = *b.FromName
	}
	c, err := a.mailConfig.Update(ctx, id.User, u)
	if err != nil {
		return nil, err
	}
	return gen.UpdateMailConfig200JSONResponse(mailConfigResponse(c)), nil
}

// SendTestMail sends the test message with the effective configuration and answers the
// outcome (200 either way; the mail server's error text on failure). Errors: ErrForbidden,
// ErrBadRequest (no body), ErrInvalid (to is not an address).
func (a *API) SendTestMail(ctx context.Context, req gen.SendTestMailRequestObject) (gen.SendTestMailResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if req.Body == nil {
		return nil, svcerr.New(svcerr.ErrBadRequest, "a JSON body is required")
	}
	r, err := a.mailConfig.SendTest(ctx, id.User, string(req.Body.To))
	if err != nil {
		return nil, err
	}
	var out gen.TestMailOutcomeResponse
	out.Data.Sent, out.Data.To = r.Sent, openapi_types.Email(r.To)
	if !r.Sent {
		out.Data.Error = &r.Error
		a.log.Info("test mail failed", "to", r.To, "err", r.Detail)
	}
	return gen.SendTestMail200JSONResponse(out), nil
}

func mailConfigResponse(c *mail.EffectiveConfig) gen.MailConfigResponse {
	var out gen.MailConfigResponse
	out.Data.MailConfig = gen.MailConfig{Driver: gen.MailConfigDriver(c.Driver), Host: c.Host, Port: c.Port,
		Username: c.Username, PasswordSet: c.PasswordSet, Encryption: gen.MailConfigEncryption(c.Encryption),
		FromAddress: c.From, FromName: c.FromName, UpdatedAt: c.UpdatedAt}
	return out
}
