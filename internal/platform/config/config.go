// Package config loads the runtime configuration of the service.
//
// Four layers are merged, lowest to highest: built-in defaults, the configuration file
// (SVC_CONFIG_FILE, default config.yaml in the working directory, YAML or JSON, flat or nested
// keys), the environment (the file key upper-cased with the prefix SVC_), and the settings an
// administrator stored in the database. The result is normalised and validated as a whole; every
// problem is reported at once in a *ValidationError.
//
// A Loader caches the result and re-reads the file when it changes (see Loader.Current), so a
// long-running server picks up edits without a restart.
//
// Rules worth knowing:
//   - File keys are the lower-case names of the table (db_driver), except SVC_AGENT_API and
//     SVC_AGENT_API_RATE_LIMIT_MAX, which are spelled that way and only at the top level.
//     Nested mappings flatten by joining with "_" (db: {driver: mysql} is db_driver); the
//     flatter spelling wins, two spellings at the same depth are an error. Unknown keys are an
//     error (with a "did you mean"); a null value leaves the key at the lower layer's value.
//   - Types are strict in the file and the stored settings: a string key needs a string (an
//     unquoted 0123 is an error, not the octal number 83), an integer key a whole number, a
//     boolean key true or false.
//   - In the environment an empty variable sets a string key to "" (SVC_APP_PREFIX= serves at
//     the root) and leaves an integer or boolean key alone. SERVER_NAME, when non-empty,
//     overrides listen.
//   - Stored settings cannot set the keys needed before the database is open or the master key
//     (see Storable).
//   - Enumerations are trimmed and lower-cased before validation; app_prefix and app_url are
//     normalised (see NormalisePrefix).
package config

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is one resolved, validated runtime configuration. Each field carries its file key
// (tag key) and environment name without the SVC_ prefix (tag env). Values returned by a Loader
// are copies: changing one does not affect the loader.
//
// Durations are plain integers in the unit their name or comment gives, as in the file.
type Config struct {
	// Listen is the listen address of the web server. SERVER_NAME (unprefixed) overrides it.
	Listen string `key:"listen" env:"LISTEN" stored:"no"`

	// AppURL is the public origin, with any path prefix, used in emailed links and media URLs.
	// Required in production; empty (development only) means derived from Listen, never from a
	// request's headers (see PublicBase). Never ends in a slash.
	AppURL string `key:"app_url" env:"APP_URL"`
	// AppPrefix is the mount path prefix: "" (host root) or "/a/b" (leading slash, no trailing).
	AppPrefix string `key:"app_prefix" env:"APP_PREFIX"`
	// AppEnv is "development" or "production".
	AppEnv string `key:"app_env" env:"APP_ENV"`
	// TrustedProxies lists the addresses and CIDRs (comma-separated) of the reverse proxies
	// whose X-Forwarded-For and X-Real-IP headers give the client address; empty trusts none.
	// Read at start-up.
	TrustedProxies string `key:"trusted_proxies" env:"TRUSTED_PROXIES" stored:"no"`
	// HTTPReadTimeout bounds the reading of one request, headers and body, in seconds;
	// operations whose body cap exceeds 1 MiB get more time in proportion. Read at start-up.
	HTTPReadTimeout int `key:"http_read_timeout" env:"HTTP_READ_TIMEOUT"`
	// HTTPWriteTimeout bounds the writing of one response, in seconds; event streams have none
	// and the client-mode tick gets tick_lease_seconds. Read at start-up.
	HTTPWriteTimeout int `key:"http_write_timeout" env:"HTTP_WRITE_TIMEOUT"`
	// HTTPIdleTimeout closes a keep-alive connection idle that long, in seconds. Read at start-up.
	HTTPIdleTimeout int `key:"http_idle_timeout" env:"HTTP_IDLE_TIMEOUT"`
	// MaxRequestBodies caps the request bodies being received at once; further requests with a
	// body wait for a slot up to half of http_read_timeout, then answer 503. Read at start-up.
	MaxRequestBodies int `key:"max_request_bodies" env:"MAX_REQUEST_BODIES"`
	// MaxRequestBodiesPerClient caps the bodies one client address sends (or waits to send) at
	// once, so that one address cannot take every max_request_bodies slot; beyond it a request
	// answers 503 at once. Read at every request.
	MaxRequestBodiesPerClient int `key:"max_request_bodies_per_client" env:"MAX_REQUEST_BODIES_PER_CLIENT"`
	// MinBodyBytesPerSecond is the slowest a request body may arrive: every 10 s window must
	// bring this many bytes a second (or the rest of the body), else the request fails with 400
	// and its slot is freed. 0 leaves only http_read_timeout. Read at every request.
	MinBodyBytesPerSecond int `key:"min_body_bytes_per_second" env:"MIN_BODY_BYTES_PER_SECOND"`
	// AllowRegistration opens self-registration.
	AllowRegistration bool `key:"allow_registration" env:"ALLOW_REGISTRATION"`

	// SecretKey is the base64 encoding of the 32-byte master key (see DecodeSecretKey).
	SecretKey string `key:"secret_key" env:"SECRET_KEY" secret:"yes" stored:"no"`
	// KeyPath is the key file used when SecretKey is empty; generated on first use.
	KeyPath string `key:"key_path" env:"KEY_PATH" stored:"no"`

	// DBDriver is "sqlite", "mysql", "mariadb" or "postgres".
	DBDriver string `key:"db_driver" env:"DB_DRIVER" stored:"no"`
	// DBHost is the network database host.
	DBHost string `key:"db_host" env:"DB_HOST" stored:"no"`
	// DBPort is the network database port; 0 means the driver's own (3306 for MySQL/MariaDB,
	// 5432 for PostgreSQL).
	DBPort int `key:"db_port" env:"DB_PORT" stored:"no"`
	// DBName is the database name; with SQLite the file is storage/<DBName>.sqlite.
	DBName string `key:"db_name" env:"DB_NAME" stored:"no"`
	// DBUser is the network database user.
	DBUser string `key:"db_user" env:"DB_USER" stored:"no"`
	// DBPassword is the network database password.
	DBPassword string `key:"db_password" env:"DB_PASSWORD" secret:"yes" stored:"no"`
	// DBSSLMode is PostgreSQL's sslmode (disable, allow, prefer, require, verify-ca,
	// verify-full); empty means prefer, libpq's default. Ignored by the other drivers.
	DBSSLMode string `key:"db_sslmode" env:"DB_SSLMODE" stored:"no"`
	// SQLiteBusyTimeout is how long SQLite waits on a lock, in milliseconds.
	SQLiteBusyTimeout int `key:"sqlite_busy_timeout" env:"SQLITE_BUSY_TIMEOUT" stored:"no"`
	// DBMaxOpenConns bounds the database connections of this process (idle ones are kept up to
	// the same number); a request, step or chore beyond it waits for a free connection. 0 means
	// automatic: 16 on SQLite (one writer at a time; WAL readers beside it), 32 on
	// MySQL/MariaDB (mind max_connections, 151 by default, across every process on the
	// server), 24 on PostgreSQL (max_connections 100 by default). At most 1000. Read at start-up.
	DBMaxOpenConns int `key:"db_max_open_conns" env:"DB_MAX_OPEN_CONNS" stored:"no"`

	// WorkerRuntimeMode is "server" (the worker daemon runs tasks) or "client" (clients tick).
	WorkerRuntimeMode string `key:"worker_runtime_mode" env:"WORKER_RUNTIME_MODE"`
	// TickLeaseSeconds is the lease of an in-flight tick in client mode.
	TickLeaseSeconds int `key:"tick_lease_seconds" env:"TICK_LEASE_SECONDS"`
	// WorkerStaleMinutes is the age after which a RUNNING task is reaped; 0 disables the reaper.
	WorkerStaleMinutes int `key:"worker_stale_minutes" env:"WORKER_STALE_MINUTES"`
	// MaxWorkers is how many tasks the server-mode worker runs at once. 0 means automatic:
	// 16 on SQLite, 32 on MySQL/MariaDB (measured; see docs/benchmarks.md, "Worker concurrency
	// sweep"), 24 on PostgreSQL (its default pool). Any value is capped at the connection pool (db_max_open_conns).
	// Read at start-up.
	MaxWorkers int `key:"max_workers" env:"MAX_WORKERS"`
	// ShutdownGraceSeconds is the whole time a stop (SIGTERM, SIGINT) may take, in seconds: the
	// claim loop ends at once and open event streams end at once; steps in flight finish within
	// the larger part of it, then the model and tool calls still running are cancelled and
	// their tasks handed back; the outboxes and the trace exporter get their own share at the
	// end. Keep it below the orchestrator's grace (30 s for Kubernetes, 10 s for docker stop).
	// File or environment only: it belongs to the deployment. Read when the stop begins.
	ShutdownGraceSeconds int `key:"shutdown_grace_seconds" env:"SHUTDOWN_GRACE_SECONDS" stored:"no"`
	// Retention (housekeeping deletes in small batches on every process; 0 keeps forever; read
	// at every pass). RetentionTaskDays removes a top-level chat, with everything it holds, that
	// has been finished (COMPLETED, FAILED, CANCELLED, ABORTED) for that many days.
	RetentionTaskDays int `key:"retention_task_days" env:"RETENTION_TASK_DAYS"`
	// RetentionTaskEventsDays removes the event log (what an event stream replays) of a task
	// finished that many days ago; its messages, transcript and tool calls stay.
	RetentionTaskEventsDays int `key:"retention_task_events_days" env:"RETENTION_TASK_EVENTS_DAYS"`
	// RetentionOutboxDays removes webhook deliveries and mails delivered or given up that many
	// days ago.
	RetentionOutboxDays int `key:"retention_outbox_days" env:"RETENTION_OUTBOX_DAYS"`
	// RetentionNotificationsDays removes notifications read that many days ago.
	RetentionNotificationsDays int `key:"retention_notifications_days" env:"RETENTION_NOTIFICATIONS_DAYS"`
	// RetentionUsageLedgerDays removes usage ledger rows (one per model call, already summed
	// into the daily rollup that GET /usage and budgets read) older than that many days; a
	// chat's own cost reads the ledger, so an older chat then shows none.
	RetentionUsageLedgerDays int `key:"retention_usage_ledger_days" env:"RETENTION_USAGE_LEDGER_DAYS"`
	// EventStreamsPerUser bounds the task event streams one user (or agent key) holds open on
	// one process at once, and separately the embedded push hub's subscriptions of one user; one
	// more is refused with 429 (each holds a goroutine and reads the database when woken). 0
	// means taskstream.DefaultMaxPerOwner (32). Read at start-up (the hub's cap at every
	// subscription).
	EventStreamsPerUser int `key:"event_streams_per_user" env:"EVENT_STREAMS_PER_USER"`
	// LLMTimeout is the timeout of model calls, in seconds.
	LLMTimeout int `key:"llm_timeout" env:"LLM_TIMEOUT"`
	// LLMRetryAfterMaxSeconds bounds how long a task's automatic retry waits for a provider that
	// answered with Retry-After (429, 503): the retry waits the longer of the agent's
	// retry_after_minutes and the provider's wait, the latter cut to this many seconds; 0
	// ignores the provider's wait. Read at every retry.
	LLMRetryAfterMaxSeconds int `key:"llm_retry_after_max_seconds" env:"LLM_RETRY_AFTER_MAX_SECONDS"`
	// TimeZone is the instance's time zone (an IANA name such as Europe/Paris): usage is counted
	// by its calendar days and budgets by its days, weeks and months. File or environment only,
	// read at start-up (days already counted keep their day when it changes).
	TimeZone string `key:"time_zone" env:"TIME_ZONE" stored:"no"`
	// Currency is the currency of model configurations' prices and of costs (a three-letter
	// code, shown beside amounts). Read at every use.
	Currency string `key:"currency" env:"CURRENCY"`
	// ToolHTTPTimeout is the timeout of tool HTTP requests, in seconds.
	ToolHTTPTimeout int `key:"tool_http_timeout" env:"TOOL_HTTP_TIMEOUT"`

	// MercureURL is the public push hub URL; empty means the embedded SSE hub.
	MercureURL string `key:"mercure_url" env:"MERCURE_URL"`
	// MercurePublishURL is the publisher endpoint of the hub; defaults to MercureURL.
	MercurePublishURL string `key:"mercure_publish_url" env:"MERCURE_PUBLISH_URL"`
	// MercureJWTKey is the HS256 shared secret of the hub.
	MercureJWTKey string `key:"mercure_jwt_key" env:"MERCURE_JWT_KEY" secret:"yes"`

	// LogLevel is "debug", "info", "warning" or "error".
	LogLevel string `key:"log_level" env:"LOG_LEVEL"`
	// LogPath is a log file path, or "stdout".
	LogPath string `key:"log_path" env:"LOG_PATH"`

	// NotificationsEmailEnabled sends an email when a scheduled run completes.
	NotificationsEmailEnabled bool `key:"notifications_email_enabled" env:"NOTIFICATIONS_EMAIL_ENABLED"`

	// AgentAPI mounts the per-agent API. Its file key is the flat SVC_AGENT_API only.
	AgentAPI bool `key:"SVC_AGENT_API" env:"AGENT_API"`
	// AgentAPIRateLimitMax is the per-key request budget per minute of the per-agent API.
	AgentAPIRateLimitMax int `key:"SVC_AGENT_API_RATE_LIMIT_MAX" env:"AGENT_API_RATE_LIMIT_MAX"`

	// PluginsDir is the folder of installed plugins (one folder with plugin.json each, or
	// <vendor>/<name>/ as the installer unpacks packages).
	PluginsDir string `key:"plugins_dir" env:"PLUGINS_DIR"`
	// PluginCatalogURL is the address of the plugin catalog index ("" : no catalog): https, or
	// plain http on a loopback host for development (netguard.LoopbackHost).
	PluginCatalogURL string `key:"plugin_catalog_url" env:"PLUGIN_CATALOG_URL"`
	// PluginCatalogPublicKey is the ed25519 public key (32 bytes, base64 or hexadecimal) the
	// catalog's detached signature (<index>.sig) must verify with; "" accepts unsigned catalogs.
	PluginCatalogPublicKey string `key:"plugin_catalog_public_key" env:"PLUGIN_CATALOG_PUBLIC_KEY"`
	// MCPAllowedHosts lists host names and IP addresses (separated by commas or spaces) of MCP
	// servers declared with a URL that may be private or loopback (an MCP server on the local
	// network); every other MCP connection passes the outbound screen.
	MCPAllowedHosts string `key:"mcp_allowed_hosts" env:"MCP_ALLOWED_HOSTS"`
	// MCPMaxProcessesPerServer and MCPMaxProcesses bound the stdio MCP server processes of one
	// server and of all (one runs per distinct set of secret values, and users set their own):
	// beyond, the least recently used idle process is stopped, or the call waits for one, up to
	// half of tool_http_timeout. At least 1. Read at start-up.
	MCPMaxProcessesPerServer int `key:"mcp_max_processes_per_server" env:"MCP_MAX_PROCESSES_PER_SERVER"`
	MCPMaxProcesses          int `key:"mcp_max_processes" env:"MCP_MAX_PROCESSES"`
	// MCPIdleSeconds stops an MCP connection (a stdio process) unused that long. At least 1.
	// Read at start-up.
	MCPIdleSeconds int `key:"mcp_idle_seconds" env:"MCP_IDLE_SECONDS"`
	// PluginInstallEnabled enables plugin install, uninstall and update in the web UI.
	PluginInstallEnabled bool `key:"plugin_install_enabled" env:"PLUGIN_INSTALL_ENABLED"`
	// ComposerBinary is accepted for compatibility and has no meaning here: plugins are
	// folders unpacked from catalog archives, not packages of a PHP package manager.
	ComposerBinary string `key:"composer_binary" env:"COMPOSER_BINARY"`
	// PluginCatalogEnabled enables the catalog browse tab and GET /plugins/catalog.
	PluginCatalogEnabled bool `key:"plugin_catalog_enabled" env:"PLUGIN_CATALOG_ENABLED"`
	// PluginCatalogTTL is the lifetime of the on-disk catalog cache, in seconds.
	PluginCatalogTTL int `key:"plugin_catalog_ttl" env:"PLUGIN_CATALOG_TTL"`

	// MailDriver is "smtp" to send mail; "" or "none" disables mail.
	MailDriver string `key:"mail_driver" env:"MAIL_DRIVER"`
	// MailHost is the SMTP host name (no scheme, port or path).
	MailHost string `key:"mail_host" env:"MAIL_HOST"`
	// MailPort is the SMTP port: 587 pairs with tls, 465 with ssl.
	MailPort int `key:"mail_port" env:"MAIL_PORT"`
	// MailUsername is the SMTP user.
	MailUsername string `key:"mail_username" env:"MAIL_USERNAME"`
	// MailPassword is the SMTP password.
	MailPassword string `key:"mail_password" env:"MAIL_PASSWORD" secret:"yes"`
	// MailEncryption is "tls" (STARTTLS), "ssl" (implicit TLS), "none" or "" (opportunistic).
	MailEncryption string `key:"mail_encryption" env:"MAIL_ENCRYPTION"`
	// MailFrom is the sender address.
	MailFrom string `key:"mail_from" env:"MAIL_FROM"`
	// MailFromName is the sender display name.
	MailFromName string `key:"mail_from_name" env:"MAIL_FROM_NAME"`
	// MailAllowedHosts lists the host names, IP addresses and CIDR networks (separated by
	// commas or spaces) a mail_host saved over the API may be although not public (a relay on
	// the local network); other saved hosts pass the outbound screen. A mail_host set in the
	// file or environment is the operator's and is not screened. File or environment only:
	// which internal hosts the service may reach is deployment topology.
	MailAllowedHosts string `key:"mail_allowed_hosts" env:"MAIL_ALLOWED_HOSTS" stored:"no"`

	// LLMDriver seeds the global default model configuration: "openai", "anthropic" or
	// "scripted"; empty seeds nothing.
	LLMDriver string `key:"llm_driver" env:"LLM_DRIVER"`
	// LLMBaseURL is the base URL of the seeded model configuration.
	LLMBaseURL string `key:"llm_base_url" env:"LLM_BASE_URL"`
	// LLMModel is the model name of the seeded model configuration.
	LLMModel string `key:"llm_model" env:"LLM_MODEL"`
	// LLMAPIKey is the API key of the seeded model configuration.
	LLMAPIKey string `key:"llm_api_key" env:"LLM_API_KEY" secret:"yes"`
	// LLMAllowedHosts lists the host names, IP addresses and CIDR networks (separated by commas
	// or spaces) that group model configurations may reach besides public addresses (a local
	// Ollama: "localhost" or "10.0.0.0/8"); global configurations are not screened.
	LLMAllowedHosts string `key:"llm_allowed_hosts" env:"LLM_ALLOWED_HOSTS"`

	// PasswordLoginEnabled offers the password sign-in; false switches it off for everyone but
	// the administrators (their break-glass path) while a single sign-on provider is configured
	// (with none, it has no effect).
	PasswordLoginEnabled bool `key:"password_login_enabled" env:"PASSWORD_LOGIN_ENABLED"`
	// OIDCAllowedHosts lists the host names, IP addresses and CIDR networks (as
	// llm_allowed_hosts) single sign-on issuers may be reached at besides public addresses (an
	// identity provider on the internal network).
	OIDCAllowedHosts string `key:"oidc_allowed_hosts" env:"OIDC_ALLOWED_HOSTS"`

	// MetricsToken turns on GET {app_prefix}/metrics (Prometheus text format) for requests
	// carrying "Authorization: Bearer <token>"; at least 16 characters. It is a secret: redacted
	// in every output, and only read from the file or the environment (never stored in the
	// database). Read at every request, so a change of the file applies at once.
	MetricsToken string `key:"metrics_token" env:"METRICS_TOKEN" secret:"yes" stored:"no"`
	// MetricsListen is a separate listen address (such as 127.0.0.1:9090) serving only
	// /metrics, without a token; keep it private. Read at start-up.
	MetricsListen string `key:"metrics_listen" env:"METRICS_LISTEN" stored:"no"`
	// WorkerHealthListen is the address (such as 127.0.0.1:9091) on which `svc worker`, which
	// has no API listener, answers GET /healthz and GET /readyz for a process supervisor or an
	// orchestrator's probes; empty: none. Read at start-up.
	WorkerHealthListen string `key:"worker_health_listen" env:"WORKER_HEALTH_LISTEN" stored:"no"`
	// OtelEndpoint turns on OpenTelemetry traces, exported over OTLP/HTTP (protobuf) to this
	// collector base URL (such as http://127.0.0.1:4318; /v1/traces is appended unless the path
	// already ends with it). Set by the administrator, so not screened. Read at start-up.
	OtelEndpoint string `key:"otel_endpoint" env:"OTEL_ENDPOINT" stored:"no"`
	// OtelServiceName is the service.name resource attribute of the exported spans. Read at
	// start-up.
	OtelServiceName string `key:"otel_service_name" env:"OTEL_SERVICE_NAME" stored:"no"`
}

