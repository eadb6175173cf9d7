package server

import (
	"bytes"
	"html"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// The web console (web/, built into web/dist and embedded as svc.Console) is served at
// {prefix}/ for GET and HEAD requests that no route of the API answers: a file of the bundle
// when the path names one, otherwise index.html (the single-page app routes on the client, so
// /reset-password and /confirm-email from the mailed links land there too). Paths below the
// API, the schemas, the plugin frontends, the push hub and the health check are never
// answered with the page: they keep the JSON 404 envelope.

// consoleCSP is the Content-Security-Policy of the console's responses: scripts, styles and
// connections from this origin only, no inline script or style, no framing of the console; the
// only frames it shows are plugin pages of this origin (sandboxed by pluginPageCSP).
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data: blob:; font-src 'self'; manifest-src 'self'; frame-src 'self'; base-uri 'none'; " +
	"form-action 'self'; frame-ancestors 'none'"

// consolePrefixToken is replaced in index.html by the HTML-escaped mount prefix, so one build
// serves any app_prefix.
const consolePrefixToken = "__SVC_PREFIX__"

// notBuiltPage answers {prefix}/ when the binary was built without the console bundle.
const notBuiltPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>svc: console not built</title></head>
<body><h1>The web console is not built</h1>
<p>This binary was built without the console's bundle. Build it with <code>make web</code>
(needs Node.js 20 and npm), then rebuild and restart the server, or run <code>make run</code>,
which does both.</p>
<p>The API works without it: <a href="__SVC_PREFIX__/api/v1/openapi.yaml">__SVC_PREFIX__/api/v1/openapi.yaml</a>.</p>
</body></html>
`

// console serves the web console from files (the root of the built bundle).
type console struct {
	prefix   string
	files    fs.FS
	index    []byte // index.html with the prefix filled in; nil when the bundle is absent
	reserved []string
	started  time.Time
}

func newConsole(prefix string, files fs.FS) *console {
	c := &console{prefix: prefix, files: files, started: time.Now(),
		reserved: []string{prefix + "/api/", prefix + "/schemas/", prefix + "/plugins/", prefix + "/.well-known/"}}
	if files != nil {
		if b, err := fs.ReadFile(files, "index.html"); err == nil {
			c.index = bytes.ReplaceAll(b, []byte(consolePrefixToken), []byte(html.EscapeString(prefix)))
		}
	}
	return c
}

// serve answers the request and reports true when it is the console's; false leaves it to the
// JSON 404.
func (c *console) serve(ctx *gin.Context) bool {
	r := ctx.Request
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	if p == c.prefix && c.prefix != "" {
		ctx.Redirect(http.StatusMovedPermanently, c.prefix+"/")
		return true
	}
	if !strings.HasPrefix(p, c.prefix+"/") || p == c.prefix+"/healthz" || p == c.prefix+"/readyz" || p == c.prefix+"/metrics" {
		return false
	}
	for _, r := range c.reserved {
		// The bare path of a reserved folder is not the console's either, except /plugins: the
		// plugin frontends live below it, the console's Plugins page at it.
		if strings.HasPrefix(p, r) || (p+"/" == r && r != c.prefix+"/plugins/") {
			return false
		}
	}
	rel := strings.TrimPrefix(p, c.prefix+"/")
	h := ctx.Writer.Header()
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	if c.index == nil {
		h.Set("Cache-Control", "no-store")
		ctx.Data(http.StatusOK, "text/html; charset=utf-8",
			[]byte(strings.ReplaceAll(notBuiltPage, consolePrefixToken, html.EscapeString(c.prefix))))
		return true
	}
	if rel != "" && rel != "index.html" && fs.ValidPath(rel) {
		if f, err := c.files.Open(rel); err == nil {
			defer f.Close()
			if fi, err := f.Stat(); err == nil && !fi.IsDir() {
				if rs, ok := f.(readSeeker); ok {
					if strings.HasPrefix(rel, "assets/") {
						h.Set("Cache-Control", "public, max-age=31536000, immutable") // names carry a content hash
					}
					http.ServeContent(ctx.Writer, r, fi.Name(), c.started, rs)
					return true
				}
			}
		}
	}
	// A missing file that looks like one (an extension) is a 404, not the page: a stale
	// bundle reference must fail visibly rather than parse HTML as script.
	if path.Ext(rel) != "" {
		return false
	}
	h.Set("Cache-Control", "no-cache")
	ctx.Data(http.StatusOK, "text/html; charset=utf-8", c.index)
	return true
}

type readSeeker interface {
	Read(p []byte) (int, error)
	Seek(offset int64, whence int) (int64, error)
}
