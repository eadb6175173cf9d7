package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gin-gonic/gin"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// readHeaderTimeout bounds the reading of a request's headers.
const readHeaderTimeout = 10 * time.Second

// minBodyRate is the slowest rate, in bytes per second, a body larger than the default cap may
// arrive at: an operation with a larger cap gets http_read_timeout plus cap/minBodyRate to
// receive its body (and as much more to answer).
const minBodyRate = 256 << 10

// admitBody runs before a request body is read. It takes one of the max_request_bodies slots,
// waiting up to half of http_read_timeout (the waiting request's own read time runs meanwhile),
// else answers 503; the caller calls release when the request is done. An operation with a
// body cap above the default gets its read and write deadlines extended in proportion.
func (s *Server) admitBody(c *gin.Context, limit int64) (release func(), err error) {
	cfg := s.cfg.View()
	wait := time.NewTimer(time.Duration(cfg.HTTPReadTimeout) * time.Second / 2)
	defer wait.Stop()
	select {
	case s.bodies <- struct{}{}:
	case <-wait.C:
		s.log.WarnContext(c.Request.Context(), "request body refused: max_request_bodies are being received", "max_request_bodies", cap(s.bodies))
		return nil, svcerr.New(svcerr.ErrUnavailable, "the server is receiving too many request bodies; retry shortly")
	case <-c.Request.Context().Done():
		return nil, svcerr.New(svcerr.ErrUnavailable, "request cancelled while waiting to send its body")
	}
	if limit > defaultBodyLimit {
		read := time.Duration(cfg.HTTPReadTimeout)*time.Second + time.Duration(limit/minBodyRate)*time.Second
		s.extendDeadlines(c, read, read+time.Duration(cfg.HTTPWriteTimeout)*time.Second)
	}
	return func() { <-s.bodies }, nil
}

// extendDeadlines moves the connection's read and write deadlines to now plus read and write.
// Writers without deadlines (tests' recorders) are left alone.
func (s *Server) extendDeadlines(c *gin.Context, read, write time.Duration) {
	rc := http.NewResponseController(c.Writer)
	now := time.Now()
	if read > 0 {
		_ = rc.SetReadDeadline(now.Add(read)) // http.ErrNotSupported: no connection to bound
	}
	_ = rc.SetWriteDeadline(now.Add(write))
}

// longRunning gives operations that legitimately answer late their write time: the client-mode
// tick runs one agent step (a model call) before it answers, bounded by tick_lease_seconds;
// event streams (x-event-stream) answer for as long as the client listens.
func (s *Server) longRunning(c *gin.Context, op *openapi3.Operation) {
	if op.Extensions["x-event-stream"] == true {
		endlessWrites(c)
		return
	}
	if strings.EqualFold(op.OperationID, "tickTask") {
		cfg := s.cfg.View()
		s.extendDeadlines(c, 0, time.Duration(cfg.TickLeaseSeconds+cfg.HTTPWriteTimeout)*time.Second)
	}
}

// endlessWrites clears the write deadline of an event stream, which answers for as long as the
// subscriber listens.
func endlessWrites(c *gin.Context) {
	_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Time{}) // http.ErrNotSupported: nothing to clear
}
