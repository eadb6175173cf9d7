package main

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentsvc/svc/bench/outside"
)

// client is a signed-in session of the session API (cookie and CSRF token), as a browser has.
type client struct{ *outside.Session }

const (
	benchEmail    = "bench@example.com"
	benchPassword = "svcbench-password-1"
)

// register creates the bench's account (the first one: an administrator) and signs in; base
// is the site's http://addr{app_prefix}.
func register(base string) (*client, error) {
	s, err := outside.Register(base+"/api/v1", benchEmail, benchPassword, 64)
	if err != nil {
		return nil, err
	}
	return &client{s}, nil
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
				id, err := c.CreateTask(agentID, fmt.Sprintf("What is 6*7? (task %d)", i))
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
