package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentsvc/svc/agentloop"
	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/jobs/worker"
	"github.com/agentsvc/svc/internal/platform/push"
)

const hubPath = apitest.Prefix + "/.well-known/mercure"

// mercureClaims is the subscriber token's body as a Mercure hub reads it.
type mercureClaims struct {
	Mercure struct {
		Subscribe []string `json:"subscribe"`
		Publish   []string `json:"publish"`
	} `json:"mercure"`
	jwt.RegisteredClaims
}

func authorize(t *testing.T, c *apitest.Client, query string) gen.SseAuthorizeResponse {
	t.Helper()
	var out gen.SseAuthorizeResponse
	c.Get("/sse/authorize"+query).Expect(t, 200).Decode(t, &out)
	return out
}

func TestSseEmbedded(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	c, u := env.UserClient("ada@example.com")
	_, other := env.UserClient("bob@example.com")
	own := push.OwnTopics(u.Id)

	var st gen.SseStatusResponse
	c.Get("/sse/status").Expect(t, 200).Decode(t, &st)
	if !st.Data.Available || st.Data.Hub != gen.SseHubEmbedded || st.Data.PollIntervalSeconds != 5 {
		t.Fatalf("status %+v", st.Data)
	}
	var info gen.SseAuthResponse
	c.Get("/sse/auth").Expect(t, 200).Decode(t, &info)
	if !info.Data.Available || info.Data.Hub != gen.SseHubEmbedded || info.Data.HubUrl == nil ||
		*info.Data.HubUrl != "http://localhost:8080/svc/.well-known/mercure" || !reflect.DeepEqual(info.Data.Topics, own) {
		t.Fatalf("auth %+v", info.Data)
	}

	tasks, notes := push.TaskTopic(u.Id), push.NotificationTopic(u.Id)
	cases := []struct {
		query string
		want  []string
	}{
		{"", own},
		{"?topic=" + notes, []string{notes}},
		{"?topic=" + tasks + "&topic=" + tasks, []string{tasks}},
		{"?topic=" + notes + "&topic=" + tasks, []string{notes, tasks}},
	}
	for _, tc := range cases {
		g := authorize(t, c, tc.query)
		if g.Data.Hub != gen.SseHubEmbedded || g.Data.HubUrl != *info.Data.HubUrl || !reflect.DeepEqual(g.Data.Topics, tc.want) ||
			!g.Data.ExpiresAt.Equal(env.Clock.Now().Add(push.TokenTTL)) {
			t.Fatalf("authorize%s: %+v", tc.query, g.Data)
		}
		var cl mercureClaims
		if _, _, err := jwt.NewParser().ParseUnverified(g.Data.Token, &cl); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cl.Mercure.Subscribe, tc.want) || cl.Mercure.Publish != nil || !cl.ExpiresAt.Equal(g.Data.ExpiresAt) {
			t.Fatalf("authorize%s: claims %+v", tc.query, cl)
		}
	}

	// Only the caller's own topics.
	for _, q := range []string{
		"?topic=" + push.TaskTopic(other.Id),
		"?topic=" + tasks + "&topic=" + push.NotificationTopic(other.Id),
		"?topic=*",
		"?topic=user/" + url.QueryEscape("{id}") + "/tasks",
	} {
		c.Get("/sse/authorize"+q).Expect(t, 403, "FORBIDDEN")
	}
	c.Get("/sse/authorize?topic=a&topic=b&topic=c").Expect(t, 422, "VALIDATION_ERROR")
	c.Get("/sse/authorize?topic=").Expect(t, 422, "VALIDATION_ERROR")

	anon := env.Client()
	for _, p := range []string{"/sse/status", "/sse/auth", "/sse/authorize"} {
		anon.Get(p).Expect(t, 401, "UNAUTHENTICATED")
	}
}

