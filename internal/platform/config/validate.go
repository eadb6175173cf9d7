package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agentsvc/svc/internal/platform/netguard"
)

// KeySize is the size of the master key in bytes (AES-256).
const KeySize = 32

// DecodeSecretKey decodes a master key written as base64 (standard or URL alphabet, padded or
// not) and checks it is exactly KeySize bytes. The error never contains the key.
func DecodeSecretKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{
		base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding,
	} {
		b, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(b) != KeySize {
			return nil, fmt.Errorf("must be the base64 encoding of exactly %d bytes, got %d bytes (generate one with: openssl rand -base64 32)", KeySize, len(b))
		}
		return b, nil
	}
	return nil, errors.New("is not valid base64 (generate one with: openssl rand -base64 32)")
}

// NormalisePrefix brings a mount prefix to its canonical form: spaces trimmed, repeated
// slashes collapsed, one leading slash, no trailing slash; "" and "/" both mean the host root
// and give "".
func NormalisePrefix(p string) string {
	p = strings.TrimSpace(p)
	parts := strings.Split(p, "/")
	kept := parts[:0]
	for _, s := range parts {
		if s != "" {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return ""
	}
	return "/" + strings.Join(kept, "/")
}

// normalise trims and canonicalises values before validation.
func normalise(c *Config) {
	for _, p := range []*string{
		&c.Listen, &c.AppURL, &c.KeyPath, &c.DBHost, &c.DBName, &c.DBUser, &c.MercureURL,
		&c.MercurePublishURL, &c.LogPath, &c.ComposerBinary, &c.MailHost, &c.MailFrom,
		&c.LLMBaseURL, &c.LLMModel, &c.SecretKey, &c.MetricsToken, &c.MetricsListen, &c.WorkerHealthListen, &c.OtelEndpoint,
		&c.OtelServiceName,
	} {
		*p = strings.TrimSpace(*p)
	}
	for _, p := range []*string{
		&c.AppEnv, &c.DBDriver, &c.WorkerRuntimeMode, &c.LogLevel, &c.MailDriver,
		&c.MailEncryption, &c.LLMDriver, &c.DBSSLMode,
	} {
		*p = strings.ToLower(strings.TrimSpace(*p))
	}
	c.AppPrefix = NormalisePrefix(c.AppPrefix)
	c.AppURL = strings.TrimRight(c.AppURL, "/")
	if c.MercurePublishURL == "" {
		c.MercurePublishURL = c.MercureURL
	}
}

// validator collects problems, naming where a value came from when it is not a default.
type validator struct {
	origin   map[string]string
	problems []string
}

func (v *validator) add(key, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if o := v.origin[key]; o != "" {
		msg += " (from " + o + ")"
	}
	v.problems = append(v.problems, msg)
}

func (v *validator) oneOf(key, val string, allowed ...string) {
	for _, a := range allowed {
		if val == a {
			return
		}
	}
	v.add(key, "%s %q is not supported (use %s)", key, val, orList(allowed))
}

func (v *validator) nonNegative(key string, n int) {
	if n < 0 {
		v.add(key, "%s must not be negative (got %d)", key, n)
	}
}

func (v *validator) positive(key string, n int) {
	if n < 1 {
		v.add(key, "%s must be at least 1 (got %d)", key, n)
	}
}

func (v *validator) port(key string, n int) {
	if n < 1 || n > 65535 {
		v.add(key, "%s must be between 1 and 65535 (got %d)", key, n)
	}
}

func (v *validator) required(key, val, why string) {
	if val == "" {
		v.add(key, "%s is required%s", key, why)
	}
}

// httpURL checks an absolute http(s) URL without credentials, query or fragment.
func (v *validator) httpURL(key, val string) {
	if val == "" {
		return
	}
	u, err := url.Parse(val)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		v.add(key, "%s %q must be an absolute http:// or https:// URL", key, shown(u, val))
	case u.User != nil:
		v.add(key, "%s must not contain credentials", key)
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(val, "?") || strings.HasSuffix(val, "#"):
		v.add(key, "%s %q must not have a query or fragment", key, shown(u, val))
	}
}