// DefaultShutdownGraceSeconds is shutdown_grace_seconds's default: a stop ends within a
// Kubernetes pod's default grace of 30 s, with time to spare before SIGKILL.
const DefaultShutdownGraceSeconds = 25

// ShutdownGrace is shutdown_grace_seconds as a duration.
func (c *Config) ShutdownGrace() time.Duration {
	return time.Duration(c.ShutdownGraceSeconds) * time.Second
}

// DefaultLLMRetryAfterMaxSeconds is llm_retry_after_max_seconds's default: a provider may hold
// a task's automatic retry back by up to ten minutes.
const DefaultLLMRetryAfterMaxSeconds = 600

// Retention defaults (days; 0 keeps forever): chats are kept; the event log of a finished task
// 7 days (a client that reconnects later reads the transcript instead); delivered or given-up
// outbox rows 7 days; read notifications 30 days; usage ledger rows 400 days (a year of chat
// costs; the daily rollup is kept). MaxRetentionDays bounds every retention key.
const (
	DefaultRetentionTaskEventsDays    = 7
	DefaultRetentionOutboxDays        = 7
	DefaultRetentionNotificationsDays = 30
	DefaultRetentionUsageLedgerDays   = 400
	MaxRetentionDays                  = 36500
)

// Defaults returns the built-in defaults, the lowest layer.
func Defaults() *Config {
	return &Config{
		Listen:                     ":8080",
		AppPrefix:                  "/svc",
		AppEnv:                     "development",
		AllowRegistration:          true,
		PasswordLoginEnabled:       true,
		HTTPReadTimeout:            60,
		HTTPWriteTimeout:           60,
		HTTPIdleTimeout:            120,
		MaxRequestBodies:           64,
		MaxRequestBodiesPerClient:  8,
		MinBodyBytesPerSecond:      1024,
		KeyPath:                    "storage/secret.key",
		DBDriver:                   "sqlite",
		DBHost:                     "127.0.0.1",
		DBPort:                     0,
		DBName:                     "svc",
		DBUser:                     "svc",
		SQLiteBusyTimeout:          5000,
		WorkerRuntimeMode:          "server",
		TickLeaseSeconds:           600,
		WorkerStaleMinutes:         60,
		MaxWorkers:                 0,
		ShutdownGraceSeconds:       DefaultShutdownGraceSeconds,
		LLMTimeout:                 300,
		RetentionTaskEventsDays:    DefaultRetentionTaskEventsDays,
		RetentionOutboxDays:        DefaultRetentionOutboxDays,
		RetentionNotificationsDays: DefaultRetentionNotificationsDays,
		RetentionUsageLedgerDays:   DefaultRetentionUsageLedgerDays,
		TimeZone:                   "UTC",
		Currency:                   "USD",
		LLMRetryAfterMaxSeconds:    DefaultLLMRetryAfterMaxSeconds,
		ToolHTTPTimeout:            30,
		LogLevel:                   "info",
		LogPath:                    "storage/svc.log",
		NotificationsEmailEnabled:  true,
		AgentAPI:                   false,
		AgentAPIRateLimitMax:       60,
		PluginInstallEnabled:       false,
		ComposerBinary:             "composer",
		PluginCatalogEnabled:       true,
		PluginCatalogTTL:           3600,
		PluginsDir:                 "storage/plugins",
		MCPMaxProcessesPerServer:   4,
		MCPMaxProcesses:            32,
		MCPIdleSeconds:             120,
		MailPort:                   587,
		OtelServiceName:            "svc",
	}
}

