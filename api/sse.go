package api

import (
	"context"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/platform/push"
)

// GetSseStatus says which hub serves push and whether it is available.
func (a *API) GetSseStatus(ctx context.Context, _ gen.GetSseStatusRequestObject) (gen.GetSseStatusResponseObject, error) {
	if _, err := caller(ctx); err != nil {
		return nil, err
	}
	st := a.push.Status()
	var r gen.GetSseStatus200JSONResponse
	r.Data.Available, r.Data.Hub, r.Data.PollIntervalSeconds = st.Available, gen.SseHub(st.Kind), push.PollInterval
	return r, nil
}

// GetSseAuth answers where and to what the caller may subscribe; hub_url is null when push is
// unavailable.
func (a *API) GetSseAuth(ctx context.Context, _ gen.GetSseAuthRequestObject) (gen.GetSseAuthResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	st := a.push.Status()
	var r gen.GetSseAuth200JSONResponse
	r.Data.Available, r.Data.Hub, r.Data.Topics = st.Available, gen.SseHub(st.Kind), push.OwnTopics(id.User.ID)
	if st.Available {
		u := a.push.HubURL(a.publicBase(ctx))
		r.Data.HubUrl = &u
	}
	return r, nil
}

// AuthorizeSse issues a subscriber token for the caller's own topics, bound to the caller's
// session: the embedded hub refuses it, and ends what it opened, once that session ended.
func (a *API) AuthorizeSse(ctx context.Context, req gen.AuthorizeSseRequestObject) (gen.AuthorizeSseResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	var sessionID int64
	if id.Session != nil {
		sessionID = id.Session.ID
	}
	g, err := a.push.Authorize(id.User.ID, sessionID, deref(req.Params.Topic), a.publicBase(ctx))
	if err != nil {
		return nil, err
	}
	var r gen.AuthorizeSse200JSONResponse
	r.Data.Token, r.Data.Hub, r.Data.HubUrl, r.Data.Topics, r.Data.ExpiresAt = g.Token, gen.SseHub(g.Kind), g.HubURL, g.Topics, g.ExpiresAt
	return r, nil
}