// shown is a URL fit for an error message: credentials masked.
func shown(u *url.URL, raw string) string {
	if u != nil && u.User != nil {
		return u.Redacted()
	}
	if u == nil && strings.Contains(raw, "@") {
		return "…"
	}
	return raw
}

func orList(xs []string) string {
	quoted := make([]string, len(xs))
	for i, x := range xs {
		if x == "" {
			x = `""`
		}
		quoted[i] = x
	}
	if len(quoted) == 1 {
		return quoted[0]
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

// MaxDBOpenConns is the largest db_max_open_conns accepted.
const MaxDBOpenConns = 1000

// validate returns every problem of a normalised configuration.
// currencyCode is the shape of the currency setting (ISO 4217 style).
var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

func validate(c *Config, origin map[string]string) []string {
	v := &validator{origin: origin}

	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		v.add("listen", "listen %q must be a host:port address such as :8080", c.Listen)
	}

	v.httpURL("app_url", c.AppURL)
	if c.IsProduction() {
		v.required("app_url", c.AppURL, " when app_env is production (mailed links are built from it, never from request headers)")
	}
	for _, p := range c.TrustedProxyList() {
		if _, _, err := net.ParseCIDR(p); err != nil && net.ParseIP(p) == nil {
			v.add("trusted_proxies", "trusted_proxies entry %q is neither an IP address nor a CIDR such as 10.0.0.0/8", p)
		}
	}
	validatePrefix(v, c.AppPrefix)
	v.oneOf("app_env", c.AppEnv, "development", "production")

	if c.SecretKey != "" {
		if _, err := DecodeSecretKey(c.SecretKey); err != nil {
			v.add("secret_key", "secret_key %v", err)
		}
	} else {
		if c.IsProduction() {
			v.add("secret_key", "secret_key is required when app_env is production (generate one with: openssl rand -base64 32)")
		}
		v.required("key_path", c.KeyPath, " when secret_key is not set")
	}

	for _, n := range []struct {
		key string
		val int
	}{
		{"http_read_timeout", c.HTTPReadTimeout},
		{"http_write_timeout", c.HTTPWriteTimeout},
		{"http_idle_timeout", c.HTTPIdleTimeout},
		{"max_request_bodies", c.MaxRequestBodies},
		{"shutdown_grace_seconds", c.ShutdownGraceSeconds},
		{"max_request_bodies_per_client", c.MaxRequestBodiesPerClient},
	} {
		if n.val < 1 {
			v.add(n.key, "%s must be at least 1 (got %d)", n.key, n.val)
		}
	}

	v.oneOf("db_driver", c.DBDriver, "sqlite", "mysql", "mariadb", "postgres")
	if c.DBPort != 0 { // 0: the driver's own
		v.port("db_port", c.DBPort)
	}
	if c.DBSSLMode != "" {
		v.oneOf("db_sslmode", c.DBSSLMode, "disable", "allow", "prefer", "require", "verify-ca", "verify-full")
	}
	v.required("db_name", c.DBName, "")
	if strings.ContainsAny(c.DBName, `/\?`) || c.DBName == "." || c.DBName == ".." {
		v.add("db_name", "db_name %q must not contain /, \\ or ? or be . or ..", c.DBName)
	}
	if c.DBDriver == "mysql" || c.DBDriver == "mariadb" || c.DBDriver == "postgres" {
		v.required("db_host", c.DBHost, " with db_driver "+c.DBDriver)
		v.required("db_user", c.DBUser, " with db_driver "+c.DBDriver)
		if strings.Contains(c.DBUser, ":") {
			v.add("db_user", "db_user must not contain a colon")
		}
	}

	if c.DBMaxOpenConns > MaxDBOpenConns {
		v.add("db_max_open_conns", "db_max_open_conns must be at most %d (got %d)", MaxDBOpenConns, c.DBMaxOpenConns)
	}
	v.oneOf("worker_runtime_mode", c.WorkerRuntimeMode, "server", "client")
	v.oneOf("log_level", c.LogLevel, "debug", "info", "warning", "error")
	v.required("log_path", c.LogPath, " (a file path or stdout)")

	for _, n := range []struct {
		key string
		val int
	}{
		{"sqlite_busy_timeout", c.SQLiteBusyTimeout},
		{"tick_lease_seconds", c.TickLeaseSeconds},
		{"worker_stale_minutes", c.WorkerStaleMinutes},
		{"max_workers", c.MaxWorkers},
		{"event_streams_per_user", c.EventStreamsPerUser},
		{"db_max_open_conns", c.DBMaxOpenConns},
		{"llm_timeout", c.LLMTimeout},
		{"llm_retry_after_max_seconds", c.LLMRetryAfterMaxSeconds},
		{"min_body_bytes_per_second", c.MinBodyBytesPerSecond},
		{"tool_http_timeout", c.ToolHTTPTimeout},
		{"SVC_AGENT_API_RATE_LIMIT_MAX", c.AgentAPIRateLimitMax},
		{"plugin_catalog_ttl", c.PluginCatalogTTL},
	} {
		v.nonNegative(n.key, n.val)
	}

	for _, n := range []struct {
		key string
		val int
	}{
		{"retention_task_days", c.RetentionTaskDays},
		{"retention_task_events_days", c.RetentionTaskEventsDays},
		{"retention_outbox_days", c.RetentionOutboxDays},
		{"retention_notifications_days", c.RetentionNotificationsDays},
		{"retention_usage_ledger_days", c.RetentionUsageLedgerDays},
	} {
		v.nonNegative(n.key, n.val)
		if n.val > MaxRetentionDays {
			v.add(n.key, "%s must be at most %d days (got %d)", n.key, MaxRetentionDays, n.val)
		}
	}

	v.positive("mcp_max_processes_per_server", c.MCPMaxProcessesPerServer)
	v.positive("mcp_max_processes", c.MCPMaxProcesses)
	v.positive("mcp_idle_seconds", c.MCPIdleSeconds)

	v.httpURL("mercure_url", c.MercureURL)
	v.httpURL("mercure_publish_url", c.MercurePublishURL)
	if c.MercureURL != "" && c.MercureJWTKey == "" {
		v.add("mercure_jwt_key", "mercure_jwt_key is required when mercure_url is set")
	}

	if u := strings.TrimSpace(c.PluginCatalogURL); u != "" {
		// As the catalog client requires (a query is allowed: some catalogs are served with one).
		// Plain http only on a loopback host, as the catalog client requires: the archives'
		// digests come from this document.
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			v.add("plugin_catalog_url", "plugin_catalog_url %q must be an absolute http:// or https:// URL", shown(p, u))
		} else if p.Scheme == "http" && !netguard.LoopbackHost(p.Hostname()) {
			v.add("plugin_catalog_url", "plugin_catalog_url %q must use https (plain http only on a loopback host: localhost, 127.0.0.0/8, ::1)", shown(p, u))
		}
	}
	if _, err := c.CatalogPublicKey(); err != nil {
		v.add("plugin_catalog_public_key", "%v", err)
	}

	if _, err := time.LoadLocation(c.TimeZone); err != nil || c.TimeZone == "" || c.TimeZone == "Local" {
		v.add("time_zone", "time_zone %q must be an IANA time zone name such as UTC or Europe/Paris", c.TimeZone)
	}
	if !currencyCode.MatchString(c.Currency) {
		v.add("currency", "currency %q must be three capital letters such as USD or EUR", c.Currency)
	}

	validateMail(v, c)

	validateLLMSeed(v, c)

	validateObservability(v, c)

	return v.problems
}

