// Package apitest drives the real gin engine in tests: a fresh store (SQLite, or MariaDB/MySQL
// when SVC_TEST_MYSQL_DSN is set), an in-process SMTP server that receives the real mail, a
// fake clock, and clients with cookie jars. Every response a test receives is validated against
// openapi.yaml, so the implementation cannot drift from the contract.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/domain/mail/mailtest"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/server"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func init() {
	// Event streams (x-event-stream) are typed as a string in the contract; their data lines are
	// checked against the TaskEvent schema by the tests that read them.
	openapi3filter.RegisterBodyDecoder("text/event-stream", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		b, err := io.ReadAll(body)
		return string(b), err
	})
}

// Prefix is the mount prefix tests run under; API is the API base.
const (
	Prefix = "/svc"
	API    = Prefix + "/api/v1"
)

// Env is one running service under test.
type Env struct {
	T       testing.TB
	App     *server.App
	Mail    *mailtest.Server
	Clock   *testkit.Clock
	handler http.Handler
}

// Contract returns the embedded contract, the one the service checks requests against and Do
// checks answers against, shared by the whole test process: read it, never change it.
func Contract(t testing.TB) *openapi3.T {
	t.Helper()
	doc, _, err := server.EmbeddedContract()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// New starts a service. env holds extra SVC_* settings (for example SVC_ALLOW_REGISTRATION=false).
func New(t testing.TB, env ...string) *Env {
	t.Helper()
	return NewWith(t, Options{}, env...)
}

// Options are what a test may change of the service beyond its SVC_* settings.
type Options struct {
	// Net is the outbound SSRF screen (callback URLs, read_url); AllowLoopback lets the
	// service reach httptest servers.
	Net netguard.Options
	// Logger receives the service's log; nil discards it.
	Logger *slog.Logger
	// Store is the database to run on (storetest.Twin of another Env's store: a second svc
	// process on the same database); nil: a fresh one.
	Store *store.Store
	// APIOnly builds the service as `svc serve --api-only` does (server.Options.APIOnly).
	APIOnly bool
}

// NewWith starts a service with o.
func NewWith(t testing.TB, o Options, env ...string) *Env {
	t.Helper()
	dir := t.TempDir()
	smtp := mailtest.Start(t)
	environ := []string{
		"SVC_CONFIG_FILE=" + filepath.Join(dir, "config.yaml"),
		"SVC_KEY_PATH=" + filepath.Join(dir, "secret.key"),
		"SVC_LOG_LEVEL=error",
		"SVC_LOG_PATH=stdout",
		"SVC_APP_PREFIX=" + Prefix,
		"SVC_MAIL_DRIVER=smtp",
		"SVC_MAIL_HOST=" + smtp.Host(),
		"SVC_MAIL_PORT=" + strconv.Itoa(smtp.Port()),
		"SVC_MAIL_ENCRYPTION=none",
		"SVC_MAIL_FROM=svc@example.test",
		"SVC_PLUGINS_DIR=" + filepath.Join(dir, "plugins"), // none unless the test writes some
	}
	environ = append(environ, env...)
	clock := testkit.NewClock(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	st := o.Store
	if st == nil {
		st = storetest.NewWithClock(t, clock.Now)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	app, err := server.Open(context.Background(), config.NewLoader(environ), server.Options{
		Store:   st,
		Clock:   clock.Now,
		Logger:  logger,
		Hash:    account.HashParams{MemoryKiB: 1024, Time: 1, Threads: 1},
		Net:     o.Net,
		APIOnly: o.APIOnly,
		// Media files live in the test's directory.
		MediaDir: filepath.Join(dir, "media"),
	})
	if err != nil {
		t.Fatalf("open app: %v", err)
	}
	t.Cleanup(func() { _ = app.Close() })
	return &Env{T: t, App: app, Mail: smtp, Clock: clock, handler: app.HTTP.Handler()}
}

// DrainMail sends every due mail of the service's outbox to the in-process SMTP server now
// (server.App.DrainMail): the harness does not start the background work, so a test that
// reads mail after an action drains first instead of sleeping.
func (e *Env) DrainMail() {
	e.T.Helper()
	if _, err := e.App.DrainMail(context.Background()); err != nil {
		e.T.Fatalf("drain the mail outbox: %v", err)
	}
}

// Mails drains the outbox and returns every message the SMTP server received so far.
func (e *Env) Mails() []mailtest.Received {
	e.T.Helper()
	e.DrainMail()
	return e.Mail.Messages()
}

// WaitMail drains the outbox and waits (5 s at most) until the SMTP server received n
// messages, returning them all.
func (e *Env) WaitMail(n int) []mailtest.Received {
	e.T.Helper()
	e.DrainMail()
	return e.Mail.WaitFor(e.T, n, 5*time.Second)
}

// Client is a browser: a cookie jar and the CSRF token it learned.
type Client struct {
	env     *Env
	cookies map[string]*http.Cookie
	CSRF    string
	IP      string
}

// Client returns a new anonymous client.
func (e *Env) Client() *Client {
	return &Client{env: e, cookies: map[string]*http.Cookie{}, IP: "192.0.2.10"}
}

// CookieHeader is the client's cookies as one Cookie header, for a request to a live server
// that Do (bound to the engine) cannot make, such as an event stream read as it arrives.
func (c *Client) CookieHeader() string {
	parts := make([]string, 0, len(c.cookies))
	for _, ck := range c.cookies {
		parts = append(parts, ck.Name+"="+ck.Value)
	}
	return strings.Join(parts, "; ")
}

// Response is a recorded answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Request describes one call; Path is relative to the API base unless it starts with Prefix.
type Request struct {
	Method, Path string
	Body         any               // marshalled as JSON unless []byte or string
	ContentType  string            // default application/json when Body is set
	Header       map[string]string // extra headers
	NoCSRF       bool              // do not send the learned CSRF token
}

// Do sends r through the engine, validates the answer against the contract and returns it.
func (c *Client) Do(r Request) *Response {
	t := c.env.T
	t.Helper()
	path := r.Path
	if !strings.HasPrefix(path, Prefix) {
		path = API + path
	}
	var body io.Reader
	var raw []byte
	switch b := r.Body.(type) {
	case nil:
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	if raw != nil {
		body = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(r.Method, path, body)
	req.RemoteAddr = c.IP + ":41234"
	if raw != nil {
		ct := r.ContentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	for _, ck := range c.cookies {
		req.AddCookie(ck)
	}
	if c.CSRF != "" && !r.NoCSRF {
		req.Header.Set("X-CSRF-Token", c.CSRF)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	c.env.handler.ServeHTTP(rec, req)
	res := &Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	for _, ck := range (&http.Response{Header: rec.Header()}).Cookies() {
		if ck.MaxAge < 0 || ck.Value == "" {
			delete(c.cookies, ck.Name)
		} else {
			c.cookies[ck.Name] = ck
		}
	}
	c.env.validate(t, req, raw, res)
	return res
}

// validate checks res against the operation of req in openapi.yaml; answers outside every
// operation (unknown routes, wrong methods) must still be the error envelope.
func (e *Env) validate(t testing.TB, req *http.Request, reqBody []byte, res *Response) {
	t.Helper()
	if !strings.HasPrefix(req.URL.Path, API+"/") || req.URL.Path == API+"/openapi.yaml" {
		return // outside the contract's operations (health, the contract document itself)
	}
	rel := req.Clone(context.Background())
	// Match the raw path, as the server does: an encoded slash stays inside its segment.
	rel.URL.Path = strings.TrimPrefix(req.URL.EscapedPath(), API)
	rel.URL.RawPath = ""
	rel.Body = io.NopCloser(bytes.NewReader(reqBody))
	_, router, _ := server.EmbeddedContract() // loaded by server.Open in NewWith
	route, params, err := router.FindRoute(rel)
	for name, v := range params {
		if s, uerr := url.PathUnescape(v); uerr == nil {
			params[name] = s
		}
	}
	if err != nil {
		if res.Status < 400 {
			t.Errorf("%s %s answered %d but is no operation of the contract", req.Method, req.URL.Path, res.Status)
		}
		e.checkEnvelope(t, req, res)
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: rel, PathParams: params, Route: route},
		Status:                 res.Status,
		Header:                 res.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(res.Body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s: response %d violates openapi.yaml: %v\nbody: %s", req.Method, req.URL.Path, res.Status, err, res.Body)
	}
	if res.Status >= 400 {
		e.checkEnvelope(t, req, res)
	}
}

func (e *Env) checkEnvelope(t testing.TB, req *http.Request, res *Response) {
	t.Helper()
	var env struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		// Beside error where the operation's contract documents it (a refused template
		// import); ValidateResponse refuses it elsewhere (Error has no other member).
		Details json.RawMessage `json:"details"`
	}
	dec := json.NewDecoder(bytes.NewReader(res.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil || env.Error == nil || env.Error.Code == "" || env.Error.Message == "" {
		t.Errorf("%s %s: status %d without the error envelope: %s", req.Method, req.URL.Path, res.Status, res.Body)
		return
	}
	if !gen.ErrorCode(env.Error.Code).Valid() {
		t.Errorf("%s %s: error code %q is not in the contract's registry", req.Method, req.URL.Path, env.Error.Code)
	}
}

// Get, Post, Put, Patch and Delete are shorthands for Do.
func (c *Client) Get(path string) *Response { return c.Do(Request{Method: http.MethodGet, Path: path}) }

// Post sends body as JSON.
func (c *Client) Post(path string, body any) *Response {
	return c.Do(Request{Method: http.MethodPost, Path: path, Body: body})
}

// Put sends body as JSON.
func (c *Client) Put(path string, body any) *Response {
	return c.Do(Request{Method: http.MethodPut, Path: path, Body: body})
}

// Patch sends body as JSON.
func (c *Client) Patch(path string, body any) *Response {
	return c.Do(Request{Method: http.MethodPatch, Path: path, Body: body})
}

// Delete sends a DELETE.
func (c *Client) Delete(path string) *Response {
	return c.Do(Request{Method: http.MethodDelete, Path: path})
}

// Expect fails the test unless the status (and, for errors, the envelope code) match.
func (r *Response) Expect(t testing.TB, status int, code ...string) *Response {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body: %s", r.Status, status, r.Body)
	}
	if len(code) > 0 && r.Code() != code[0] {
		t.Fatalf("error code %q, want %q; body: %s", r.Code(), code[0], r.Body)
	}
	return r
}

// Code is the envelope's error code, or "".
func (r *Response) Code() string {
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &env)
	return env.Error.Code
}

// Decode unmarshals the body into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Register registers an account and fails the test unless it is created.
func (c *Client) Register(email, password string) gen.User {
	c.env.T.Helper()
	var out gen.UserResponse
	c.Post("/auth/register", map[string]any{"email": email, "password": password}).Expect(c.env.T, 201).Decode(c.env.T, &out)
	return out.Data.User
}

// Login logs in and keeps the session cookie and CSRF token.
func (c *Client) Login(email, password string) gen.User {
	c.env.T.Helper()
	var out gen.SessionResponse
	c.Post("/auth/login", map[string]any{"email": email, "password": password}).Expect(c.env.T, 200).Decode(c.env.T, &out)
	c.CSRF = out.Data.CsrfToken
	return out.Data.User
}

// UserClient registers (when needed) and logs in a user, returning a ready client.
func (e *Env) UserClient(email string) (*Client, gen.User) {
	c := e.Client()
	c.Register(email, "password-"+email)
	return c, c.Login(email, "password-"+email)
}

// String describes the environment's database for logs.
func (e *Env) String() string { return fmt.Sprintf("apitest env on %s", storetest.Dialect()) }
