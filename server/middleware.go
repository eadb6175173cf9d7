package server

import (
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentsvc/svc/internal/domain/account"
)

// Keys of what the chain records for the request log (gin context values).
const (
	logKeyID     = "svc.log.key_id"     // the per-agent API key that authenticated the request
	logErrorCode = "svc.log.error_code" // the envelope code of a failure
)

// Security headers on every response: no content sniffing, no framing, a content policy that
// loads nothing (the API serves data, never pages). Production adds HSTS.
const (
	contentSecurityPolicy = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
	strictTransport       = "max-age=31536000"
)

func (s *Server) securityHeaders(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("Referrer-Policy", "no-referrer")
	if cfg := s.cfg.View(); cfg != nil && cfg.IsProduction() {
		h.Set("Strict-Transport-Security", strictTransport)
	}
	c.Next()
}

// logRequests writes one line per request: method, route (the pattern, so no ids or query
// strings), status, duration, the user or API key that made it and the envelope code of a
// failure. Server errors log at error level, everything else at info. Never a body, header,
// cookie or token.
func (s *Server) logRequests(c *gin.Context) {
	start := time.Now()
	c.Next()
	status := c.Writer.Status()
	attrs := []slog.Attr{
		slog.String("method", c.Request.Method),
		slog.String("route", c.FullPath()),
		slog.Int("status", status),
		slog.Int64("duration_ms", time.Since(start).Milliseconds()),
	}
	if c.FullPath() == "" {
		attrs = append(attrs, slog.String("path", c.Request.URL.Path))
	}
	if id := account.IdentityFrom(c.Request.Context()); id != nil && id.User != nil {
		attrs = append(attrs, slog.Int64("user_id", id.User.ID))
	}
	if k := c.GetString(logKeyID); k != "" {
		attrs = append(attrs, slog.String("key_id", k))
	}
	if code := c.GetString(logErrorCode); code != "" {
		attrs = append(attrs, slog.String("code", code))
	}
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	s.log.LogAttrs(c.Request.Context(), level, "request", attrs...)
}
