// Package svcerr holds the closed set of error categories every layer wraps its failures in.
// The HTTP layer maps a category to one status and envelope code in exactly one place; lower
// layers only say which category a failure belongs to and add context with %w.
package svcerr

import (
	"errors"
	"fmt"
	"time"
)

// Category sentinels. Wrap them (fmt.Errorf("load user 3: %w", ErrNotFound)) or use New to
// attach a message that is safe to show to the caller.
var (
	ErrBadRequest           = errors.New("bad request")
	ErrUnauthenticated      = errors.New("authentication required")
	ErrForbidden            = errors.New("forbidden")
	ErrCSRF                 = errors.New("missing or invalid CSRF token")
	ErrNotFound             = errors.New("not found")
	ErrMethodNotAllowed     = errors.New("method not allowed")
	ErrConflict             = errors.New("conflict")
	ErrInvalidState         = errors.New("invalid state")
	ErrTooLarge             = errors.New("payload too large")
	ErrUnsupportedMediaType = errors.New("unsupported media type")
	ErrInvalid              = errors.New("validation error")
	ErrRateLimited          = errors.New("too many requests")
	ErrNotImplemented       = errors.New("not implemented")
	ErrUnavailable          = errors.New("service unavailable")
	ErrSkillsMissing        = errors.New("a tool recommends a skill that does not exist")
	// ErrAgentAPIDisabled: a per-agent API request while that API is off (its own code, so a
	// script tells a switched-off API from a mistyped path).
	ErrAgentAPIDisabled = errors.New("the per-agent API is off")
	// ErrBudgetExceeded: a budget of the caller's key, agent, group or user is used up for its
	// period (issue 27); 429 with Retry-After at the budget's reset.
	ErrBudgetExceeded = errors.New("budget exceeded")
)

// Error is a categorised failure with a message meant for the API caller.
type Error struct {
	Kind       error         // one of the sentinels above
	Msg        string        // safe to return to the caller
	RetryAfter time.Duration // for ErrRateLimited
	// Details, when set, is sent beside the envelope's error as its "details" member: a value
	// of the contract's types (the API layer sets it for the operations whose refusals the
	// contract documents with details), safe to return to the caller.
	Details any
}

func (e *Error) Error() string { return e.Msg }

// Unwrap lets errors.Is match the category.
func (e *Error) Unwrap() error { return e.Kind }

// New returns a categorised error whose message is shown to the caller.
func New(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// RateLimited returns an ErrRateLimited error telling the caller when to retry.
func RateLimited(retryAfter time.Duration, msg string) error {
	return &Error{Kind: ErrRateLimited, Msg: msg, RetryAfter: retryAfter}
}

// Public returns the caller-facing message of err: the message given to New, or the category's
// own text. ok is false when err belongs to no category (an internal failure whose text must not
// leave the server).
func Public(err error) (msg string, kind error, ok bool) {
	var e *Error
	if errors.As(err, &e) && e.Kind != nil {
		return e.Msg, e.Kind, true
	}
	for _, k := range categories {
		if errors.Is(err, k) {
			return k.Error(), k, true
		}
	}
	return "", nil, false
}

// DetailsOf returns the details carried by err, or nil.
func DetailsOf(err error) any {
	var e *Error
	if errors.As(err, &e) {
		return e.Details
	}
	return nil
}

// RetryAfterOf returns the retry hint carried by err, or zero.
func RetryAfterOf(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

var categories = []error{
	ErrBadRequest, ErrUnauthenticated, ErrForbidden, ErrCSRF, ErrNotFound, ErrMethodNotAllowed,
	ErrConflict, ErrInvalidState, ErrTooLarge, ErrUnsupportedMediaType, ErrInvalid, ErrRateLimited,
	ErrNotImplemented, ErrUnavailable, ErrSkillsMissing, ErrBudgetExceeded,
}
