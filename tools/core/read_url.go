package core

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"

	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/tools"
)

// ReadURLTool fetches a public web address (HTML, JSON, XML, RSS) and returns it as Markdown or
// text. Addresses that resolve to private networks are refused (SSRF screen); requests time out
// after tool_http_timeout.
type ReadURLTool struct{}

// Spec declares the tool.
func (ReadURLTool) Spec() tools.Spec {
	return tools.Spec{
		Class:            "core.ReadURLTool",
		Name:             "read_url",
		DisplayName:      "Read URL",
		Description:      "Fetch a public web page or feed (HTML, JSON, XML, RSS) and return its content as Markdown.",
		Category:         tools.CategoryResearch,
		Icon:             "globe",
		RecommendsSkills: []string{"web-research"},
		Operations:       []tools.Operation{readOp("fetch", "Fetch the URL and convert the content.")},
		Params: []tools.Param{
			{Name: "url", Type: tools.TypeString, Format: "uri", Description: "Absolute http or https URL."},
			{
				Name: "format", Type: tools.TypeString, Description: "Output: markdown (readable page), text (plain text) or raw (body as received).",
				Enum: []string{"markdown", "text", "raw"}, Default: "markdown",
			},
		},
		Settings: []tools.Setting{
			{
				Key: "allowed_domains", Label: "Allowed domains", Type: tools.SettingStringList,
				Description: "Only these domains (and their subdomains) may be fetched. Empty allows every public address.",
			},
			{
				Key: "blocked_domains", Label: "Blocked domains", Type: tools.SettingStringList,
				Description: "These domains (and their subdomains) are never fetched.",
			},
			{
				Key: "max_bytes", Label: "Maximum size (bytes)", Type: tools.SettingInteger,
				Description: "Responses larger than this are cut off.", Default: 1048576,
			},
			{
				Key: "user_agent", Label: "User agent", Type: tools.SettingString,
				Description: "User-Agent header sent with each request; empty uses the service's own.",
			},
			{
				Key: tools.SettingResultMaxChars, Label: "Characters sent to the model", Type: tools.SettingInteger,
				Description: "A page longer than this is kept whole in the transcript but sent to the model cut, with a note. Empty uses the agent's tool_result_max_chars.",
			},
		},
	}
}

// DefaultMaxBytes caps a read_url body when no max_bytes setting is given (the declaration's
// default of 1 MiB normally arrives through the settings cascade).
const DefaultMaxBytes = 2 << 20

// maxFeedItems caps the items listed from an RSS or Atom feed.
const maxFeedItems = 100

const defaultUserAgent = "agentsvc-read-url/1.0"

type readURLExec struct{ deps Deps }

// Execute fetches the url argument through the SSRF screen (netguard) honouring the settings
// allowed_domains, blocked_domains, max_bytes and user_agent and the timeout tool_http_timeout,
// and converts the body by the format argument. Refused URLs, network failures, non-2xx statuses
// and unsupported content types are ToolErrors; only the caller's cancellation is returned as is.
func (e *readURLExec) Execute(ctx context.Context, call tools.Call) (tools.Result, error) {
	if call.Operation != "fetch" {
		return tools.Result{}, unknownOp(call.Operation)
	}
	raw, err := requiredString(call.Args, "url")
	if err != nil {
		return tools.Result{}, err
	}
	format, _, err := stringArg(call.Args, "format")
	if err != nil {
		return tools.Result{}, err
	}
	switch format {
	case "":
		format = "markdown"
	case "markdown", "text", "raw":
	default:
		return tools.Result{}, toolErr("format must be markdown, text or raw")
	}
	maxBytes := int64(DefaultMaxBytes)
	if f, ok := number(call.Settings["max_bytes"]); ok && f >= 1 {
		maxBytes = int64(f)
	}
	timeout := e.deps.HTTPTimeout
	if f, ok := number(call.Settings["tool_http_timeout"]); ok && f > 0 {
		timeout = time.Duration(f * float64(time.Second))
	}
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	ua, _ := call.Settings["user_agent"].(string)
	if strings.TrimSpace(ua) == "" || strings.ContainsAny(ua, "\r\n") {
		ua = e.deps.UserAgent
	}
	if ua == "" {
		ua = defaultUserAgent
	}

	opts := e.deps.Net
	opts.AllowHost = domainPolicy(stringList(call.Settings["allowed_domains"]), stringList(call.Settings["blocked_domains"]), e.deps.Net.AllowHost)
	target, err := netguard.CheckURL(ctx, raw, opts)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return tools.Result{}, toolErr("refused: %s", publicMsg(err))
	}
	client := netguard.Client(timeout, opts)
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.URL.String(), nil)
	if err != nil {
		return tools.Result{}, toolErr("refused: invalid URL")
	}
	req.Header.Set("User-Agent", ua)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/json;q=0.9,application/rss+xml;q=0.9,application/atom+xml;q=0.9,application/xml;q=0.8,text/*;q=0.8,*/*;q=0.1")
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return tools.Result{}, toolErr("fetch %s failed: %s", target.URL, publicMsg(err))
	}
	defer resp.Body.Close()
	final := resp.Request.URL.String()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return tools.Result{}, toolErr("fetch %s failed: HTTP %s", final, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return tools.Result{}, toolErr("reading %s failed: %s", final, publicMsg(err))
	}
	truncated := int64(len(body)) > maxBytes
	if truncated {
		body = body[:maxBytes]
	}
	ctype := resp.Header.Get("Content-Type")
	mediaType, _, perr := mime.ParseMediaType(ctype)
	if ctype == "" || perr != nil {
		ctype = http.DetectContentType(body)
		mediaType, _, _ = mime.ParseMediaType(ctype)
	}
	kind := contentKind(mediaType)
	if kind == "" {
		return tools.Result{}, toolErr("content type %s of %s is not supported (HTML, JSON, XML, RSS, Atom or text only)", mediaType, final)
	}
	text := decodeText(body, ctype)
	out, err := convertBody(kind, format, text, final)
	if err != nil {
		return tools.Result{}, err
	}
	header := fmt.Sprintf("URL: %s\nContent-Type: %s\n", final, mediaType)
	if truncated {
		header += fmt.Sprintf("Note: the response was cut off after %d bytes.\n", maxBytes)
	}
	return tools.Result{
		Content: header + "\n" + out,
		Data: jsonData(map[string]any{
			"url": raw, "final_url": final, "status": resp.StatusCode, "content_type": mediaType,
			"bytes": len(body), "truncated": truncated, "format": format,
		}),
	}, nil
}

