package server

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gin-gonic/gin"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// readHeaderTimeout bounds the reading of a request's headers.
const readHeaderTimeout = 10 * time.Second

// minBodyRate is the rate, in bytes per second, by which an operation with a body cap above the
// default gets more total read time: http_read_timeout plus cap/minBodyRate to receive its body
// (and as much more to answer). The slowest rate a body may arrive at is another matter:
// min_body_bytes_per_second (pacedBody).
const minBodyRate = 256 << 10

// bodySlots are the max_request_bodies slots and who holds them: no client address holds (or
// waits for) more than max_request_bodies_per_client, so one address trickling bodies cannot
// make everyone else wait.
type bodySlots struct {
	slots chan struct{}
	mu    sync.Mutex
	held  map[string]int // client address → slots held or waited for
}

func newBodySlots(n int) *bodySlots {
	return &bodySlots{slots: make(chan struct{}, max(n, 1)), held: map[string]int{}}
}

// claim counts one more body of client, unless it already has perClient.
func (b *bodySlots) claim(client string, perClient int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held[client] >= perClient {
		return false
	}
	b.held[client]++
	return true
}

func (b *bodySlots) unclaim(client string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held[client]--; b.held[client] <= 0 {
		delete(b.held, client)
	}
}

// admitBody runs before a request body is read; arrived is when the request came in (its read
// time runs from there). A client address that already sends max_request_bodies_per_client
// bodies is refused at once; otherwise the request takes one of the max_request_bodies slots,
// waiting up to half of http_read_timeout (its own read time runs meanwhile), else answers 503.
// Admitted, its body is capped at limit (413) and must arrive at min_body_bytes_per_second
// (pacedBody: 400 when slower); an operation with a body cap above the default gets its read and
// write deadlines extended in proportion. The slot is released when the body has been read to
// its end, or when the caller calls release (when the request is done), whichever comes first.
// Errors: ErrUnavailable (with the default Retry-After).
func (s *Server) admitBody(c *gin.Context, limit int64, client string, arrived time.Time) (release func(), err error) {
	cfg := s.cfg.View()
	if !s.bodies.claim(client, cfg.MaxRequestBodiesPerClient) {
		s.log.InfoContext(c.Request.Context(), "request body refused: the client address sends max_request_bodies_per_client already",
			"max_request_bodies_per_client", cfg.MaxRequestBodiesPerClient)
		return nil, svcerr.New(svcerr.ErrUnavailable, "this client address is already sending %d request bodies; retry shortly", cfg.MaxRequestBodiesPerClient)
	}
	wait := time.NewTimer(time.Duration(cfg.HTTPReadTimeout) * time.Second / 2)
	defer wait.Stop()
	select {
	case s.bodies.slots <- struct{}{}:
	case <-wait.C:
		s.bodies.unclaim(client)
		s.log.WarnContext(c.Request.Context(), "request body refused: max_request_bodies are being received", "max_request_bodies", cap(s.bodies.slots))
		return nil, svcerr.New(svcerr.ErrUnavailable, "the server is receiving too many request bodies; retry shortly")
	case <-c.Request.Context().Done():
		s.bodies.unclaim(client)
		return nil, svcerr.New(svcerr.ErrUnavailable, "request cancelled while waiting to send its body")
	}
	read := time.Duration(cfg.HTTPReadTimeout) * time.Second
	if limit > defaultBodyLimit {
		read += time.Duration(limit/minBodyRate) * time.Second
		s.extendDeadlines(c, 0, read+time.Duration(cfg.HTTPWriteTimeout)*time.Second)
	}
	release = sync.OnceFunc(func() {
		<-s.bodies.slots
		s.bodies.unclaim(client)
	})
	rc := http.NewResponseController(c.Writer)
	paced := newPacedBody(c.Request.Body, int64(cfg.MinBodyBytesPerSecond), c.Request.ContentLength,
		arrived.Add(read), time.Now, rc.SetReadDeadline, release) // received: the slot is free for the next body
	c.Request.Body = readFailures{http.MaxBytesReader(c.Writer, paced, limit)}
	return release, nil
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
