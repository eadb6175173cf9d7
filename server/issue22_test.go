package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

// logLines parses the JSON log in buf.
func logLines(t *testing.T, buf *syncBuffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// TestBodyCutShortIsBadRequest: a client that hangs up in the middle of its body (Content-Length
// larger than what it sends) is answered 400 BAD_REQUEST and logged at info, not 500 at error —
// also on the per-agent chat start, whose inline files are decoded while the body streams.
func TestBodyCutShortIsBadRequest(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	env := apitest.NewWith(t, apitest.Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}, "SVC_AGENT_API=true")
	owner, _ := env.UserClient("owner@example.com")
	a := mkAgent(t, owner, map[string]any{"name": "Cut"})
	k := mintKey(t, owner, a.Id, "cut")
	addr := serve(t, env)

	for _, tc := range []struct{ name, path, auth, ctype, body string }{
		{"chat start, inside a file", "/agent-api/chats", "Bearer " + k.Key, "application/json",
			`{"text":"hello","files":[{"data_url":"data:text/plain;base64,aGVsbG8gd29ybGQ`},
		{"chat start, before the files", "/agent-api/chats", "Bearer " + k.Key, "application/json", `{"text":"hel`},
		{"login", "/auth/login", "", "application/json", `{"email":"ada@exa`},
		{"media upload (multipart)", "/agent-api/media", "Bearer " + k.Key, "multipart/form-data; boundary=xyz",
			"--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nhello wo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			head := fmt.Sprintf("POST %s%s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n",
				apitest.API, tc.path, addr, tc.ctype, len(tc.body)+1000)
			if tc.auth != "" {
				head += "Authorization: " + tc.auth + "\r\n"
			}
			if _, err := io.WriteString(conn, head+"\r\n"+tc.body); err != nil {
				t.Fatal(err)
			}
			if err := conn.(*net.TCPConn).CloseWrite(); err != nil { // the client hangs up mid-body
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			answer, _ := io.ReadAll(conn)
			if !strings.HasPrefix(string(answer), "HTTP/1.1 400 ") || !strings.Contains(string(answer), `"code":"BAD_REQUEST"`) {
				t.Errorf("answer %q, want 400 BAD_REQUEST", answer)
			}
		})
	}
	found := 0
	for _, m := range logLines(t, &buf) {
		if m["level"] == "ERROR" {
			t.Errorf("error line for a body cut short: %v", m)
		}
		if m["msg"] == "request" && m["status"] == float64(400) {
			if m["level"] != "INFO" {
				t.Errorf("request line %v, want level INFO", m)
			}
			found++
		}
	}
	if found != 4 {
		t.Errorf("%d request lines of 400, want 4: %s", found, buf.String())
	}
}

// TestForwardedHeadersCannotRotate: behind a trusted proxy (the test peer 192.0.2.10), the
// client address is the right-most untrusted hop; a left-most X-Forwarded-For entry the client
// made up — rotated on every attempt — does not escape the login rate limit, whichever of the
// two headers the proxy sets. Clients the proxy tells apart keep their own budgets.
func TestForwardedHeadersCannotRotate(t *testing.T) {
	t.Parallel()
	const real = "198.51.100.7"
	for _, tt := range []struct {
		name    string
		headers func(i int) map[string]string
		limited bool
	}{
		{"proxy appends to X-Forwarded-For and sets X-Real-IP", func(i int) map[string]string {
			return map[string]string{"X-Forwarded-For": fmt.Sprintf("203.0.113.%d, %s", i+1, real), "X-Real-IP": real}
		}, true},
		{"proxy sets X-Real-IP, passes the client's X-Forwarded-For", func(i int) map[string]string {
			return map[string]string{"X-Forwarded-For": fmt.Sprintf("203.0.113.%d", i+1), "X-Real-IP": real}
		}, true},
		{"proxy appends to X-Forwarded-For, passes the client's X-Real-IP", func(i int) map[string]string {
			return map[string]string{"X-Forwarded-For": real, "X-Real-IP": fmt.Sprintf("203.0.113.%d", i+1)}
		}, true},
		{"made-up entry that is not an address", func(i int) map[string]string {
			return map[string]string{"X-Forwarded-For": fmt.Sprintf("client-%d", i+1)}
		}, true},
		{"a chain of trusted proxies", func(i int) map[string]string {
			return map[string]string{"X-Forwarded-For": fmt.Sprintf("203.0.113.%d, %s, 10.1.2.3", i+1, real)}
		}, true},
		{"distinct clients", func(i int) map[string]string {
			return map[string]string{"X-Forwarded-For": fmt.Sprintf("203.0.113.%d", i+1), "X-Real-IP": fmt.Sprintf("203.0.113.%d", i+1)}
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := apitest.New(t, "SVC_TRUSTED_PROXIES=192.0.2.0/24, 10.0.0.0/8")
			c := env.Client()
			for i := range 11 {
				res := c.Do(apitest.Request{Method: "POST", Path: "/auth/login",
					Body:   map[string]any{"email": "nobody@example.com", "password": "wrong password"},
					Header: tt.headers(i)})
				if i < 10 || !tt.limited {
					res.Expect(t, 401, "UNAUTHENTICATED")
				} else {
					res.Expect(t, 429, "TOO_MANY_REQUESTS")
				}
			}
		})
	}
}