// publicMsg returns the caller-safe text of a fetch error.
func publicMsg(err error) string {
	if msg, _, ok := svcerr.Public(err); ok {
		return msg
	}
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		return "timed out"
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && i+2 < len(msg) {
		msg = msg[i+2:]
	}
	return msg
}

// domainPolicy builds netguard's AllowHost from the domain settings: a host matches a domain when
// it equals it or is a subdomain of it.
func domainPolicy(allowed, blocked []string, next func(string) error) func(string) error {
	norm := func(l []string) []string {
		out := make([]string, 0, len(l))
		for _, d := range l {
			d = strings.Trim(strings.ToLower(strings.TrimSpace(d)), ".")
			if d != "" {
				out = append(out, d)
			}
		}
		return out
	}
	allowed, blocked = norm(allowed), norm(blocked)
	match := func(host string, list []string) bool {
		for _, d := range list {
			if host == d || strings.HasSuffix(host, "."+d) {
				return true
			}
		}
		return false
	}
	return func(host string) error {
		if match(host, blocked) {
			return fmt.Errorf("domain %s is blocked", host)
		}
		if len(allowed) > 0 && !match(host, allowed) {
			return fmt.Errorf("domain %s is not in the allowed domains", host)
		}
		if next != nil {
			return next(host)
		}
		return nil
	}
}

func contentKind(mediaType string) string {
	switch {
	case mediaType == "text/html" || mediaType == "application/xhtml+xml":
		return "html"
	case mediaType == "application/json" || strings.HasSuffix(mediaType, "+json"):
		return "json"
	case mediaType == "application/xml" || mediaType == "text/xml" || strings.HasSuffix(mediaType, "+xml"):
		return "xml"
	case strings.HasPrefix(mediaType, "text/"):
		return "text"
	}
	return ""
}

// decodeText converts the body to UTF-8 by its declared or sniffed charset.
func decodeText(body []byte, ctype string) string {
	if r, err := charset.NewReader(bytes.NewReader(body), ctype); err == nil {
		if b, err := io.ReadAll(r); err == nil {
			body = b
		}
	}
	return strings.ToValidUTF8(string(body), "\uFFFD")
}

func convertBody(kind, format, text, base string) (string, error) {
	if format == "raw" {
		return text, nil
	}
	switch kind {
	case "html":
		if format == "text" {
			return htmlText(text), nil
		}
		md, err := htmltomarkdown.ConvertString(text, converter.WithDomain(base))
		if err != nil {
			return "", toolErr("the page could not be converted: %v", err)
		}
		return md, nil
	case "json":
		var b bytes.Buffer
		if err := json.Indent(&b, []byte(text), "", "  "); err != nil {
			return text, nil
		}
		if format == "text" {
			return b.String(), nil
		}
		return "```json\n" + b.String() + "\n```", nil
	case "xml":
		if md, ok := feedMarkdown(text); ok {
			return md, nil
		}
		if format == "text" {
			return text, nil
		}
		return "```xml\n" + text + "\n```", nil
	}
	return text, nil
}

