package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/gin-gonic/gin"

	"github.com/agentsvc/svc/api"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/domain/chat"
	"github.com/agentsvc/svc/internal/domain/spool"
	"github.com/agentsvc/svc/internal/platform/ratelimit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Body limits. An operation may raise its own with the extension `x-max-body-bytes`.
const (
	defaultBodyLimit   = 1 << 20  // JSON bodies
	multipartBodyLimit = 32 << 20 // uploads without a limit of their own
	sessionCookieName  = "svc_session"
	csrfHeader         = "X-CSRF-Token"
)

// contract is the OpenAPI document the gate checks requests against.
type contract struct {
	doc    *openapi3.T
	router routers.Router
}

// embeddedContract is the embedded document's contract, parsed, validated and routed once per
// process and shared by every Server of it, which only read it (as a Server's requests share it).
// A process builds one Server, its tests hundreds: parsing the document per Server was over half
// of the server package's test CPU.
var embeddedContract = sync.OnceValues(func() (*contract, error) {
	doc, err := gen.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("load embedded contract: %w", err)
	}
	doc.Servers = nil // paths are matched relative to the API base
	r, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("build contract router: %w", err)
	}
	return &contract{doc: doc, router: r}, nil
})

// EmbeddedContract returns the process's parsed contract and its router (paths relative to the
// API base), for the test harness that checks every answer against the same document; callers
// only read them. Its error is the embedded document's failing to load, which New reports too.
func EmbeddedContract() (*openapi3.T, routers.Router, error) {
	k, err := embeddedContract()
	if err != nil {
		return nil, nil, err
	}
	return k.doc, k.router, nil
}

// route finds the operation of r, with base trimmed from its path. It matches the raw (escaped)
// path, as gin does (UseRawPath), so that an encoded slash stays inside one segment
// (/agent-templates/core%2Fresearcher), and returns the path parameters unescaped.
func (k *contract) route(r *http.Request, base string) (*routers.Route, map[string]string, error) {
	rel := *r
	u := *r.URL
	u.Path = strings.TrimPrefix(r.URL.EscapedPath(), base)
	u.RawPath = ""
	rel.URL = &u
	route, params, err := k.router.FindRoute(&rel)
	for name, v := range params {
		if s, uerr := url.PathUnescape(v); uerr == nil {
			params[name] = s
		}
	}
	return route, params, err
}

