package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

func pageServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>T</title><script>alert(1)</script></head><body><h1>Hello</h1><p>Some <b>bold</b> text and a <a href="/next">link</a>.</p></body></html>`)
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
		_, _ = w.Write([]byte("caf\xe9"))
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"a":1,"b":[true,null]}`)
	})
	mux.HandleFunc("/rss", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprint(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>News</title><description>Daily news</description>
<item><title>First</title><link>https://example.com/1</link><description>&lt;p&gt;One &amp; only&lt;/p&gt;</description><pubDate>Sun, 02 Mar 2025 10:00:00 GMT</pubDate></item>
<item><title>Second</title><link>https://example.com/2</link></item></channel></rss>`)
	})
	mux.HandleFunc("/atom", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/atom+xml")
		fmt.Fprint(w, `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>Blog</title>
<entry><title>Post</title><link rel="alternate" href="https://example.com/post"/><updated>2025-03-02T10:00:00Z</updated><summary>Summary text</summary></entry></feed>`)
	})
	mux.HandleFunc("/xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<config><a>1</a></config>`)
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "plain text\nline 2")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("a", 5000))
	})
	mux.HandleFunc("/image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte{0x89, 'P', 'N', 'G'})
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "gone", http.StatusNotFound)
	})
	mux.HandleFunc("/ua", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, r.UserAgent())
	})
	mux.HandleFunc("/to-private", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	mux.HandleFunc("/to-page", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/text", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestReadURL(t *testing.T) {
	t.Parallel()
	srv := pageServer(t)
	deps := core.Deps{Net: netguard.Options{AllowLoopback: true}, HTTPTimeout: 5 * time.Second}
	tests := []struct {
		name     string
		deps     core.Deps
		args     map[string]any
		settings map[string]any
		want     []string
		not      []string
		wantErr  string
	}{
		{"html markdown", deps, map[string]any{"url": srv.URL + "/page"}, nil,
			[]string{"URL: " + srv.URL + "/page\nContent-Type: text/html\n", "# Hello", "Some **bold** text and a [link](" + srv.URL + "/next)."}, []string{"alert", "<p>"}, ""},
		{"html text", deps, map[string]any{"url": srv.URL + "/page", "format": "text"}, nil,
			[]string{"Hello\n", "Some bold text and a link ."}, []string{"alert", "**", "<"}, ""},
		{"html raw", deps, map[string]any{"url": srv.URL + "/page", "format": "raw"}, nil, []string{"<h1>Hello</h1>"}, nil, ""},
		{"json", deps, map[string]any{"url": srv.URL + "/json"}, nil, []string{"```json\n{\n  \"a\": 1,\n  \"b\": [\n    true,\n    null\n  ]\n}\n```"}, nil, ""},
		{"rss", deps, map[string]any{"url": srv.URL + "/rss"}, nil,
			[]string{"# News\n\nDaily news\n\n- [First](https://example.com/1) — Sun, 02 Mar 2025 10:00:00 GMT\n  One & only\n- [Second](https://example.com/2)\n"}, nil, ""},
		{"atom", deps, map[string]any{"url": srv.URL + "/atom"}, nil,
			[]string{"# Blog\n\n- [Post](https://example.com/post) — 2025-03-02T10:00:00Z\n  Summary text\n"}, nil, ""},
		{"plain xml", deps, map[string]any{"url": srv.URL + "/xml"}, nil, []string{"```xml\n<config><a>1</a></config>\n```"}, nil, ""},
		{"text", deps, map[string]any{"url": srv.URL + "/text"}, nil, []string{"\n\nplain text\nline 2"}, nil, ""},
		{"latin1", deps, map[string]any{"url": srv.URL + "/latin1"}, nil, []string{"café"}, nil, ""},
		{"redirect followed", deps, map[string]any{"url": srv.URL + "/to-page"}, nil, []string{"URL: " + srv.URL + "/text\n", "plain text"}, nil, ""},
		{"truncated", deps, map[string]any{"url": srv.URL + "/big"}, map[string]any{"max_bytes": 100.0},
			[]string{"cut off after 100 bytes", "\n\n" + strings.Repeat("a", 100)}, []string{strings.Repeat("a", 101)}, ""},
		{"user agent setting", deps, map[string]any{"url": srv.URL + "/ua"}, map[string]any{"user_agent": "TestBot/2"}, []string{"\n\nTestBot/2"}, nil, ""},
		{"user agent default", deps, map[string]any{"url": srv.URL + "/ua"}, nil, []string{"\n\nagentsvc-read-url/"}, nil, ""},
		{"allowed domain", deps, map[string]any{"url": srv.URL + "/text"}, map[string]any{"allowed_domains": []any{"127.0.0.1"}}, []string{"plain text"}, nil, ""},

		{"404", deps, map[string]any{"url": srv.URL + "/missing"}, nil, nil, nil, "HTTP 404 Not Found"},
		{"image", deps, map[string]any{"url": srv.URL + "/image"}, nil, nil, nil, "content type image/png"},
		{"redirect to metadata", deps, map[string]any{"url": srv.URL + "/to-private"}, nil, nil, nil, "private"},
		{"loopback without the test option", core.Deps{}, map[string]any{"url": srv.URL + "/text"}, nil, nil, nil, "refused: host 127.0.0.1 does not resolve to a public address"},
		{"decimal loopback", deps, map[string]any{"url": "http://2130706433/"}, nil, nil, nil, "refused"},
		{"metadata literal", deps, map[string]any{"url": "http://169.254.169.254/"}, nil, nil, nil, "refused"},
		{"user info", deps, map[string]any{"url": "http://user:pw@example.com/"}, nil, nil, nil, "user information"},
		{"file scheme", deps, map[string]any{"url": "file:///etc/passwd"}, nil, nil, nil, "http or https"},
		{"missing url", deps, map[string]any{}, nil, nil, nil, "required"},
		{"bad format", deps, map[string]any{"url": srv.URL + "/text", "format": "pdf"}, nil, nil, nil, "format must be"},
		{"blocked domain", deps, map[string]any{"url": srv.URL + "/text"}, map[string]any{"blocked_domains": []any{"127.0.0.1"}}, nil, nil, "domain 127.0.0.1 is blocked"},
		{"not allowed domain", deps, map[string]any{"url": srv.URL + "/text"}, map[string]any{"allowed_domains": []any{"example.com"}}, nil, nil, "not in the allowed domains"},
		{"timeout", core.Deps{Net: netguard.Options{AllowLoopback: true}}, map[string]any{"url": srv.URL + "/slow"}, map[string]any{"tool_http_timeout": 0.2}, nil, nil, "timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := exec(t, tt.deps, "core.ReadURLTool", tools.Call{Operation: "fetch", Args: tt.args, Settings: tt.settings})
			if tt.wantErr != "" {
				wantToolErr(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("content lacks %q:\n%s", w, res.Content)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(res.Content, n) {
					t.Errorf("content has %q:\n%s", n, res.Content)
				}
			}
			if !json.Valid(res.Data) {
				t.Errorf("data %s", res.Data)
			}
		})
	}
}

// TestReadURLCanceled checks that the caller's cancellation is returned as is, not as a ToolError.
func TestReadURLCanceled(t *testing.T) {
	t.Parallel()
	srv := pageServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	e := core.Executors(core.Deps{Net: netguard.Options{AllowLoopback: true}})["core.ReadURLTool"]
	_, err := e.Execute(ctx, tools.Call{Operation: "fetch", Args: map[string]any{"url": srv.URL + "/slow"}})
	var te *tools.ToolError
	if err == nil || errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("canceled fetch: %v", err)
	}
}