// htmlText returns the visible text of an HTML document, one block per line.
func htmlText(src string) string {
	z := html.NewTokenizer(strings.NewReader(src))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.TrimSpace(collapseBlankLines(b.String()))
		case html.StartTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style", "noscript", "template", "svg", "head":
				skip++
			case "br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "title":
				b.WriteByte('\n')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style", "noscript", "template", "svg", "head":
				if skip > 0 {
					skip--
				}
			case "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "title":
				b.WriteByte('\n')
			}
		case html.TextToken:
			if skip == 0 {
				t := strings.Join(strings.Fields(string(z.Text())), " ")
				if t != "" {
					b.WriteString(t)
					b.WriteByte(' ')
				}
			}
		}
	}
}

func collapseBlankLines(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			if !blank && len(out) > 0 {
				out = append(out, "")
			}
			blank = true
			continue
		}
		blank = false
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// feed is the union of RSS 2.0, RSS 1.0 (RDF) and Atom as far as a reading list needs.
type feed struct {
	XMLName xml.Name
	// RSS 2.0
	Channel *struct {
		Title       string     `xml:"title"`
		Description string     `xml:"description"`
		Items       []feedItem `xml:"item"`
	} `xml:"channel"`
	// RSS 1.0 (items are siblings of the channel) and Atom
	Title   string     `xml:"title"`
	Items   []feedItem `xml:"item"`
	Entries []feedItem `xml:"entry"`
}

type feedItem struct {
	Title string `xml:"title"`
	Links []struct {
		Href string `xml:"href,attr"`
		Rel  string `xml:"rel,attr"`
		Text string `xml:",chardata"`
	} `xml:"link"`
	Description string `xml:"description"`
	Summary     string `xml:"summary"`
	Content     string `xml:"content"`
	PubDate     string `xml:"pubDate"`
	Published   string `xml:"published"`
	Updated     string `xml:"updated"`
	Date        string `xml:"http://purl.org/dc/elements/1.1/ date"`
}

// feedMarkdown renders an RSS or Atom feed as a Markdown list; ok is false for other XML.
func feedMarkdown(src string) (string, bool) {
	var f feed
	d := xml.NewDecoder(strings.NewReader(src))
	d.Strict = false
	d.CharsetReader = charset.NewReaderLabel
	if err := d.Decode(&f); err != nil {
		return "", false
	}
	var title, desc string
	var items []feedItem
	switch strings.ToLower(f.XMLName.Local) {
	case "rss":
		if f.Channel == nil {
			return "", false
		}
		title, desc, items = f.Channel.Title, f.Channel.Description, f.Channel.Items
	case "rdf":
		title, items = f.Title, f.Items
		if f.Channel != nil {
			title, desc = f.Channel.Title, f.Channel.Description
		}
	case "feed":
		title, items = f.Title, f.Entries
	default:
		return "", false
	}
	var b strings.Builder
	if t := oneLine(title); t != "" {
		b.WriteString("# " + t + "\n\n")
	}
	if t := oneLine(plain(desc)); t != "" {
		b.WriteString(t + "\n\n")
	}
	if len(items) == 0 {
		b.WriteString("(no items)\n")
	}
	for i, it := range items {
		if i == maxFeedItems {
			fmt.Fprintf(&b, "\n(%d more items not shown)\n", len(items)-maxFeedItems)
			break
		}
		t := oneLine(it.Title)
		if t == "" {
			t = "(untitled)"
		}
		link := ""
		for _, l := range it.Links {
			h := strings.TrimSpace(l.Href)
			if h == "" {
				h = strings.TrimSpace(l.Text)
			}
			if h != "" && (link == "" || l.Rel == "alternate") {
				link = h
			}
		}
		if link != "" {
			fmt.Fprintf(&b, "- [%s](%s)", strings.ReplaceAll(t, "]", `\]`), link)
		} else {
			b.WriteString("- " + t)
		}
		for _, date := range []string{it.PubDate, it.Published, it.Updated, it.Date} {
			if date = oneLine(date); date != "" {
				b.WriteString(" — " + date)
				break
			}
		}
		b.WriteByte('\n')
		for _, s := range []string{it.Description, it.Summary, it.Content} {
			if s = oneLine(plain(s)); s != "" {
				if utf8.RuneCountInString(s) > 500 {
					s = string([]rune(s)[:500]) + "…"
				}
				b.WriteString("  " + s + "\n")
				break
			}
		}
	}
	return b.String(), true
}

// plain strips HTML from a feed field (descriptions often carry escaped HTML).
func plain(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return s
	}
	return htmlText(s)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
