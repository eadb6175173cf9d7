package api

import (
	"bufio"
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// toMediaAsset converts a media asset.
func toMediaAsset(m *store.MediaAsset) gen.MediaAsset {
	return gen.MediaAsset{
		Id: m.ID, PrincipalId: m.PrincipalID, Filename: m.Filename, MimeType: m.MimeType, Size: m.Size,
		Kind: gen.MediaAssetKind(m.Kind), Width: m.Width, Height: m.Height, Keep: m.Keep, ExpiresAt: m.ExpiresAt,
		ParentId: m.ParentID, CreatedAt: m.CreatedAt,
	}
}

func mediaResponse(m *store.MediaAsset) gen.MediaResponse {
	var r gen.MediaResponse
	r.Data.Media = toMediaAsset(m)
	return r
}

// visibleMedia returns a live asset the caller can see (ErrNotFound otherwise).
func (a *API) visibleMedia(ctx context.Context, id string) (*store.MediaAsset, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	return a.media.Visible(ctx, who.User, id)
}

// ListMediaAssets lists the live assets of the caller's visible principals, narrowed by
// principal_id[] (out-of-scope ids dropped silently) and kind.
func (a *API) ListMediaAssets(ctx context.Context, req gen.ListMediaAssetsRequestObject) (gen.ListMediaAssetsResponseObject, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	var principals []int64
	if req.Params.PrincipalId != nil {
		principals = append([]int64{}, *req.Params.PrincipalId...)
	}
	page, per := pageArgs(req.Params.Page, req.Params.PerPage)
	q := store.MediaQuery{Page: page, PerPage: per}
	if req.Params.Kind != nil {
		q.Kind = string(*req.Params.Kind)
	}
	list, err := a.media.ListVisible(ctx, who.User, principals, q)
	if err != nil {
		return nil, err
	}
	var r gen.ListMediaAssets200JSONResponse
	r.Data.Media = make([]gen.MediaAsset, 0, len(list))
	for i := range list {
		r.Data.Media = append(r.Data.Media, toMediaAsset(&list[i]))
	}
	return r, nil
}

// multipartErr maps a failure to read a multipart body: over the body limit 413, otherwise 400.
func multipartErr(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return svcerr.New(svcerr.ErrTooLarge, "the request body is larger than %d bytes", mbe.Limit)
	}
	if _, _, ok := svcerr.Public(err); ok {
		return err
	}
	return svcerr.New(svcerr.ErrBadRequest, "the multipart body could not be read")
}

// missingFilePart is the answer to an upload without its file.
var missingFilePart = svcerr.New(svcerr.ErrBadRequest, "the multipart part `file` is missing")

// uploadParts reads a multipart upload: the part named `file` is passed to save as it streams
// (save returns the asset it stored); the text field `keep` (when wanted) is parsed wherever it
// appears. Other parts are skipped. A missing or empty file part, or a second one, is 400; undo
// (when set) is given the asset already saved for an upload refused after it, so a refused
// request leaves nothing.
func uploadParts(body *multipart.Reader, save func(filename string, data io.Reader) (*store.MediaAsset, error), undo func(*store.MediaAsset), keep *bool) (saved *store.MediaAsset, err error) {
	if body == nil {
		return nil, missingFilePart
	}
	defer func() {
		if err != nil && saved != nil {
			if undo != nil {
				undo(saved)
			}
			saved = nil
		}
	}()
	for {
		p, err := body.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return saved, multipartErr(err)
		}
		switch name := p.FormName(); {
		case name == "file" && saved != nil:
			return saved, svcerr.New(svcerr.ErrBadRequest, "only one multipart part `file` is accepted")
		case name == "file":
			data := bufio.NewReader(p)
			if _, err := data.Peek(1); errors.Is(err, io.EOF) {
				return saved, svcerr.New(svcerr.ErrBadRequest, "the multipart part `file` is empty")
			}
			if saved, err = save(p.FileName(), data); err != nil {
				return saved, err
			}
		case name == "keep" && keep != nil:
			v, err := io.ReadAll(io.LimitReader(p, 16))
			if err != nil {
				return saved, multipartErr(err)
			}
			b, perr := strconv.ParseBool(strings.TrimSpace(string(v)))
			if perr != nil {
				return saved, svcerr.New(svcerr.ErrInvalid, "keep must be true or false")
			}
			*keep = b
		default:
			if _, err := io.Copy(io.Discard, p); err != nil {
				return saved, multipartErr(err)
			}
		}
		_ = p.Close()
	}
	if saved == nil {
		return nil, missingFilePart
	}
	return saved, nil
}

// discard undoes the save of a refused upload.
func (a *API) discard(ctx context.Context) func(*store.MediaAsset) {
	return func(m *store.MediaAsset) { a.media.Discard(ctx, m.ID) }
}

