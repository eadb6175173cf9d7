package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/store"
)

// UploadAgentMedia stores a file sent with an agent's key: owned by the agent's principal,
// marked as the agent's, not kept.
func (a *API) UploadAgentMedia(ctx context.Context, req gen.UploadAgentMediaRequestObject) (gen.UploadAgentMediaResponseObject, error) {
	k, err := agentKey(ctx)
	if err != nil {
		return nil, err
	}
	ag, err := a.store.Agent(ctx, k.AgentID, k.CreatedBy)
	if err != nil {
		return nil, err
	}
	saved, err := uploadParts(req.Body, func(filename string, data io.Reader) (*store.MediaAsset, error) {
		agentID := ag.ID
		return a.media.Save(ctx, media.NewAsset{PrincipalID: ag.PrincipalID, Filename: filename, Data: data,
			MaxBytes: media.MaxAgentUploadBytes, AgentID: &agentID})
	}, a.discard(ctx), nil)
	if err != nil {
		return nil, err
	}
	return gen.UploadAgentMedia201JSONResponse{Data: toMediaAsset(saved)}, nil
}

// GetAgentMedia streams an asset the key's agent may read; every other id answers 404.
func (a *API) GetAgentMedia(ctx context.Context, req gen.GetAgentMediaRequestObject) (gen.GetAgentMediaResponseObject, error) {
	k, err := agentKey(ctx)
	if err != nil {
		return nil, err
	}
	m, err := a.media.ReadableByAgent(ctx, k.AgentID, req.MediaId)
	if err != nil {
		return nil, err
	}
	f, err := a.media.Open(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("upload could not be read from disk: %w", err)
	}
	disp := contentDisposition(m.Filename)
	return inlineMedia{gen.GetAgentMedia200AsteriskResponse{Body: f, ContentType: m.MimeType, ContentLength: m.Size,
		Headers: gen.GetAgentMedia200ResponseHeaders{ContentDisposition: &disp}}}, nil
}

// inlineMedia adds X-Content-Type-Options: nosniff to the streamed asset, so a browser keeps
// the detected type.
type inlineMedia struct {
	gen.GetAgentMedia200AsteriskResponse
}

func (r inlineMedia) VisitGetAgentMediaResponse(w http.ResponseWriter) error {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	return r.GetAgentMedia200AsteriskResponse.VisitGetAgentMediaResponse(w)
}

// contentDisposition renders `inline; filename="<name>"` with an ASCII fallback name, plus the
// RFC 5987 filename* form when the name is not plain ASCII.
func contentDisposition(name string) string {
	ascii := strings.Map(func(r rune) rune {
		if r < 0x20 || r >= 0x7f || r == '"' || r == '\\' {
			return '_'
		}
		return r
	}, name)
	out := `inline; filename="` + ascii + `"`
	if ascii != name {
		out += "; filename*=UTF-8''" + strings.ReplaceAll(url.PathEscape(name), "+", "%2B")
	}
	return out
}