// loopbackListener accepts connections on 127.0.0.1 and hands each to serve (nil: close at
// once); it counts them.
type loopbackListener struct {
	port     int
	accepted atomic.Int32
}

func listenLoopback(t *testing.T, serve func(net.Conn)) *loopbackListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &loopbackListener{port: ln.Addr().(*net.TCPAddr).Port}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			go func() {
				defer c.Close()
				if serve != nil {
					serve(c)
				}
			}()
		}
	}()
	return l
}

type mailOutcome struct {
	Sent  bool
	Error *string
}

func testMail(t *testing.T, adm *apitest.Client, host string, port int) mailOutcome {
	t.Helper()
	adm.Put("/mail-config", map[string]any{"driver": "smtp", "host": host, "port": port, "encryption": "none",
		"from_address": "svc@example.com"}).Expect(t, 200)
	var res gen.TestMailOutcomeResponse
	adm.Post("/mail-config/test", map[string]any{"to": "ada@example.com"}).Expect(t, 200).Decode(t, &res)
	return mailOutcome{Sent: res.Data.Sent, Error: res.Data.Error}
}

// TestMailTestScreened: the SMTP host an administrator saves must pass the outbound screen;
// a loopback host not listed in mail_allowed_hosts is refused before any connection is made.
func TestMailTestScreened(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	adm, _ := env.UserClient("root@example.com")
	l := listenLoopback(t, nil)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		got := testMail(t, adm, host, l.port)
		if got.Sent || got.Error == nil || !strings.Contains(*got.Error, "mail_allowed_hosts") {
			t.Errorf("test mail to %s = %+v, want refused naming mail_allowed_hosts", host, got)
		}
	}
	if n := l.accepted.Load(); n != 0 {
		t.Fatalf("%d connections reached the loopback listener, want none", n)
	}
}