// gate is the middleware in front of every API operation: it finds the operation in the
// contract, caps the body, authenticates by the operation's security requirements, applies the
// operation's rate limit and validates the request. Anything that fails leaves as the envelope.
func (s *Server) gate(c *gin.Context) {
	arrived := time.Now()    // the request's read time runs from here (admitBody)
	if s.agentAPIHidden(c) { // an unmounted per-agent API answers AGENT_API_DISABLED
		return
	}
	route, params, err := s.contract.route(c.Request, s.apiBase)
	if err != nil {
		if errors.Is(err, routers.ErrMethodNotAllowed) {
			s.fail(c, svcerr.New(svcerr.ErrMethodNotAllowed, "method %s is not allowed here", c.Request.Method))
			return
		}
		// Not an operation of the contract: gin serves it (the contract document itself) or
		// answers its NoRoute envelope.
		c.Next()
		return
	}
	op := route.Operation
	c.Set(ctxOperation, operationID(op))
	hasBody := c.Request.Body != nil && c.Request.Body != http.NoBody
	ctx, err := s.authenticate(c, op)
	if err != nil {
		s.fail(c, err)
		return
	}
	pending := ratelimit.PendingFrom(ctx)
	if pending != nil {
		defer s.settleLimit(c, pending)
	}
	client := s.proxies.clientAddr(c.Request)
	if err := s.rateLimit(c, op, client); err != nil {
		s.fail(c, err)
		return
	}
	s.longRunning(c, op)
	if hasBody {
		release, err := s.admitBody(c, bodyLimit(op), client, arrived)
		if err != nil {
			s.fail(c, err)
			return
		}
		defer release()
	}
	ri := api.RequestInfo{Request: c.Request, ClientIP: client}
	if pending != nil {
		ri.Limit = limitHit(pending)
	}
	if hasBody && isJSON(c.ContentType()) {
		// JSON decoders replace invalid UTF-8 with U+FFFD: refuse it rather than store something
		// other than what was sent. Checked while the body streams, without another copy.
		c.Request.Body = newUTF8Body(c.Request.Body)
	}
	if hasBody && isJSON(c.ContentType()) && inlineFiles(op) {
		files, err := s.spoolInlineFiles(c.Request)
		if err != nil {
			c.Header("Connection", "close") // the rest of the body may still arrive
			s.fail(c, err)
			return
		}
		defer func() {
			if err := files.Close(); err != nil {
				s.log.Warn("remove inline files", "err", err)
			}
		}()
		ri.Inline = files
	}
	if keepsRawBody(op) {
		if ri.RawBody, err = readRawBody(c.Request); err != nil {
			s.fail(c, err)
			return
		}
	}
	idemKey := ""
	var idemHash string
	if idempotent(op) {
		if idemKey = c.GetHeader(idempotencyHeader); idemKey != "" {
			if idemHash, err = requestHash(c.Request, ri.Inline); err != nil {
				s.fail(c, err)
				return
			}
		}
	}
	ctx = api.WithRequestInfo(ctx, ri)
	c.Request = c.Request.WithContext(ctx)
	in := &openapi3filter.RequestValidationInput{
		Request:    c.Request,
		PathParams: params,
		Route:      route,
		Options: &openapi3filter.Options{
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
			KeepValidatedValue: true,
		},
	}
	if err := openapi3filter.ValidateRequest(c.Request.Context(), in); err != nil {
		if bodyUnread(err) {
			c.Header("Connection", "close") // the rest of the body may still arrive: not a new request
		}
		s.fail(c, requestError(err))
		return
	}
	// The validator reads the body and puts a copy back on the request it was handed; the
	// request handlers read through RequestInfo (the protocol endpoints) gets that body too.
	ri.Request.Body, ri.Request.GetBody = c.Request.Body, c.Request.GetBody
	if idemKey != "" {
		s.serveIdempotent(c, idemKey, idemHash) // the header's format was validated above
		return
	}
	c.Next()
}

// bodyUnreadMessage answers a body whose reading failed.
const bodyUnreadMessage = "request body could not be read (sent too slowly or cut short)"

// bodyReadError is a failure to read the request body itself: the client hung up mid-body,
// or sent it too slowly for the read deadline. The client's doing: 400, logged at info.
type bodyReadError struct{ err error }

func (e *bodyReadError) Error() string { return "reading the request body: " + e.err.Error() }
func (e *bodyReadError) Unwrap() error { return e.err }

// readFailures marks the read errors of a request body (other than its end and the body
// limit's 413) as bodyReadError, so that whoever reads it — the inline-file spool, the
// validator, a handler — fails with a 400 rather than an internal error.
type readFailures struct{ io.ReadCloser }

func (b readFailures) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		var mbe *http.MaxBytesError
		if !errors.As(err, &mbe) {
			err = &bodyReadError{err}
		}
	}
	return n, err
}

// isJSON reports whether the media type ct is JSON (application/json or a +json type).
func isJSON(ct string) bool {
	return ct == "application/json" || strings.HasSuffix(ct, "+json")
}

// keepsRawBody reports whether the handler of op needs the body exactly as sent: operations
// that take raw text (application/yaml or text/plain, the agent template uploads) and, with it,
// the same document as application/json, which must not be re-encoded before it is checked.
func keepsRawBody(op *openapi3.Operation) bool {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return false
	}
	content := op.RequestBody.Value.Content
	return content["application/yaml"] != nil || content["text/plain"] != nil
}

// readRawBody reads the (already capped) body and puts the same bytes back for the validator
// and the handler. An absent body reads as empty, never nil.
func readRawBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return []byte{}, nil
	}
	raw, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		var bre *bodyReadError
		if errors.Is(err, errInvalidUTF8) || errors.As(err, &bre) {
			return nil, err
		}
		return nil, svcerr.New(svcerr.ErrBadRequest, bodyUnreadMessage)
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }
	return raw, nil
}