func TestSseMercure(t *testing.T) {
	t.Parallel()
	const hubURL = "https://hub.example.test/.well-known/mercure"
	env := apitest.New(t, "SVC_MERCURE_URL="+hubURL, "SVC_MERCURE_JWT_KEY=mercure-shared-secret")
	c, u := env.UserClient("ada@example.com")

	var st gen.SseStatusResponse
	c.Get("/sse/status").Expect(t, 200).Decode(t, &st)
	if !st.Data.Available || st.Data.Hub != gen.SseHubMercure {
		t.Fatalf("status %+v", st.Data)
	}
	var info gen.SseAuthResponse
	c.Get("/sse/auth").Expect(t, 200).Decode(t, &info)
	if info.Data.Hub != gen.SseHubMercure || info.Data.HubUrl == nil || *info.Data.HubUrl != hubURL {
		t.Fatalf("auth %+v", info.Data)
	}
	g := authorize(t, c, "?topic="+push.TaskTopic(u.Id))
	if g.Data.Hub != gen.SseHubMercure || g.Data.HubUrl != hubURL {
		t.Fatalf("authorize %+v", g.Data)
	}
	var cl mercureClaims
	if _, err := jwt.ParseWithClaims(g.Data.Token, &cl, func(*jwt.Token) (any, error) { return []byte("mercure-shared-secret"), nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithTimeFunc(env.Clock.Now), jwt.WithExpirationRequired()); err != nil {
		t.Fatalf("token does not verify with mercure_jwt_key: %v", err)
	}
	if !reflect.DeepEqual(cl.Mercure.Subscribe, []string{push.TaskTopic(u.Id)}) {
		t.Fatalf("claims %+v", cl)
	}
	c.Get("/sse/authorize?topic="+push.TaskTopic(u.Id+1)).Expect(t, 403, "FORBIDDEN")

	// The embedded hub is not in use.
	c.Get(hubPath+"?topic="+push.TaskTopic(u.Id)).Expect(t, 404, "NOT_FOUND")
}

func TestSseClientWorkerMode(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_WORKER_RUNTIME_MODE=client")
	c, u := env.UserClient("ada@example.com")

	var st gen.SseStatusResponse
	c.Get("/sse/status").Expect(t, 200).Decode(t, &st)
	if st.Data.Available || st.Data.Hub != gen.SseHubEmbedded || st.Data.PollIntervalSeconds != 5 {
		t.Fatalf("status %+v", st.Data)
	}
	var info gen.SseAuthResponse
	c.Get("/sse/auth").Expect(t, 200).Decode(t, &info)
	if info.Data.Available || info.Data.HubUrl != nil || !reflect.DeepEqual(info.Data.Topics, push.OwnTopics(u.Id)) {
		t.Fatalf("auth %+v", info.Data)
	}
	c.Get("/sse/authorize").Expect(t, 404, "NOT_FOUND")
	c.Get(hubPath+"?topic="+push.TaskTopic(u.Id)).Expect(t, 404, "NOT_FOUND")
}

// sseStream reads the data of the events of one open subscription.
func sseStream(t *testing.T, resp *http.Response) <-chan string {
	t.Helper()
	out := make(chan string, 16)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var data []string
		for sc.Scan() {
			switch line := sc.Text(); {
			case line == "" && data != nil:
				out <- strings.Join(data, "\n")
				data = nil
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return out
}

func nextEvent(t *testing.T, events <-chan string) string {
	t.Helper()
	select {
	case d, ok := <-events:
		if !ok {
			t.Fatal("stream ended")
		}
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return ""
}

// TestSseEndToEnd subscribes through the real engine over real HTTP and receives what the
// service publishes.
func TestSseEndToEnd(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	srv := httptest.NewServer(env.App.HTTP.Handler())
	t.Cleanup(srv.Close)
	c, u := env.UserClient("ada@example.com")
	_, other := env.UserClient("bob@example.com")
	g := authorize(t, c, "")
	base := srv.URL + hubPath
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	open := func(t *testing.T, client *http.Client, query url.Values, header http.Header) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"?"+query.Encode(), nil)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	expect := func(t *testing.T, resp *http.Response, status int, code string) {
		t.Helper()
		if resp.StatusCode != status {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, b)
		}
		if code == "" {
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("content type %q", ct)
			}
			return
		}
		var e struct {
			Error struct{ Code, Message string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Error.Code != code || e.Error.Message == "" {
			t.Fatalf("envelope %+v (%v), want %s", e, err, code)
		}
	}
	bearer := http.Header{"Authorization": {"Bearer " + g.Data.Token}}
	tasks := url.Values{"topic": {push.TaskTopic(u.Id)}}

	byHeader := open(t, http.DefaultClient, tasks, bearer)
	expect(t, byHeader, 200, "")
	q := url.Values{"topic": push.OwnTopics(u.Id), "authorization": {g.Data.Token}}
	byQuery := open(t, http.DefaultClient, q, nil)
	expect(t, byQuery, 200, "")

	// The session cookie authorises too: log in over HTTP with a cookie jar.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	body, _ := json.Marshal(map[string]string{"email": "ada@example.com", "password": "password-ada@example.com"})
	login, err := browser.Post(srv.URL+apitest.API+"/auth/login", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	login.Body.Close()
	if login.StatusCode != 200 {
		t.Fatalf("login %d", login.StatusCode)
	}
	bySession := open(t, browser, url.Values{"topic": {push.NotificationTopic(u.Id)}}, nil)
	expect(t, bySession, 200, "")

	// Refusals, as the error envelope.
	expect(t, open(t, http.DefaultClient, url.Values{"topic": {push.TaskTopic(other.Id)}}, bearer), 403, "FORBIDDEN")
	expect(t, open(t, browser, url.Values{"topic": {push.TaskTopic(other.Id)}}, nil), 403, "FORBIDDEN")
	expect(t, open(t, http.DefaultClient, tasks, nil), 401, "UNAUTHENTICATED")
	expect(t, open(t, http.DefaultClient, url.Values{}, bearer), 400, "BAD_REQUEST")

	// What the service publishes arrives, each subscriber getting only its topics.
	pub := env.App.Push
	h, q2, s := sseStream(t, byHeader), sseStream(t, byQuery), sseStream(t, bySession)
	if err := pub.Publish(context.Background(), push.TaskTopic(u.Id), []byte(`{"id":1,"state":"DONE"}`)); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(context.Background(), push.TaskTopic(other.Id), []byte(`{"id":2}`)); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(context.Background(), push.NotificationTopic(u.Id), []byte(`{"kind":"run"}`)); err != nil {
		t.Fatal(err)
	}
	if d := nextEvent(t, h); d != `{"id":1,"state":"DONE"}` {
		t.Fatalf("header subscriber got %s", d)
	}
	if a, b := nextEvent(t, q2), nextEvent(t, q2); a != `{"id":1,"state":"DONE"}` || b != `{"kind":"run"}` {
		t.Fatalf("query subscriber got %s, %s", a, b)
	}
	if d := nextEvent(t, s); d != `{"kind":"run"}` {
		t.Fatalf("session subscriber got %s", d)
	}

	// An expired token no longer opens a subscription.
	env.Clock.Advance(push.TokenTTL + time.Second)
	expect(t, open(t, http.DefaultClient, tasks, bearer), 401, "UNAUTHENTICATED")
}

// followTasks subscribes c (user userID) to its task topic on the embedded hub over real HTTP,
// with the token /sse/authorize hands out, and returns the events' data.
func followTasks(t *testing.T, env *apitest.Env, c *apitest.Client, userID int64) <-chan string {
	t.Helper()
	return followTopic(t, env, c, push.TaskTopic(userID))
}

// followTopic subscribes, over real HTTP with c's subscriber token, to one of c's topics on the
// embedded hub and returns the event data as they arrive.
func followTopic(t *testing.T, env *apitest.Env, c *apitest.Client, topic string) <-chan string {
	t.Helper()
	srv := httptest.NewServer(env.App.HTTP.Handler())
	t.Cleanup(srv.Close)
	var grant gen.SseAuthorizeResponse
	c.Get("/sse/authorize").Expect(t, 200).Decode(t, &grant)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+apitest.Prefix+"/.well-known/mercure?"+
		url.Values{"topic": {topic}}.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+grant.Data.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return sseStream(t, resp)
}

// runWorker starts the service's background work (server mode: the daemon and the callback
// dispatcher) as `svc serve` does, and drains it when the test ends; it returns the daemon.
func runWorker(t *testing.T, env *apitest.Env) *worker.Daemon[agentloop.Claimed] {
	t.Helper()
	env.App.Start(context.Background())
	t.Cleanup(func() {
		if err := env.App.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return env.App.Daemon
}
