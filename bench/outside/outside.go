// Package outside drives a running svc from outside, as an operator's script would: a signed-in
// session of the session API over real HTTP (cookie and CSRF token, like a browser), and the
// helpers that give a process a free port and wait until it answers. The multi-instance drill
// (scripts/drill) and the benchmark program (bench/svcbench) share it; it imports nothing of the
// service, so what they measure and check is the binary's behaviour only.
package outside

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"time"
)

// Session is a signed-in session of the session API.
type Session struct {
	Base   string // the API root, http://addr{app_prefix}/api/v1
	HTTP   *http.Client
	CSRF   string
	UserID int64
}

// NewHTTPClient is a client keeping up to conns idle connections to one host (a load
// generator's requests reuse connections instead of opening one each), with a cookie jar.
func NewHTTPClient(conns int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = conns
	tr.MaxIdleConns = 4 * conns
	jar, _ := cookiejar.New(nil)
	return &http.Client{Transport: tr, Jar: jar, Timeout: 60 * time.Second}
}

// Register creates an account (the first of a site becomes its administrator) and signs in.
func Register(base, email, password string, conns int) (*Session, error) {
	s := &Session{Base: base, HTTP: NewHTTPClient(conns)}
	body := map[string]any{"email": email, "password": password, "display_name": "Outside"}
	if err := s.Do(http.MethodPost, "/auth/register", body, http.StatusCreated, nil); err != nil {
		return nil, err
	}
	return Login(base, email, password, conns)
}

// Login signs in at the API root base; conns as NewHTTPClient.
func Login(base, email, password string, conns int) (*Session, error) {
	s := &Session{Base: base, HTTP: NewHTTPClient(conns)}
	var out struct {
		Data struct {
			CsrfToken string `json:"csrf_token"`
			User      struct {
				ID int64 `json:"id"`
			} `json:"user"`
		} `json:"data"`
	}
	if err := s.Do(http.MethodPost, "/auth/login", map[string]any{"email": email, "password": password}, http.StatusOK, &out); err != nil {
		return nil, err
	}
	s.CSRF, s.UserID = out.Data.CsrfToken, out.Data.User.ID
	return s, nil
}

// Do sends one request (path below the API root) with body as JSON, and decodes the answer into
// out (when not nil). An answer with another status than want is an error quoting it.
func (s *Session) Do(method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.Base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.CSRF != "" {
		req.Header.Set("X-CSRF-Token", s.CSRF)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// CreateAgent creates an agent and returns its id; with calculator, its calculator tool is
// enabled and its operation auto-approved (a task makes one call, then answers).
func (s *Session) CreateAgent(name, systemPrompt string, calculator bool) (int64, error) {
	var a struct {
		Data struct {
			Agent struct {
				ID int64 `json:"id"`
			} `json:"agent"`
		} `json:"data"`
	}
	if err := s.Do(http.MethodPost, "/agents", map[string]any{"name": name, "system_prompt": systemPrompt}, http.StatusCreated, &a); err != nil {
		return 0, err
	}
	id := a.Data.Agent.ID
	if calculator {
		tool := fmt.Sprintf("/agents/%d/tools/core.CalculatorTool", id)
		if err := s.Do(http.MethodPost, tool+"/enable", nil, http.StatusOK, nil); err != nil {
			return 0, err
		}
		if err := s.Do(http.MethodPatch, tool+"/operations/calculate", map[string]any{"enabled": true, "auto_approve": true}, http.StatusOK, nil); err != nil {
			return 0, err
		}
	}
	return id, nil
}

// CreateTask queues a task of agentID and returns its id.
func (s *Session) CreateTask(agentID int64, prompt string) (int64, error) {
	var out struct {
		Data struct {
			Task struct {
				ID int64 `json:"id"`
			} `json:"task"`
		} `json:"data"`
	}
	err := s.Do(http.MethodPost, "/tasks", map[string]any{"agent_id": agentID, "prompt": prompt}, http.StatusCreated, &out)
	return out.Data.Task.ID, err
}

// FreeAddr is a loopback address with a port free at the moment of the call.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// WaitHTTP waits until GET u answers 200, for at most bound.
func WaitHTTP(u string, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer 200 within %s (%v)", u, bound, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
