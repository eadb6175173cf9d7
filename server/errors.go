package server

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentsvc/svc/api"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// Retry-After of a 503: the database unavailable (storageRetryAfter), or any other 503 that did
// not say (unavailableRetryAfter).
const (
	storageRetryAfter     = 5 * time.Second
	unavailableRetryAfter = time.Second
)

// envelope is the failure body; every error response of the service is one of these.
type envelope struct {
	Error envelopeError `json:"error"`
	// Details is what the contract documents beside error for some refusals (the findings of
	// a refused template import); absent elsewhere.
	Details any `json:"details,omitempty"`
}

type envelopeError struct {
	Code    gen.ErrorCode `json:"code"`
	Message string        `json:"message"`
}

// storageUnavailable turns a failure of the database's moment (store.IsUnavailable: refused or
// lost connection, full disk, I/O error, busy beyond the busy wait) that no layer categorised
// into ErrUnavailable with a Retry-After; ok is false for any other error, and for a request
// body that could not be read (a client that hung up or trickled past its deadline fails with
// the same network errors a lost database connection does: that one is the client's, a 400).
func storageUnavailable(err error) (error, bool) {
	var bre *bodyReadError
	var mbe *http.MaxBytesError
	if errors.As(err, &bre) || errors.As(err, &mbe) {
		return err, false
	}
	if _, _, categorised := svcerr.Public(err); categorised || !store.IsUnavailable(err) {
		return err, false
	}
	return &svcerr.Error{Kind: svcerr.ErrUnavailable, Msg: "the database is unavailable; retry shortly",
		RetryAfter: storageRetryAfter}, true
}

// classify maps err to status, code and the message the caller may see. Errors outside every
// category are internal: the caller sees a generic message and the real error is logged.
func classify(err error) (status int, code gen.ErrorCode, msg string) {
	if u, ok := storageUnavailable(err); ok {
		err = u
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge, gen.ErrorCodePAYLOADTOOLARGE,
			"request body exceeds " + strconv.FormatInt(mbe.Limit, 10) + " bytes"
	}
	var bre *bodyReadError
	if errors.As(err, &bre) {
		var slow *bodyTooSlowError
		if errors.As(err, &slow) {
			return http.StatusBadRequest, gen.ErrorCodeBADREQUEST, slow.Error()
		}
		return http.StatusBadRequest, gen.ErrorCodeBADREQUEST, bodyUnreadMessage
	}
	if status, code, msg, ok := api.Classify(err); ok {
		return status, code, msg
	}
	return http.StatusInternalServerError, gen.ErrorCodeINTERNAL, "internal error"
}

// writeError sends err as the envelope and aborts the gin chain.
func writeError(c *gin.Context, log *slog.Logger, err error) {
	if u, ok := storageUnavailable(err); ok {
		log.WarnContext(c.Request.Context(), "request failed: database unavailable",
			"method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
		err = u
	}
	status, code, msg := classify(err)
	c.Set(logErrorCode, string(code))
	if status == http.StatusInternalServerError && code == gen.ErrorCodeINTERNAL {
		log.ErrorContext(c.Request.Context(), "request failed",
			"method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
	}
	var bre *bodyReadError
	if errors.As(err, &bre) { // the client hung up or was too slow: its doing, not the service's
		log.InfoContext(c.Request.Context(), "request body could not be read",
			"method", c.Request.Method, "path", c.Request.URL.Path, "err", bre.err)
		c.Header("Connection", "close") // the rest of the body may still arrive: not a new request
	}
	ra := svcerr.RetryAfterOf(err)
	if ra <= 0 && status == http.StatusServiceUnavailable {
		ra = unavailableRetryAfter
	}
	if ra > 0 && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
		secs := int((ra + time.Second - 1) / time.Second)
		c.Header("Retry-After", strconv.Itoa(max(secs, 1)))
	}
	env := envelope{Error: envelopeError{Code: code, Message: msg}}
	if code != gen.ErrorCodeINTERNAL {
		env.Details = svcerr.DetailsOf(err)
	}
	c.AbortWithStatusJSON(status, env)
}
