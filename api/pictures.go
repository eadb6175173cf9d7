package api

import (
	"context"
	"io"
	"mime/multipart"
	"net/http"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/agent"
	"github.com/agentsvc/svc/internal/domain/picture"
	"github.com/agentsvc/svc/store"
)

// uploadPicture stores the `file` part of body as the picture of t (400 without one) and
// returns the new asset. A second file part is refused after the picture was replaced: the
// earlier picture is gone by then, so the new one stays rather than leaving none.
func (a *API) uploadPicture(ctx context.Context, body *multipart.Reader, t *picture.Target, userID int64) (*store.MediaAsset, error) {
	return uploadParts(body, func(filename string, data io.Reader) (*store.MediaAsset, error) {
		return a.pictures.Set(ctx, t, filename, data, userID)
	}, nil, nil)
}

// pictureHeaders marks a streamed picture: the detected type is kept (nosniff), and caches
// revalidate it, since a replaced picture keeps its address.
func pictureHeaders(w http.ResponseWriter) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "private, no-cache")
}

// GetUserPicture streams a user's picture to any signed-in user.
func (a *API) GetUserPicture(ctx context.Context, req gen.GetUserPictureRequestObject) (gen.GetUserPictureResponseObject, error) {
	if _, err := caller(ctx); err != nil {
		return nil, err
	}
	m, f, err := a.pictures.OpenUser(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return userPicture{gen.GetUserPicture200ImageResponse{Body: f, ContentType: m.MimeType, ContentLength: m.Size}}, nil
}

// GetMyPicture streams the caller's own picture.
func (a *API) GetMyPicture(ctx context.Context, _ gen.GetMyPictureRequestObject) (gen.GetMyPictureResponseObject, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	m, f, err := a.pictures.Open(ctx, who.User.PictureMediaID)
	if err != nil {
		return nil, err
	}
	return myPicture{gen.GetMyPicture200ImageResponse{Body: f, ContentType: m.MimeType, ContentLength: m.Size}}, nil
}

// UploadMyPicture replaces the caller's picture and answers the stored asset.
func (a *API) UploadMyPicture(ctx context.Context, req gen.UploadMyPictureRequestObject) (gen.UploadMyPictureResponseObject, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	m, err := a.uploadPicture(ctx, req.Body, a.pictures.User(who.User), who.User.ID)
	if err != nil {
		return nil, err
	}
	var r gen.UploadMyPicture200JSONResponse
	r.Data.Media = toMediaAsset(m)
	return r, nil
}

// DeleteMyPicture removes the caller's picture (also when there is none).
func (a *API) DeleteMyPicture(ctx context.Context, _ gen.DeleteMyPictureRequestObject) (gen.DeleteMyPictureResponseObject, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.pictures.Clear(ctx, a.pictures.User(who.User)); err != nil {
		return nil, err
	}
	return gen.DeleteMyPicture200JSONResponse(deleted()), nil
}

// GetAgentPicture streams the picture of an agent the caller can see.
func (a *API) GetAgentPicture(ctx context.Context, req gen.GetAgentPictureRequestObject) (gen.GetAgentPictureResponseObject, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	ag, err := a.agents.Get(ctx, who.User, req.Id)
	if err != nil {
		return nil, err
	}
	m, f, err := a.pictures.Open(ctx, ag.PictureMediaID)
	if err != nil {
		return nil, err
	}
	return agentPicture{gen.GetAgentPicture200ImageResponse{Body: f, ContentType: m.MimeType, ContentLength: m.Size}}, nil
}

// agentTarget is the picture of the agent of path id, which the caller must manage.
func (a *API) agentTarget(ctx context.Context, id string) (*picture.Target, int64, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, 0, err
	}
	aid, err := agent.ParseID(id)
	if err != nil {
		return nil, 0, err
	}
	t, err := a.pictures.Agent(ctx, who.User, aid)
	if err != nil {
		return nil, 0, err
	}
	return t, who.User.ID, nil
}

