package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// client is a signed-in session of the session API (cookie and CSRF token), as a browser has.
type client struct {
	base   string // http://addr/svc
	http   *http.Client
	csrf   string
	userID int64
}

const (
	benchEmail    = "bench@example.com"
	benchPassword = "svcbench-password-1"
)

func newHTTPClient(conns int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = conns
	tr.MaxIdleConns = 4 * conns
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// register creates the bench's account (the first one: an administrator) and signs in.
func register(base string) (*client, error) {
	c := &client{base: base, http: newHTTPClient(64)}
	if err := c.do(http.MethodPost, "/auth/register", map[string]any{"email": benchEmail, "password": benchPassword, "display_name": "Bench"}, 201, nil); err != nil {
		return nil, err
	}
	return login(base)
}

func login(base string) (*client, error) {
	jar, _ := cookiejar.New(nil)
	c := &client{base: base, http: newHTTPClient(64)}
	c.http.Jar = jar
	var out struct {
		Data struct {
			CsrfToken string `json:"csrf_token"`
			User      struct {
				ID int64 `json:"id"`
			} `json:"user"`
		} `json:"data"`
	}
	if err := c.do(http.MethodPost, "/auth/login", map[string]any{"email": benchEmail, "password": benchPassword}, 200, &out); err != nil {
		return nil, err
	}
	c.csrf, c.userID = out.Data.CsrfToken, out.Data.User.ID
	return c, nil
}

// do sends one API request (path below /api/v1) and decodes the answer into out.
func (c *client) do(method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.base+"/api/v1"+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.csrf != "" {
		req.Header.Set("X-CSRF-Token", c.csrf)
	}
	resp, err := c.http.Do(req)
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

// makeAgent creates an agent; with calculator, its calculator tool is enabled and auto-approved
// (a two-turn task: one call, then the answer).
func (c *client) makeAgent(name string, calculator bool) (int64, error) {
	var a struct {
		Data struct {
			Agent struct {
				ID int64 `json:"id"`
			} `json:"agent"`
		} `json:"data"`
	}
	if err := c.do(http.MethodPost, "/agents", map[string]any{"name": name, "system_prompt": "Answer briefly."}, 201, &a); err != nil {
		return 0, err
	}
	id := a.Data.Agent.ID
	if calculator {
		tool := fmt.Sprintf("/agents/%d/tools/core.CalculatorTool", id)
		if err := c.do(http.MethodPost, tool+"/enable", nil, 200, nil); err != nil {
			return 0, err
		}
		if err := c.do(http.MethodPatch, tool+"/operations/calculate", map[string]any{"enabled": true, "auto_approve": true}, 200, nil); err != nil {
			return 0, err
		}
	}
	return id, nil
}

func (c *client) createTask(agentID int64, prompt string) (int64, error) {
	var out struct {
		Data struct {
			Task struct {
				ID int64 `json:"id"`
			} `json:"task"`
		} `json:"data"`
	}
	err := c.do(http.MethodPost, "/tasks", map[string]any{"agent_id": agentID, "prompt": prompt}, 201, &out)
	return out.Data.Task.ID, err
}

// createTasks creates n tasks of agentID with `workers` concurrent requests.
func (c *client) createTasks(agentID int64, n, workers int) ([]int64, error) {
	ids := make([]int64, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				id, err := c.createTask(agentID, fmt.Sprintf("What is 6*7? (task %d)", i))
				if err != nil {
					once.Do(func() { first = fmt.Errorf("create task %d: %w", i, err) })
					next.Store(int64(n))
					return
				}
				ids[i] = id
			}
		}()
	}
	wg.Wait()
	return ids, first
}

// metrics scrapes {prefix}/metrics and returns the sum of each family's samples whose labels
// contain every given label (e.g. `kind="write"`): name → value.
func scrape(base string) (map[string]float64, error) {
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+metricsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		out[line[:sp]] = v // the full series name with its labels
	}
	return out, sc.Err()
}