// MinMetricsToken is the shortest metrics_token accepted.
const MinMetricsToken = 16

// validateObservability checks the metrics and tracing settings.
func validateObservability(v *validator, c *Config) {
	if c.MetricsToken != "" && len(c.MetricsToken) < MinMetricsToken {
		v.add("metrics_token", "metrics_token must be at least %d characters (generate one with: openssl rand -hex 24)", MinMetricsToken)
	}
	if c.MetricsToken != "" && strings.IndexFunc(c.MetricsToken, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0 {
		v.add("metrics_token", "metrics_token must be printable ASCII without spaces")
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			v.add("metrics_listen", "metrics_listen %q must be a host:port address such as 127.0.0.1:9090", c.MetricsListen)
		} else if c.MetricsListen == c.Listen {
			v.add("metrics_listen", "metrics_listen must differ from listen")
		}
	}
	if c.WorkerHealthListen != "" {
		if _, _, err := net.SplitHostPort(c.WorkerHealthListen); err != nil {
			v.add("worker_health_listen", "worker_health_listen %q must be a host:port address such as 127.0.0.1:9091", c.WorkerHealthListen)
		} else if c.WorkerHealthListen == c.MetricsListen {
			v.add("worker_health_listen", "worker_health_listen must differ from metrics_listen")
		}
	}
	v.httpURL("otel_endpoint", c.OtelEndpoint)
	if c.OtelEndpoint != "" {
		v.required("otel_service_name", c.OtelServiceName, " when otel_endpoint is set")
	}
}