// inlineFiles reports whether op is marked x-inline-files: its JSON body's files[].data_url
// strings are decoded while the body streams (package spool).
func inlineFiles(op *openapi3.Operation) bool {
	v, ok := op.Extensions["x-inline-files"].(bool)
	return ok && v
}

// spoolInlineFiles decodes the inline files of r's (capped, UTF-8-checked) JSON body to
// temporary files in the media storage's InlineDir and puts the rest of the document back as the body,
// each data URL replaced by its placeholder: a request then holds a few buffers, not copies of
// its files. The rest of the body is capped like any JSON body. Errors: those of spool.Rewrite.
func (s *Server) spoolInlineFiles(r *http.Request) (*spool.Files, error) {
	body, files, err := spool.Rewrite(r.Body, spool.Options{
		MakeDir: s.media.InlineDir, MaxFiles: chat.MaxFiles, Limit: chat.MaxInlineBytes, MaxRest: defaultBodyLimit,
	})
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return files, nil
}

func bodyLimit(op *openapi3.Operation) int64 {
	if v, ok := op.Extensions["x-max-body-bytes"]; ok {
		if f, ok := v.(float64); ok && f > 0 {
			return int64(f)
		}
	}
	if op.RequestBody != nil && op.RequestBody.Value != nil && op.RequestBody.Value.Content.Get("multipart/form-data") != nil {
		return multipartBodyLimit
	}
	return defaultBodyLimit
}

// authenticate enforces the operation's security requirements: a session (401), and on
// mutating session-API operations the CSRF token (403). Per-agent key requirements are met by
// the per-agent API itself.
func (s *Server) authenticate(c *gin.Context, op *openapi3.Operation) (context.Context, error) {
	ctx := c.Request.Context()
	reqs := s.contract.doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	if usesAgentKey(reqs) {
		return s.authenticateAgentKey(c, op) // bearer key only (server/agentapi.go)
	}
	needSession, needCSRF := false, false
	for _, req := range reqs {
		if _, ok := req["sessionCookie"]; ok {
			needSession = true
		}
		if _, ok := req["csrfToken"]; ok {
			needCSRF = true
		}
	}
	cookie, _ := c.Cookie(sessionCookieName)
	if !needSession {
		// Public operations still see who is calling when a valid session is present.
		if cookie != "" {
			if id, err := s.accounts.Authenticate(ctx, cookie); err == nil {
				ctx = account.WithIdentity(ctx, id)
			}
		}
		return ctx, nil
	}
	id, err := s.accounts.Authenticate(ctx, cookie)
	if err != nil {
		if errors.Is(err, svcerr.ErrUnauthenticated) {
			return nil, svcerr.New(svcerr.ErrUnauthenticated, "authentication required")
		}
		return nil, err
	}
	if needCSRF && !constantTimeEqual(c.GetHeader(csrfHeader), id.Session.CSRFToken) {
		return nil, svcerr.New(svcerr.ErrCSRF, "missing or invalid CSRF token")
	}
	return account.WithIdentity(ctx, id), nil
}

// rateLimit applies the limiter named by the operation's `x-rate-limit` extension, keyed by
// client address (clientAddr).
func (s *Server) rateLimit(c *gin.Context, op *openapi3.Operation, client string) error {
	name, _ := op.Extensions["x-rate-limit"].(string)
	if name == "" {
		return nil
	}
	lim, ok := s.limiters[name]
	if !ok {
		return fmt.Errorf("operation %s names unknown rate limit %q", op.OperationID, name)
	}
	ok, wait, err := lim.Check(c.Request.Context(), op.OperationID+"|"+client)
	if err != nil {
		return err
	}
	if !ok {
		return svcerr.RateLimited(wait, "too many requests; retry later")
	}
	return nil
}

