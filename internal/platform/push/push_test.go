package push

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

func TestTopics(t *testing.T) {
	t.Parallel()
	if TaskTopic(3) != "user/3/tasks" || NotificationTopic(3) != "user/3/notifications" {
		t.Fatal(TaskTopic(3), NotificationTopic(3))
	}
	if got := OwnTopics(3); !reflect.DeepEqual(got, []string{"user/3/tasks", "user/3/notifications"}) {
		t.Fatal(got)
	}
}

func cfgOf(mut func(*config.Config)) func() *config.Config {
	c := config.Defaults()
	mut(c)
	return func() *config.Config { return c }
}

func TestStatus(t *testing.T) {
	t.Parallel()
	h, err := NewHub(HubOptions{MasterKey: testMaster, Heartbeat: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	cases := []struct {
		name  string
		mut   func(*config.Config)
		hub   *Hub
		want  Status
		publs string
	}{
		{"embedded", func(*config.Config) {}, h, Status{KindEmbedded, true}, "*push.Hub"},
		{"embedded without a hub", func(*config.Config) {}, nil, Status{KindEmbedded, false}, "push.Nop"},
		{"embedded in client mode", func(c *config.Config) { c.WorkerRuntimeMode = "client" }, h, Status{KindEmbedded, false}, "push.Nop"},
		{"mercure", func(c *config.Config) { c.MercureURL, c.MercureJWTKey = "https://hub.test/.well-known/mercure", "k" }, h, Status{KindMercure, true}, "*push.Mercure"},
		{"mercure without key", func(c *config.Config) { c.MercureURL = "https://hub.test/.well-known/mercure" }, h, Status{KindMercure, false}, "push.Nop"},
		{"mercure in client mode", func(c *config.Config) {
			c.MercureURL, c.MercureJWTKey, c.WorkerRuntimeMode = "https://hub.test/.well-known/mercure", "k", "client"
		}, h, Status{KindMercure, false}, "push.Nop"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewService(cfgOf(tc.mut), tc.hub)
			if got := s.Status(); got != tc.want {
				t.Fatalf("status %+v, want %+v", got, tc.want)
			}
			if got := reflect.TypeOf(s.Publisher()).String(); got != tc.publs {
				t.Fatalf("publisher %s, want %s", got, tc.publs)
			}
		})
	}
}

func TestAuthorizeEmbedded(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	h, err := NewHub(HubOptions{MasterKey: testMaster, Heartbeat: -1, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	s := NewService(cfgOf(func(*config.Config) {}), h)
	cases := []struct {
		name string
		in   []string
		want []string
		err  error
	}{
		{"default", nil, OwnTopics(4), nil},
		{"narrowed", []string{NotificationTopic(4)}, []string{NotificationTopic(4)}, nil},
		{"duplicates", []string{TaskTopic(4), TaskTopic(4)}, []string{TaskTopic(4)}, nil},
		{"another user's", []string{TaskTopic(5)}, nil, svcerr.ErrForbidden},
		{"own and foreign", []string{TaskTopic(4), "user/5/notifications"}, nil, svcerr.ErrForbidden},
		{"wildcard", []string{"*"}, nil, svcerr.ErrForbidden},
		{"template", []string{"user/{id}/tasks"}, nil, svcerr.ErrForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := s.Authorize(4, 0, tc.in, "https://svc.test/svc")
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.Kind != KindEmbedded || g.HubURL != "https://svc.test/svc/.well-known/mercure" ||
				!reflect.DeepEqual(g.Topics, tc.want) || !g.ExpiresAt.Equal(clock.Now().Add(TokenTTL)) {
				t.Fatalf("grant %+v", g)
			}
			c, err := h.verify(g.Token)
			if err != nil {
				t.Fatalf("the hub refuses its own token: %v", err)
			}
			if !reflect.DeepEqual(c.Mercure.Subscribe, tc.want) || c.Subject != "4" {
				t.Fatalf("claims %+v", c)
			}
		})
	}
}

func TestAuthorizeMercureAndUnavailable(t *testing.T) {
	t.Parallel()
	h, _ := NewHub(HubOptions{MasterKey: testMaster, Heartbeat: -1})
	defer h.Close()
	s := NewService(cfgOf(func(c *config.Config) {
		c.MercureURL, c.MercureJWTKey = "https://hub.test/.well-known/mercure", "mercure-secret"
	}), h)
	g, err := s.Authorize(4, 0, nil, "https://svc.test/svc")
	if err != nil {
		t.Fatal(err)
	}
	if g.Kind != KindMercure || g.HubURL != "https://hub.test/.well-known/mercure" {
		t.Fatalf("grant %+v", g)
	}
	var c claims
	if _, err := jwt.ParseWithClaims(g.Token, &c, func(*jwt.Token) (any, error) { return []byte("mercure-secret"), nil },
		jwt.WithValidMethods([]string{"HS256"})); err != nil {
		t.Fatalf("token not signed with mercure_jwt_key: %v", err)
	}
	if !reflect.DeepEqual(c.Mercure.Subscribe, OwnTopics(4)) {
		t.Fatalf("claims %+v", c)
	}
	if _, err := h.verify(g.Token); err == nil {
		t.Fatal("the embedded hub accepts a Mercure token")
	}

	off := NewService(cfgOf(func(c *config.Config) { c.WorkerRuntimeMode = "client" }), h)
	if _, err := off.Authorize(4, 0, nil, "https://svc.test/svc"); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("unavailable: %v", err)
	}
	if err := off.Publish(context.Background(), TaskTopic(4), []byte("x")); err != nil {
		t.Fatalf("nop publish: %v", err)
	}
}

// mercureRecorder is a fake Mercure hub that records what it receives.
type mercureRecorder struct {
	mu     sync.Mutex
	form   url.Values
	auth   string
	ctype  string
	status int
}

func (m *mercureRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.auth, m.ctype = r.Header.Get("Authorization"), r.Header.Get("Content-Type")
	body, _ := io.ReadAll(r.Body)
	m.form, _ = url.ParseQuery(string(body))
	if m.status != 0 {
		http.Error(w, "Unauthorized", m.status)
		return
	}
	_, _ = io.WriteString(w, "urn:uuid:0b4a5b1e-0000-4000-8000-000000000000")
}

func TestMercurePublisher(t *testing.T) {
	t.Parallel()
	rec := &mercureRecorder{}
	hub := httptest.NewServer(rec)
	defer hub.Close()
	key := []byte("mercure-publisher-secret")
	m := NewMercure(hub.URL+"/.well-known/mercure", key, nil)
	data := []byte(`{"id":7,"state":"DONE"}`)
	if err := m.Publish(context.Background(), TaskTopic(3), data); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	if rec.ctype != "application/x-www-form-urlencoded" {
		t.Errorf("content type %q", rec.ctype)
	}
	want := url.Values{"topic": {"user/3/tasks"}, "data": {string(data)}, "private": {"on"}}
	if !reflect.DeepEqual(rec.form, want) {
		t.Errorf("form %v, want %v", rec.form, want)
	}
	tok, ok := strings.CutPrefix(rec.auth, "Bearer ")
	rec.mu.Unlock()
	if !ok {
		t.Fatalf("authorization %q", rec.auth)
	}
	var c claims
	parsed, err := jwt.ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return key, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired())
	if err != nil || !parsed.Valid {
		t.Fatalf("publisher JWT does not verify: %v", err)
	}
	if !reflect.DeepEqual(c.Mercure.Publish, []string{"user/3/tasks"}) || c.Mercure.Subscribe != nil {
		t.Fatalf("claims %+v", c.Mercure)
	}
	if ttl := c.ExpiresAt.Sub(c.IssuedAt.Time); ttl <= 0 || ttl > 10*time.Minute {
		t.Fatalf("publisher token lifetime %v", ttl)
	}
	if _, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return []byte("wrong"), nil }); err == nil {
		t.Fatal("publisher JWT verifies with another key")
	}

	// A refusal, an unreachable hub and a hub that does not answer are ErrUnavailable.
	rec.mu.Lock()
	rec.status = http.StatusUnauthorized
	rec.mu.Unlock()
	if err := m.Publish(context.Background(), TaskTopic(3), data); !errors.Is(err, svcerr.ErrUnavailable) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("refused: %v", err)
	}
	if strings.Contains(fmtErr(m.Publish(context.Background(), TaskTopic(3), data)), tok) {
		t.Fatal("error leaks the token")
	}
	gone := httptest.NewServer(rec)
	gone.Close()
	if err := NewMercure(gone.URL, key, nil).Publish(context.Background(), TaskTopic(3), data); !errors.Is(err, svcerr.ErrUnavailable) {
		t.Fatalf("unreachable: %v", err)
	}
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the server notices a gone client only after the body
		<-r.Context().Done()
	}))
	defer stuck.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := NewMercure(stuck.URL, key, nil).Publish(ctx, TaskTopic(3), data); !errors.Is(err, svcerr.ErrUnavailable) {
		t.Fatalf("stuck: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("publish waited %v", d)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestNopPublisher(t *testing.T) {
	t.Parallel()
	var p Publisher = Nop{}
	if err := p.Publish(context.Background(), TaskTopic(1), nil); err != nil {
		t.Fatal(err)
	}
}
