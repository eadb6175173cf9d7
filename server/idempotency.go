package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gin-gonic/gin"

	"github.com/agentsvc/svc/api"
	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/domain/spool"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Idempotency-Key (issue 13): operations marked x-idempotent accept the header; the first
// request with a key per caller acts and its answer is kept (store.IdempotencyRetention); a
// repeat with the same request answers it again without acting, a repeat with another request
// is refused, and repeats that arrive while the first runs wait for its answer.

const (
	idempotencyHeader   = "Idempotency-Key"
	idempotencyReplayed = "Idempotent-Replayed"
	idempotencyWait     = 10 * time.Second // a repeat waits this long for the first request's answer
	idempotencyPoll     = 50 * time.Millisecond
)

// idempotent reports whether op is marked x-idempotent.
func idempotent(op *openapi3.Operation) bool {
	v, ok := op.Extensions["x-idempotent"].(bool)
	return ok && v
}

// idempotencyScope names the caller a key belongs to: a user (session API) or a per-agent API
// key ("" when neither is known).
func idempotencyScope(ctx context.Context) string {
	if k := api.AgentKeyFrom(ctx); k != nil {
		return "key:" + k.KeyID
	}
	if id := account.IdentityFrom(ctx); id != nil && id.User != nil {
		return "user:" + strconv.FormatInt(id.User.ID, 10)
	}
	return ""
}

// requestHash digests what makes two requests the same: method, path, body (JSON compared by
// its meaning, so key order and spacing do not matter; for spooled inline files the rewritten
// body) and the decoded inline files. The body is read and put back. Errors: those of
// readRawBody.
func requestHash(r *http.Request, files *spool.Files) (string, error) {
	body, err := readRawBody(r)
	if err != nil {
		return "", err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) == nil {
		if canon, err := json.Marshal(doc); err == nil { // map keys sorted
			body = canon
		}
	}
	h := sha256.New()
	for _, part := range append([]string{r.Method, r.URL.EscapedPath(), string(body)}, files.Digests()...) {
		h.Write([]byte(strconv.Itoa(len(part)) + ":" + part))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// capture keeps a copy of the answer written through it.
type capture struct {
	gin.ResponseWriter
	body bytes.Buffer
}

func (w *capture) Write(b []byte) (int, error) {
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *capture) WriteString(s string) (int, error) {
	w.body.WriteString(s)
	return w.ResponseWriter.WriteString(s)
}

// serveIdempotent runs the handler of a request carrying key under the idempotency rules: the
// first request acts and its answer is recorded (not a 5xx one); a repeat answers the recorded
// answer (waiting for it while the first runs), or is refused when its request differs.
func (s *Server) serveIdempotent(c *gin.Context, key, hash string) {
	ctx := c.Request.Context()
	scope := idempotencyScope(ctx)
	if scope == "" {
		c.Next()
		return
	}
	rec, started, err := s.store.BeginIdempotent(ctx, scope, key, hash)
	if err != nil {
		s.fail(c, err)
		return
	}
	if !started {
		s.replay(c, scope, key, hash, rec.RequestHash)
		return
	}
	w := &capture{ResponseWriter: c.Writer}
	c.Writer = w
	done := false
	defer func() {
		if !done { // the handler panicked: a retry acts again
			_ = s.store.AbandonIdempotent(context.WithoutCancel(ctx), scope, key)
		}
	}()
	c.Next()
	done = true
	status := w.Status()
	if status >= http.StatusInternalServerError {
		_ = s.store.AbandonIdempotent(context.WithoutCancel(ctx), scope, key)
		return
	}
	if err := s.store.FinishIdempotent(context.WithoutCancel(ctx), scope, key, status, w.Header().Get("Content-Type"), w.body.Bytes()); err != nil {
		s.log.WarnContext(ctx, "record idempotent answer", "err", err)
	}
}

// replay answers a repeat: the recorded answer once there is one.
func (s *Server) replay(c *gin.Context, scope, key, hash, firstHash string) {
	if hash != firstHash {
		s.fail(c, svcerr.New(svcerr.ErrInvalid, "the Idempotency-Key %q was used for a different request", key))
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), idempotencyWait)
	defer cancel()
	for {
		rec, err := s.store.Idempotency(ctx, scope, key)
		switch {
		case err != nil && ctx.Err() == nil:
			s.fail(c, svcerr.New(svcerr.ErrConflict, "the first request with Idempotency-Key %q failed; send it again", key))
			return
		case err == nil && rec.Status != nil:
			c.Header(idempotencyReplayed, "true")
			c.Data(*rec.Status, rec.ContentType, rec.Body)
			c.Abort()
			return
		}
		select {
		case <-ctx.Done():
			s.fail(c, svcerr.New(svcerr.ErrConflict, "a request with Idempotency-Key %q is still running; retry later", key))
			return
		case <-time.After(idempotencyPoll):
		}
	}
}