// TestMailTestOneFailureMessage: with the host allowed (mail_allowed_hosts), every connection
// failure — closed port, a port that closes at once, one that answers another protocol, one
// that never answers — is the same message, naming no address.
func TestMailTestOneFailureMessage(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_MAIL_ALLOWED_HOSTS=127.0.0.1")
	env.App.MailConfig.Timeout = time.Second
	adm, _ := env.UserClient("root@example.com")
	hangup := listenLoopback(t, nil)
	http := listenLoopback(t, func(c net.Conn) { io.WriteString(c, "HTTP/1.1 400 Bad Request\r\n\r\n") })
	silent := listenLoopback(t, func(c net.Conn) { time.Sleep(3 * time.Second) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	msgs := map[string]string{}
	for name, port := range map[string]int{"closed": closedPort, "hangup": hangup.port, "http": http.port, "silent": silent.port} {
		got := testMail(t, adm, "127.0.0.1", port)
		if got.Sent || got.Error == nil {
			t.Fatalf("%s: %+v, want a failure", name, got)
		}
		msgs[name] = *got.Error
		for _, leak := range []string{"127.0.0.1", fmt.Sprint(port), "refused", "EOF", "HTTP", "timeout"} {
			if strings.Contains(*got.Error, leak) {
				t.Errorf("%s: message %q names %q", name, *got.Error, leak)
			}
		}
	}
	if msgs["closed"] != msgs["hangup"] || msgs["closed"] != msgs["http"] || msgs["closed"] != msgs["silent"] {
		t.Errorf("messages differ: %q", msgs)
	}
}

// TestSubscriberNotificationWithoutPrompt: a group member subscribed to a group agent is told
// that a task of another member completed or failed, without its prompt or error text (that
// task answers them 404) and without its id; the task's owner, following the agent too, still
// reads the prompt. The mail
// of an email subscription says no more than the notification.
// Not parallel: the scripted driver reads its script from the working directory.
func TestSubscriberNotificationWithoutPrompt(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	if err := os.WriteFile(filepath.Join(work, "script.json"), []byte(`[{"text": "42."}]`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apitest.New(t)
	owner, _ := env.UserClient("owner@example.com")
	member, memberU := env.UserClient("member@example.com")
	var g struct {
		Data struct{ Group gen.Group } `json:"data"`
	}
	owner.Post("/groups", map[string]any{"name": "Lab"}).Expect(t, 201).Decode(t, &g)
	owner.Post(fmt.Sprintf("/groups/%d/members", g.Data.Group.Id), map[string]any{"user_id": fmt.Sprint(memberU.Id), "role": "member"}).Expect(t, 201)
	owner.Post(fmt.Sprintf("/groups/%d/llm-configs", g.Data.Group.Id), map[string]any{
		"name": "script", "driver": "scripted", "model": "script", "base_url": "script.json", "is_default": true,
	}).Expect(t, 201)
	var a gen.AgentResponse
	owner.Post("/agents", map[string]any{"name": "Calc", "system_prompt": "Compute.", "principal_id": g.Data.Group.PrincipalId}).
		Expect(t, 201).Decode(t, &a)
	member.Post("/notifications/subscriptions", map[string]any{"target_type": "agent", "target_id": a.Data.Agent.Id, "email": true}).
		Expect(t, 201)
	owner.Post("/notifications/subscriptions", map[string]any{"target_type": "agent", "target_id": a.Data.Agent.Id}).Expect(t, 201)
	env.DrainMail()
	before := len(env.Mails())

	const prompt = "Draft the owner's confidential merger memo"
	var created gen.TaskResponse
	owner.Post("/tasks", map[string]any{"agent_id": a.Data.Agent.Id, "prompt": prompt}).Expect(t, 201).Decode(t, &created)
	if tk := runQueued(t, env.App); tk.Status != "COMPLETED" {
		t.Fatalf("task is %s", tk.Status)
	}
	member.Get(fmt.Sprintf("/tasks/%d", created.Data.Task.Id)).Expect(t, 404, "NOT_FOUND")

	mine, _ := listNotifications(t, owner, "")
	if len(mine) != 1 || !strings.Contains(mine[0].Body, prompt) || mine[0].TaskId == nil {
		t.Fatalf("owner's notifications = %+v, want the prompt", mine)
	}
	theirs, _ := listNotifications(t, member, "")
	if len(theirs) != 1 || theirs[0].Kind != "task_completed" {
		t.Fatalf("member's notifications = %+v", theirs)
	}
	n := theirs[0]
	if strings.Contains(n.Title+n.Body, "merger") || n.TaskId != nil || !strings.Contains(n.Body, "Calc") ||
		n.AgentId == nil || *n.AgentId != a.Data.Agent.Id {
		t.Fatalf("member's notification = %+v: want the agent, no prompt, no task id", n)
	}
	env.DrainMail()
	mails := env.Mails()[before:]
	if len(mails) != 1 {
		t.Fatalf("%d mails, want the member's notification mail", len(mails))
	}
	if strings.Contains(mails[0].Subject+mails[0].TextBody, "merger") {
		t.Fatalf("the member's mail names the prompt: %s", mails[0].TextBody)
	}
}