// UploadAgentPicture replaces the picture of an agent the caller manages and answers the agent.
func (a *API) UploadAgentPicture(ctx context.Context, req gen.UploadAgentPictureRequestObject) (gen.UploadAgentPictureResponseObject, error) {
	t, userID, err := a.agentTarget(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	if _, err := a.uploadPicture(ctx, req.Body, t, userID); err != nil {
		return nil, err
	}
	who, _ := caller(ctx)
	ag, err := a.agents.Get(ctx, who.User, req.Id)
	if err != nil {
		return nil, err
	}
	return gen.UploadAgentPicture200JSONResponse(agentResponse(a.publicBase(ctx), ag)), nil
}

// DeleteAgentPicture removes the picture of an agent the caller manages (also when none).
func (a *API) DeleteAgentPicture(ctx context.Context, req gen.DeleteAgentPictureRequestObject) (gen.DeleteAgentPictureResponseObject, error) {
	t, _, err := a.agentTarget(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	if err := a.pictures.Clear(ctx, t); err != nil {
		return nil, err
	}
	return gen.DeleteAgentPicture200JSONResponse(deleted()), nil
}

// GetGroupPicture streams the picture of a group the caller can see.
func (a *API) GetGroupPicture(ctx context.Context, req gen.GetGroupPictureRequestObject) (gen.GetGroupPictureResponseObject, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	g, err := a.groups.Get(ctx, who.User, req.Id)
	if err != nil {
		return nil, err
	}
	m, f, err := a.pictures.Open(ctx, g.PictureMediaID)
	if err != nil {
		return nil, err
	}
	return groupPicture{gen.GetGroupPicture200ImageResponse{Body: f, ContentType: m.MimeType, ContentLength: m.Size}}, nil
}

// UploadGroupPicture replaces the picture of a group the caller manages and answers the group.
func (a *API) UploadGroupPicture(ctx context.Context, req gen.UploadGroupPictureRequestObject) (gen.UploadGroupPictureResponseObject, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	t, err := a.pictures.Group(ctx, who.User, req.Id)
	if err != nil {
		return nil, err
	}
	if _, err := a.uploadPicture(ctx, req.Body, t, who.User.ID); err != nil {
		return nil, err
	}
	g, err := a.groups.Get(ctx, who.User, req.Id)
	if err != nil {
		return nil, err
	}
	return gen.UploadGroupPicture200JSONResponse(groupResponse(a.publicBase(ctx), g)), nil
}

// DeleteGroupPicture removes the picture of a group the caller manages (also when none).
func (a *API) DeleteGroupPicture(ctx context.Context, req gen.DeleteGroupPictureRequestObject) (gen.DeleteGroupPictureResponseObject, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	t, err := a.pictures.Group(ctx, who.User, req.Id)
	if err != nil {
		return nil, err
	}
	if err := a.pictures.Clear(ctx, t); err != nil {
		return nil, err
	}
	return gen.DeleteGroupPicture200JSONResponse(deleted()), nil
}

// The streamed pictures, with pictureHeaders.
type (
	userPicture struct {
		gen.GetUserPicture200ImageResponse
	}
	myPicture struct {
		gen.GetMyPicture200ImageResponse
	}
	agentPicture struct {
		gen.GetAgentPicture200ImageResponse
	}
	groupPicture struct {
		gen.GetGroupPicture200ImageResponse
	}
)

func (r userPicture) VisitGetUserPictureResponse(w http.ResponseWriter) error {
	pictureHeaders(w)
	return r.GetUserPicture200ImageResponse.VisitGetUserPictureResponse(w)
}

func (r myPicture) VisitGetMyPictureResponse(w http.ResponseWriter) error {
	pictureHeaders(w)
	return r.GetMyPicture200ImageResponse.VisitGetMyPictureResponse(w)
}

func (r agentPicture) VisitGetAgentPictureResponse(w http.ResponseWriter) error {
	pictureHeaders(w)
	return r.GetAgentPicture200ImageResponse.VisitGetAgentPictureResponse(w)
}

func (r groupPicture) VisitGetGroupPictureResponse(w http.ResponseWriter) error {
	pictureHeaders(w)
	return r.GetGroupPicture200ImageResponse.VisitGetGroupPictureResponse(w)
}