// UploadMediaAsset stores an upload of the caller, owned by their personal principal.
func (a *API) UploadMediaAsset(ctx context.Context, req gen.UploadMediaAssetRequestObject) (gen.UploadMediaAssetResponseObject, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	keep := false
	saved, err := uploadParts(req.Body, func(filename string, data io.Reader) (*store.MediaAsset, error) {
		// keep may arrive after the file: the asset is saved unkept and kept below if asked.
		return a.media.Save(ctx, media.NewAsset{PrincipalID: who.User.PrincipalID, Filename: filename,
			Data: data, UploadedBy: &who.User.ID, Keep: keep})
	}, a.discard(ctx), &keep)
	if err != nil {
		return nil, err
	}
	if keep && !saved.Keep {
		if saved, err = a.media.SetKeep(ctx, saved.ID, true, nil); err != nil {
			return nil, err
		}
	}
	return gen.UploadMediaAsset201JSONResponse(mediaResponse(saved)), nil
}

// CreateMediaDerivative makes a resized or converted copy of a visible image.
func (a *API) CreateMediaDerivative(ctx context.Context, req gen.CreateMediaDerivativeRequestObject) (gen.CreateMediaDerivativeResponseObject, error) {
	src, err := a.visibleMedia(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	who, _ := caller(ctx)
	b := req.Body
	dr := media.DeriveRequest{Operation: string(b.Operation), Width: b.Width, Height: b.Height, Quality: b.Quality, UploadedBy: &who.User.ID}
	if b.Format != nil {
		dr.Format = string(*b.Format)
	}
	d, err := a.media.Derive(ctx, src, dr)
	if err != nil {
		return nil, err
	}
	return gen.CreateMediaDerivative201JSONResponse(mediaResponse(d)), nil
}

// GetMediaDerivativeOptions lists what derivatives a visible asset supports.
func (a *API) GetMediaDerivativeOptions(ctx context.Context, req gen.GetMediaDerivativeOptionsRequestObject) (gen.GetMediaDerivativeOptionsResponseObject, error) {
	m, err := a.visibleMedia(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	o, err := a.media.DerivativeOptions(ctx, m)
	if err != nil {
		return nil, err
	}
	var r gen.GetMediaDerivativeOptions200JSONResponse
	r.Data.Options = gen.MediaDerivativeOptions{
		Operations: make([]gen.MediaDerivativeOptionsOperations, 0, len(o.Operations)),
		Formats:    make([]gen.MediaDerivativeOptionsFormats, 0, len(o.Formats)),
		MaxWidth:   o.MaxWidth, MaxHeight: o.MaxHeight, MinQuality: o.MinQuality, MaxQuality: o.MaxQuality,
		DefaultQuality: o.DefaultQuality,
	}
	for _, op := range o.Operations {
		r.Data.Options.Operations = append(r.Data.Options.Operations, gen.MediaDerivativeOptionsOperations(op))
	}
	for _, f := range o.Formats {
		r.Data.Options.Formats = append(r.Data.Options.Formats, gen.MediaDerivativeOptionsFormats(f))
	}
	return r, nil
}

// SetMediaAssetKeep sets the keep flag (callers who manage the owning principal).
func (a *API) SetMediaAssetKeep(ctx context.Context, req gen.SetMediaAssetKeepRequestObject) (gen.SetMediaAssetKeepResponseObject, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	m, err := a.media.SetKeepAs(ctx, who.User, req.Id, req.Body.Keep)
	if err != nil {
		return nil, err
	}
	return gen.SetMediaAssetKeep200JSONResponse(mediaResponse(m)), nil
}

// ListAllowedMediaTypes lists the accepted upload types per kind.
func (a *API) ListAllowedMediaTypes(ctx context.Context, _ gen.ListAllowedMediaTypesRequestObject) (gen.ListAllowedMediaTypesResponseObject, error) {
	if _, err := caller(ctx); err != nil {
		return nil, err
	}
	var r gen.ListAllowedMediaTypes200JSONResponse
	r.Data.Kinds = []gen.AllowedMediaKind{}
	for _, k := range a.media.Allowed() {
		r.Data.Kinds = append(r.Data.Kinds, gen.AllowedMediaKind{Kind: gen.AllowedMediaKindKind(k.Kind), MaxSize: k.MaxSize, MimeTypes: k.MimeTypes})
	}
	return r, nil
}

// ResolveMediaAssets looks up to 100 ids: the visible live assets in first-occurrence order,
// and the rest as missing.
func (a *API) ResolveMediaAssets(ctx context.Context, req gen.ResolveMediaAssetsRequestObject) (gen.ResolveMediaAssetsResponseObject, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	found, missing, err := a.media.Resolve(ctx, who.User, req.Body.Ids)
	if err != nil {
		return nil, err
	}
	var r gen.ResolveMediaAssets200JSONResponse
	r.Data.Media, r.Data.Missing = make([]gen.MediaAsset, 0, len(found)), missing
	for _, m := range found {
		r.Data.Media = append(r.Data.Media, toMediaAsset(m))
	}
	return r, nil
}