// IsProduction reports whether app_env is production.
// CatalogPublicKey decodes plugin_catalog_public_key: nil when it is empty (catalogs need no
// signature). Errors: the value is neither base64 nor hexadecimal of 32 bytes (Validate
// reports it first, so a loaded configuration never has one).
func (c *Config) CatalogPublicKey() (ed25519.PublicKey, error) {
	k := strings.TrimSpace(c.PluginCatalogPublicKey)
	if k == "" {
		return nil, nil
	}
	b, err := hex.DecodeString(k)
	if err != nil {
		b, err = base64.StdEncoding.DecodeString(k)
	}
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("plugin_catalog_public_key must be a %d-byte ed25519 public key in base64 or hexadecimal", ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

func (c *Config) IsProduction() bool { return c.AppEnv == "production" }

// MailConfigured reports whether outgoing mail is enabled (mail_driver is smtp).
func (c *Config) MailConfigured() bool { return c.MailDriver == "smtp" }

// SQLitePath is the SQLite database file, storage/<db_name>.sqlite, relative to the working
// directory.
func (c *Config) SQLitePath() string {
	return filepath.Join("storage", c.DBName+".sqlite")
}

// DBAddr is db_host:db_port, the port being the driver's own when db_port is 0.
func (c *Config) DBAddr() string {
	port := c.DBPort
	if port == 0 {
		port = 3306
		if c.DBDriver == "postgres" {
			port = 5432
		}
	}
	return net.JoinHostPort(c.DBHost, strconv.Itoa(port))
}

// PostgresDSN is the pgx connection URL for db_host, db_port, db_name, db_user, db_password and
// db_sslmode. It contains the password: never log it.
func (c *Config) PostgresDSN() string {
	u := url.URL{Scheme: "postgres", Host: c.DBAddr(), Path: "/" + c.DBName}
	if c.DBPassword != "" {
		u.User = url.UserPassword(c.DBUser, c.DBPassword)
	} else {
		u.User = url.User(c.DBUser)
	}
	if c.DBSSLMode != "" {
		u.RawQuery = "sslmode=" + url.QueryEscape(c.DBSSLMode)
	}
	return u.String()
}

// MySQLDSN is the go-sql-driver/mysql data source name for db_host, db_port, db_name, db_user
// and db_password, with parseTime=true, charset=utf8mb4, loc=UTC and multiStatements=true.
// It contains the password: never log it.
func (c *Config) MySQLDSN() string {
	var b strings.Builder
	b.WriteString(c.DBUser)
	if c.DBPassword != "" {
		b.WriteByte(':')
		b.WriteString(c.DBPassword)
	}
	b.WriteString("@tcp(")
	b.WriteString(c.DBAddr())
	b.WriteString(")/")
	b.WriteString(c.DBName)
	b.WriteString("?parseTime=true&charset=utf8mb4&loc=UTC&multiStatements=true")
	return b.String()
}

// Public returns the feature flags the web UI reads from GET /config. It never contains a
// secret.
func (c *Config) Public() map[string]any {
	push := "embedded"
	if c.MercureURL != "" {
		push = "mercure"
	}
	return map[string]any{
		"agent_api":                   c.AgentAPI,
		"plugin_install_enabled":      c.PluginInstallEnabled,
		"plugin_catalog_enabled":      c.PluginCatalogEnabled,
		"worker_runtime_mode":         c.WorkerRuntimeMode,
		"allow_registration":          c.AllowRegistration,
		"push":                        push,
		"app_prefix":                  c.AppPrefix,
		"notifications_email_enabled": c.NotificationsEmailEnabled,
	}
}

// redacted replaces a secret that is set; an empty secret stays empty so the output still says
// whether it is configured.
const redacted = "[REDACTED]"

// redactedValues lists every key with its value, secrets replaced, in declaration order.
func (c Config) redactedValues() []keyValue {
	out := make([]keyValue, 0, len(fields))
	for _, f := range fields {
		v := f.get(&c)
		if f.secret && v != "" {
			v = redacted
		}
		out = append(out, keyValue{f.key, v})
	}
	return out
}

type keyValue struct {
	key string
	val any
}

// String lists every key and value with the secrets (secret_key, db_password, mail_password,
// mercure_jwt_key, llm_api_key, metrics_token) redacted, so a Config can be printed or logged safely.
func (c Config) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, kv := range c.redactedValues() {
		if i > 0 {
			b.WriteByte(' ')
		}
		if s, ok := kv.val.(string); ok {
			fmt.Fprintf(&b, "%s=%q", kv.key, s)
		} else {
			fmt.Fprintf(&b, "%s=%v", kv.key, kv.val)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// GoString makes %#v print the redacted form too.
func (c Config) GoString() string { return "config.Config" + c.String() }

// LogValue logs a Config as a group of its keys with the secrets redacted.
func (c Config) LogValue() slog.Value {
	kvs := c.redactedValues()
	attrs := make([]slog.Attr, 0, len(kvs))
	for _, kv := range kvs {
		attrs = append(attrs, slog.Any(kv.key, kv.val))
	}
	return slog.GroupValue(attrs...)
}

// MarshalJSON encodes a Config as an object of file keys with the secrets redacted, so a
// Config accidentally serialised into a response or a log line leaks nothing.
func (c Config) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(fields))
	for _, kv := range c.redactedValues() {
		m[kv.key] = kv.val
	}
	return json.Marshal(m)
}

var (
	_ fmt.Stringer   = Config{}
	_ fmt.GoStringer = Config{}
	_ slog.LogValuer = Config{}
	_ json.Marshaler = Config{}
)

// PublicBase is the public origin with the mount prefix: app_url when configured, otherwise
// (development only: production requires app_url) the listen address, with localhost for an
// unspecified host. It never comes from a request's headers: a Host or X-Forwarded-* header
// chosen by the caller must not end up in a mailed link.
func (c *Config) PublicBase() string {
	if c.AppURL != "" {
		return c.AppURL
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return "http://localhost" + c.AppPrefix
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + c.AppPrefix
}

// TrustedProxyList is trusted_proxies split into its entries.
func (c *Config) TrustedProxyList() []string {
	var out []string
	for _, p := range strings.Split(c.TrustedProxies, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