// requestError turns a kin-openapi validation failure into a categorised error with a message
// a person can act on.
func requestError(err error) error {
	var mbe *http.MaxBytesError
	var bre *bodyReadError
	if errors.As(err, &mbe) || errors.Is(err, errInvalidUTF8) || errors.As(err, &bre) {
		return err
	}
	var re *openapi3filter.RequestError
	if errors.As(err, &re) {
		var pe *openapi3filter.ParseError
		if errors.As(re.Err, &pe) && re.RequestBody != nil {
			return svcerr.New(svcerr.ErrBadRequest, "request body is not valid JSON: %s", parseReason(pe))
		}
		if bodyUnread(re) {
			return svcerr.New(svcerr.ErrBadRequest, bodyUnreadMessage)
		}
		if re.RequestBody != nil && contentTypeRefused(re) {
			sent := ""
			if re.Input != nil && re.Input.Request != nil {
				sent = re.Input.Request.Header.Get("Content-Type")
			}
			return svcerr.New(svcerr.ErrUnsupportedMediaType, "Content-Type %q is not accepted here; send %s",
				sent, orList(slices.Sorted(maps.Keys(re.RequestBody.Content))))
		}
		if re.RequestBody != nil && errors.Is(re.Err, openapi3filter.ErrInvalidRequired) && re.RequestBody.Content.Get("multipart/form-data") != nil {
			return svcerr.New(svcerr.ErrBadRequest, "the multipart part `file` is missing")
		}
		where := "request body"
		if re.Parameter != nil {
			where = fmt.Sprintf("%s parameter %q", re.Parameter.In, re.Parameter.Name)
		}
		var se *openapi3.SchemaError
		if errors.As(re.Err, &se) {
			ptr := strings.Join(se.JSONPointer(), "/")
			if ptr != "" {
				return svcerr.New(svcerr.ErrInvalid, "%s: /%s: %s", where, ptr, se.Reason)
			}
			return svcerr.New(svcerr.ErrInvalid, "%s: %s", where, se.Reason)
		}
		reason := re.Reason
		if reason == "" && re.Err != nil {
			reason = re.Err.Error()
		}
		return svcerr.New(svcerr.ErrInvalid, "%s: %s", where, reason)
	}
	return svcerr.New(svcerr.ErrInvalid, "invalid request: %v", err)
}

// wholeJSONBodyDecoder is kin-openapi's JSON body decoder over the whole body, which must hold
// exactly one JSON value: anything but white space after it is a parse error (400 BAD_REQUEST),
// so the generated handlers, whose decoders stop after the first value too, never see it.
func wholeJSONBodyDecoder(body io.Reader, h http.Header, schema *openapi3.SchemaRef, enc openapi3filter.EncodingFn) (any, error) {
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	v, err := openapi3filter.JSONBodyDecoder(bytes.NewReader(raw), h, schema, enc)
	if err != nil {
		return nil, err
	}
	if !json.Valid(raw) { // the first value parsed: what makes the whole invalid follows it
		return nil, &openapi3filter.ParseError{Kind: openapi3filter.KindInvalidFormat, Reason: "unexpected data after the JSON value"}
	}
	return v, nil
}

// bodyUnread reports a body whose reading failed (read timeout, connection cut), as opposed to
// one that was read and refused.
func bodyUnread(err error) bool {
	var re *openapi3filter.RequestError
	var mbe *http.MaxBytesError
	return errors.As(err, &re) && re.RequestBody != nil && re.Reason == "reading failed" && !errors.As(err, &mbe)
}

// contentTypeRefused reports a body whose Content-Type the operation does not take.
func contentTypeRefused(re *openapi3filter.RequestError) bool {
	text := re.Reason
	if re.Err != nil {
		text += " " + re.Err.Error()
	}
	return strings.Contains(text, "header Content-Type has unexpected value") ||
		strings.Contains(text, "unsupported content type")
}

// orList joins xs as "a", "a or b", "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

func parseReason(pe *openapi3filter.ParseError) string {
	if pe.Cause != nil {
		return pe.Cause.Error()
	}
	return pe.Reason
}
