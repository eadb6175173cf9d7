package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// validCode reports whether code is one a model call may fail with.
func validCode(code string) bool {
	switch code {
	case taskstate.CodeRateLimit, taskstate.CodeServerOverloaded, taskstate.CodeServerError,
		taskstate.CodeGatewayError, taskstate.CodeAuthError, taskstate.CodeLLMTimeout,
		taskstate.CodeBadRequest, taskstate.CodeContextTooLong, taskstate.CodeUnknown:
		return true
	}
	return false
}

// Error is the only error type drivers return. Message is safe to store and show: it never
// contains the API key. Unwrap gives the underlying SDK or context error for errors.Is/As
// (for example errors.Is(err, context.Canceled) when the caller gave up).
type Error struct {
	Code       string
	Message    string
	RetryAfter time.Duration // the provider's Retry-After, zero when absent
	Transient  bool          // taskstate.IsTransient(Code)
	// StatusCode is the provider's HTTP status, zero when the call did not get an answer.
	StatusCode int
	cause      error
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.cause }

func newError(code, msg string, status int, cause error) *Error {
	return &Error{Code: code, Message: msg, Transient: taskstate.IsTransient(code), StatusCode: status, cause: cause}
}

// codeForStatus maps a provider's HTTP status to a task error code.
func codeForStatus(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return taskstate.CodeRateLimit
	case status == 529 || status == http.StatusServiceUnavailable:
		return taskstate.CodeServerOverloaded
	case status == http.StatusBadGateway || status == http.StatusGatewayTimeout:
		return taskstate.CodeGatewayError
	case status == http.StatusRequestTimeout:
		return taskstate.CodeLLMTimeout
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return taskstate.CodeAuthError
	case status == http.StatusBadRequest || status == http.StatusNotFound ||
		status == http.StatusUnprocessableEntity || status == http.StatusRequestEntityTooLarge:
		return taskstate.CodeBadRequest
	case status >= 500 && status <= 599:
		return taskstate.CodeServerError
	}
	return taskstate.CodeUnknown
}

// classifyTransport classifies a failure that did not come with an HTTP answer: context
// errors, client timeouts and network errors. ctx is the call's own (timeout-bounded) context.
func classifyTransport(ctx context.Context, provider string, timeout time.Duration, err error) *Error {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		if timeout <= 0 {
			return newError(taskstate.CodeLLMTimeout, provider+" call deadline exceeded", 0, err)
		}
		return newError(taskstate.CodeLLMTimeout, fmt.Sprintf("%s did not answer within %s", provider, timeout), 0, err)
	case errors.As(err, &ne) && ne.Timeout():
		return newError(taskstate.CodeLLMTimeout, provider+" call timed out in the HTTP client", 0, err)
	case errors.Is(err, context.Canceled):
		return newError(taskstate.CodeUnknown, provider+" call cancelled", 0, err)
	case errors.Is(err, netguard.ErrBlocked):
		// The outbound screen refused the base URL's address: a configuration to change, not a
		// failing gateway, so nothing is retried.
		return newError(taskstate.CodeBadRequest, provider+" endpoint refused: the base URL's address is private or loopback and not among llm_allowed_hosts", 0, err)
	case errors.As(err, &ne):
		// Connection refused or reset, DNS failure: the endpoint could not be reached, which
		// behaves like a failing gateway and deserves the same retries.
		return newError(taskstate.CodeGatewayError, provider+" endpoint unreachable", 0, err)
	}
	return newError(taskstate.CodeUnknown, provider+" call failed", 0, err)
}

// httpError builds the error for an HTTP answer with an error status.
func httpError(code, provider string, status int, providerMsg, apiKey string, header http.Header, cause error) *Error {
	if code == taskstate.CodeBadRequest && tooLong(providerMsg) {
		code = taskstate.CodeContextTooLong
	}
	msg := fmt.Sprintf("%s answered HTTP %d", provider, status)
	if providerMsg = sanitize(providerMsg, apiKey); providerMsg != "" {
		msg += ": " + providerMsg
	}
	e := newError(code, msg, status, cause)
	e.RetryAfter = retryAfter(header, time.Now())
	return e
}

// contextWordings are how providers refuse a request longer than the model's context window:
// OpenAI's code and message, Anthropic's, and the common OpenAI-compatible servers' (vLLM,
// llama.cpp, Ollama, LM Studio, OpenRouter).
var contextWordings = []string{
	"context_length_exceeded", "maximum context length", "prompt is too long", "context window",
	"context length", "exceeds the context", "too many tokens", "input is too long",
	"reduce the length of the messages", "longer than the model's context",
}

// tooLong reports whether a provider's refusal says the request does not fit the context window.
func tooLong(providerMsg string) bool {
	m := strings.ToLower(providerMsg)
	for _, w := range contextWordings {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}

// maxMessage bounds the provider text kept in an error message, in characters: an excerpt,
// since the endpoint may be one the task's owner should not read (its body is not ours to copy).
const maxMessage = 200

// sanitize removes the API key from provider text, replaces control and other non-printing
// characters with spaces, collapses white space and keeps at most maxMessage characters.
func sanitize(s, apiKey string) string {
	if apiKey != "" {
		s = strings.ReplaceAll(s, apiKey, "[redacted]")
	}
	s = strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, s)), " ")
	if utf8.RuneCountInString(s) > maxMessage {
		s = string([]rune(s)[:maxMessage]) + "…"
	}
	return s
}

// retryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