func validatePrefix(v *validator, p string) {
	if p == "" {
		return
	}
	if strings.ContainsAny(p, "?#\\%") || strings.IndexFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		v.add("app_prefix", "app_prefix %q must be a plain path (no spaces, ?, #, %% or \\)", p)
		return
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "." || seg == ".." {
			v.add("app_prefix", "app_prefix %q must not contain . or .. segments", p)
			return
		}
	}
}

func validateMail(v *validator, c *Config) {
	v.oneOf("mail_driver", c.MailDriver, "smtp", "none", "")
	v.port("mail_port", c.MailPort)
	v.oneOf("mail_encryption", c.MailEncryption, "tls", "ssl", "none", "")
	if c.MailEncryption == "ssl" && c.MailPort == 587 {
		v.add("mail_encryption", "mail_encryption ssl cannot be used with mail_port 587 (587 pairs with tls, 465 with ssl)")
	}
	if c.MailHost != "" && !isHostname(c.MailHost) {
		v.add("mail_host", "mail_host %q must be a host name only (no scheme, port or path; the port is mail_port)", c.MailHost)
	}
	if c.MailFrom != "" {
		if _, err := mail.ParseAddress(c.MailFrom); err != nil {
			v.add("mail_from", "mail_from %q is not a valid email address", c.MailFrom)
		}
	}
	if c.MailConfigured() {
		v.required("mail_host", c.MailHost, " when mail_driver is smtp")
		v.required("mail_from", c.MailFrom, " when mail_driver is smtp")
	}
}

// isHostname accepts a DNS name or an IP address literal, nothing else.
func isHostname(h string) bool {
	if net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")) != nil {
		return true
	}
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			ok := r == '-' || r == '_' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
			if !ok {
				return false
			}
		}
	}
	return true
}

// validateLLMSeed checks the SVC_LLM_* settings that seed the global default model
// configuration: driver and model come together, and the base URL is an http(s) URL, or for the
// scripted driver the script's path relative to the working directory.
func validateLLMSeed(v *validator, c *Config) {
	if c.LLMDriver != "" {
		v.oneOf("llm_driver", c.LLMDriver, "openai", "anthropic", "scripted")
		v.required("llm_model", c.LLMModel, " when llm_driver is set")
	} else if c.LLMModel != "" {
		v.add("llm_driver", "llm_driver is required when llm_model is set")
	}
	if _, err := netguard.ParseHostList(c.LLMAllowedHosts); err != nil {
		v.add("llm_allowed_hosts", "llm_allowed_hosts: %v", err)
	}
	if _, err := netguard.ParseHostList(c.OIDCAllowedHosts); err != nil {
		v.add("oidc_allowed_hosts", "oidc_allowed_hosts: %v", err)
	}
	if _, err := netguard.ParseHostList(c.MailAllowedHosts); err != nil {
		v.add("mail_allowed_hosts", "mail_allowed_hosts: %v", err)
	}
	if c.LLMDriver != "scripted" {
		v.httpURL("llm_base_url", c.LLMBaseURL)
		return
	}
	switch {
	case c.LLMBaseURL == "":
		v.add("llm_base_url", "llm_base_url (the script path) is required when llm_driver is scripted")
	case strings.Contains(c.LLMBaseURL, "://") || !filepath.IsLocal(c.LLMBaseURL):
		v.add("llm_base_url", "llm_base_url %q of the scripted driver must be a relative path inside the working directory", c.LLMBaseURL)
	}
}
