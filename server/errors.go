package server

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/agentsvc/svc/svcerr"
)

// errorStatus is the one map from an error category to an HTTP status and envelope code.
var errorStatus = []struct {
	kind   error
	status int
	code   string
}{
	{svcerr.ErrBadRequest, http.StatusBadRequest, "BAD_REQUEST"},
	{svcerr.ErrUnauthenticated, http.StatusUnauthorized, "UNAUTHENTICATED"},
	{svcerr.ErrCSRF, http.StatusForbidden, "CSRF_TOKEN_INVALID"},
	{svcerr.ErrForbidden, http.StatusForbidden, "FORBIDDEN"},
	{svcerr.ErrNotFound, http.StatusNotFound, "NOT_FOUND"},
	{svcerr.ErrMethodNotAllowed, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED"},
	{svcerr.ErrInvalidState, http.StatusConflict, "INVALID_STATE"},
	{svcerr.ErrConflict, http.StatusConflict, "CONFLICT"},
	{svcerr.ErrTooLarge, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE"},
	{svcerr.ErrUnsupportedMediaType, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"},
	{svcerr.ErrInvalid, http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
	{svcerr.ErrRateLimited, http.StatusTooManyRequests, "TOO_MANY_REQUESTS"},
	{svcerr.ErrSkillsMissing, http.StatusInternalServerError, "TOOLS_RECOMMENDS_SKILLS_MISSING"},
	{svcerr.ErrNotImplemented, http.StatusNotImplemented, "NOT_IMPLEMENTED"},
	{svcerr.ErrUnavailable, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE"},
}

// envelope is the failure body; every error response of the service is one of these.
type envelope struct {
	Error envelopeError `json:"error"`
}

type envelopeError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// classify maps err to status, code and the message the caller may see. Errors outside every
// category are internal: the caller sees a generic message and the real error is logged.
func classify(err error) (status int, code, msg string) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE",
			"request body exceeds " + strconv.FormatInt(mbe.Limit, 10) + " bytes"
	}
	msg, kind, ok := svcerr.Public(err)
	if ok {
		for _, e := range errorStatus {
			if kind == e.kind {
				return e.status, e.code, msg
			}
		}
	}
	return http.StatusInternalServerError, "INTERNAL", "internal error"
}

// writeError sends err as the envelope and aborts the gin chain.
func writeError(c *gin.Context, log *slog.Logger, err error) {
	status, code, msg := classify(err)
	if status == http.StatusInternalServerError && code == "INTERNAL" {
		log.ErrorContext(c.Request.Context(), "request failed",
			"method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
	}
	if ra := svcerr.RetryAfterOf(err); ra > 0 && status == http.StatusTooManyRequests {
		secs := int((ra + 999_999_999) / 1_000_000_000)
		c.Header("Retry-After", strconv.Itoa(max(secs, 1)))
	}
	c.AbortWithStatusJSON(status, envelope{Error: envelopeError{Code: code, Message: msg}})
}
