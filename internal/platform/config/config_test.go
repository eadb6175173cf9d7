package config

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

// testKey is a valid secret_key (32 bytes of 0x01).
var testKey = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="

// load resolves a configuration from an optional file and an explicit environment, never the
// process's.
func load(t *testing.T, file, content string, env ...string) (*Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "absent.yaml")
	if file != "" {
		path = writeFile(t, file, content)
	}
	return NewLoader(append([]string{"SVC_CONFIG_FILE=" + path}, env...)).Load()
}

func mustLoad(t *testing.T, file, content string, env ...string) *Config {
	t.Helper()
	c, err := load(t, file, content, env...)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func get(c *Config, key string) any { return byKey[key].get(c) }

func TestDefaults(t *testing.T) {
	t.Parallel()
	want := &Config{
		Listen:                     ":8080",
		AppURL:                     "",
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
		SecretKey:                  "",
		KeyPath:                    "storage/secret.key",
		DBDriver:                   "sqlite",
		DBHost:                     "127.0.0.1",
		DBPort:                     0,
		DBName:                     "svc",
		DBUser:                     "svc",
		DBPassword:                 "",
		SQLiteBusyTimeout:          5000,
		WorkerRuntimeMode:          "server",
		TickLeaseSeconds:           600,
		WorkerStaleMinutes:         60,
		MaxWorkers:                 0,
		ShutdownGraceSeconds:       DefaultShutdownGraceSeconds,
		LLMTimeout:                 300,
		RetentionTaskEventsDays:    7,
		RetentionOutboxDays:        7,
		RetentionNotificationsDays: 30,
		RetentionUsageLedgerDays:   400,
		LLMRetryAfterMaxSeconds:    DefaultLLMRetryAfterMaxSeconds,
		TimeZone:                   "UTC",
		Currency:                   "USD",
		ToolHTTPTimeout:            30,
		MercureURL:                 "",
		MercurePublishURL:          "",
		MercureJWTKey:              "",
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
		MailDriver:                 "",
		MailHost:                   "",
		MailPort:                   587,
		MailEncryption:             "",
		LLMDriver:                  "",
		OtelServiceName:            "svc",
	}
	got := mustLoad(t, "", "")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, Defaults()); diff != "" {
		t.Errorf("Defaults() (-want +got):\n%s", diff)
	}
	if got.IsProduction() || got.MailConfigured() {
		t.Error("defaults must be development without mail")
	}
}

func TestEveryKeyHasFileAndEnvName(t *testing.T) {
	t.Parallel()
	for _, f := range fields {
		want := EnvPrefix + strings.ToUpper(f.key)
		if f.flatOnly {
			want = f.key
		}
		if f.env != want {
			t.Errorf("key %s: env %s, want %s", f.key, f.env, want)
		}
	}
	if len(fields) != 79 {
		t.Errorf("%d keys, want 79", len(fields))
	}
}

func TestPrecedence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		file   string
		env    []string
		stored map[string]any
		key    string
		want   any
	}{
		{name: "default", key: "log_level", want: "info"},
		{name: "file over default", file: "log_level: info", key: "log_level", want: "info"},
		{name: "env over file", file: "log_level: info", env: []string{"SVC_LOG_LEVEL=debug"}, key: "log_level", want: "debug"},
		{name: "stored over env", file: "log_level: info", env: []string{"SVC_LOG_LEVEL=debug"}, stored: map[string]any{"log_level": "error"}, key: "log_level", want: "error"},
		{name: "stored over default", stored: map[string]any{"log_level": "error"}, key: "log_level", want: "error"},
		{name: "int file", file: "max_workers: 2", key: "max_workers", want: 2},
		{name: "int env", file: "max_workers: 2", env: []string{"SVC_MAX_WORKERS=3"}, key: "max_workers", want: 3},
		{name: "int stored float64", file: "max_workers: 2", env: []string{"SVC_MAX_WORKERS=3"}, stored: map[string]any{"max_workers": float64(4)}, key: "max_workers", want: 4},
		{name: "bool file", file: "allow_registration: false", key: "allow_registration", want: false},
		{name: "bool env", file: "allow_registration: false", env: []string{"SVC_ALLOW_REGISTRATION=true"}, key: "allow_registration", want: true},
		{name: "bool stored", env: []string{"SVC_ALLOW_REGISTRATION=true"}, stored: map[string]any{"allow_registration": false}, key: "allow_registration", want: false},
		{name: "db_driver file", file: "db_driver: mysql", key: "db_driver", want: "mysql"},
		{name: "db_driver env", file: "db_driver: mysql", env: []string{"SVC_DB_DRIVER=mariadb"}, key: "db_driver", want: "mariadb"},
		{name: "prefix file", file: "app_prefix: /a", key: "app_prefix", want: "/a"},
		{name: "prefix empty env means root", file: "app_prefix: /a", env: []string{"SVC_APP_PREFIX="}, key: "app_prefix", want: ""},
		{name: "prefix stored", env: []string{"SVC_APP_PREFIX=/b"}, stored: map[string]any{"app_prefix": "/c/"}, key: "app_prefix", want: "/c"},
		{name: "empty env leaves int alone", file: "max_workers: 2", env: []string{"SVC_MAX_WORKERS="}, key: "max_workers", want: 2},
		{name: "agent api file", file: "SVC_AGENT_API: true", key: "SVC_AGENT_API", want: true},
		{name: "agent api env", file: "SVC_AGENT_API: true", env: []string{"SVC_AGENT_API=false"}, key: "SVC_AGENT_API", want: false},
		{name: "agent api stored", stored: map[string]any{"SVC_AGENT_API": true}, key: "SVC_AGENT_API", want: true},
		{name: "rate limit file", file: "SVC_AGENT_API_RATE_LIMIT_MAX: 5", key: "SVC_AGENT_API_RATE_LIMIT_MAX", want: 5},
		{name: "rate limit env", file: "SVC_AGENT_API_RATE_LIMIT_MAX: 5", env: []string{"SVC_AGENT_API_RATE_LIMIT_MAX=7"}, key: "SVC_AGENT_API_RATE_LIMIT_MAX", want: 7},
		{name: "listen env", env: []string{"SVC_LISTEN=127.0.0.1:9000"}, key: "listen", want: "127.0.0.1:9000"},
		{name: "SERVER_NAME over SVC_LISTEN", file: "listen: ':1'", env: []string{"SVC_LISTEN=:2", "SERVER_NAME=:3"}, key: "listen", want: ":3"},
		{name: "empty SERVER_NAME ignored", env: []string{"SVC_LISTEN=:2", "SERVER_NAME="}, key: "listen", want: ":2"},
		{name: "later environ entry wins", env: []string{"SVC_LOG_LEVEL=info", "SVC_LOG_LEVEL=error"}, key: "log_level", want: "error"},
		{name: "publish url defaults to hub", env: []string{"SVC_MERCURE_URL=https://hub.example/.well-known/mercure", "SVC_MERCURE_JWT_KEY=k"}, key: "mercure_publish_url", want: "https://hub.example/.well-known/mercure"},
		{name: "publish url own value", file: "mercure_publish_url: http://internal:3000/.well-known/mercure", env: []string{"SVC_MERCURE_URL=https://hub.example/.well-known/mercure", "SVC_MERCURE_JWT_KEY=k"}, key: "mercure_publish_url", want: "http://internal:3000/.well-known/mercure"},
		{name: "mail env", env: []string{"SVC_MAIL_HOST=smtp.example.com"}, key: "mail_host", want: "smtp.example.com"},
		{name: "llm env", file: "llm_model: a", env: []string{"SVC_LLM_MODEL=b", "SVC_LLM_DRIVER=openai"}, key: "llm_model", want: "b"},
		{name: "enum lower-cased", env: []string{"SVC_APP_ENV= Development "}, key: "app_env", want: "development"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "absent.yaml")
			if tt.file != "" {
				path = writeFile(t, "config.yaml", tt.file)
			}
			l := NewLoader(append([]string{"SVC_CONFIG_FILE=" + path}, tt.env...))
			if tt.stored != nil {
				if err := l.SetStored(tt.stored); err != nil {
					t.Fatalf("SetStored: %v", err)
				}
			}
			c, err := l.Load()
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := get(c, tt.key); got != tt.want {
				t.Errorf("%s = %#v, want %#v", tt.key, got, tt.want)
			}
		})
	}
}

func TestFlatAndNested(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, content string
		want                map[string]any
	}{
		{"nested yaml", "c.yaml", "db:\n  driver: mysql\n  port: 3307\nmail:\n  from:\n    name: Svc\n", map[string]any{"db_driver": "mysql", "db_port": 3307, "mail_from_name": "Svc"}},
		{"flat wins over nested (flat first)", "c.yaml", "db_driver: mariadb\ndb:\n  driver: mysql\n", map[string]any{"db_driver": "mariadb"}},
		{"flat wins over nested (nested first)", "c.yaml", "db:\n  driver: mysql\ndb_driver: mariadb\n", map[string]any{"db_driver": "mariadb"}},
		{"less nested wins", "c.yaml", "mail:\n  from_name: A\n  from:\n    name: B\n", map[string]any{"mail_from_name": "A"}},
		{"partial nesting", "c.yaml", "plugin:\n  catalog:\n    enabled: false\n    ttl: 5\n", map[string]any{"plugin_catalog_enabled": false, "plugin_catalog_ttl": 5}},
		{"nested json", "c.json", `{"db": {"driver": "mysql"}, "db_driver": "mariadb", "log": {"level": "info"}}`, map[string]any{"db_driver": "mariadb", "log_level": "info"}},
		{"empty section is fine", "c.yaml", "mail:\ndb_port: 1\n", map[string]any{"db_port": 1}},
		{"null value keeps default", "c.yaml", "db_port: ~\n", map[string]any{"db_port": 0}},
		{"alias", "c.yaml", "log_level: &l info\nmail:\n  from_name: *l\n", map[string]any{"log_level": "info", "mail_from_name": "info"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustLoad(t, tt.file, tt.content)
			for k, want := range tt.want {
				if got := get(c, k); got != want {
					t.Errorf("%s = %#v, want %#v", k, got, want)
				}
			}
		})
	}
}

func TestYAMLAndJSONAgree(t *testing.T) {
	t.Parallel()
	yml := `
app_url: https://example.com/svc/
app_prefix: svc//
allow_registration: false
db:
  driver: mysql
  host: db.internal
  port: 3307
max_workers: 4
SVC_AGENT_API: true
SVC_AGENT_API_RATE_LIMIT_MAX: 10
mail:
  driver: smtp
  host: smtp.example.com
  port: 465
  encryption: ssl
  from: svc@example.com
db_password: "0123"
`
	jsn := `{
  "app_url": "https://example.com/svc/",
  "app_prefix": "svc//",
  "allow_registration": false,
  "db": {"driver": "mysql", "host": "db.internal", "port": 3307},
  "max_workers": 4,
  "SVC_AGENT_API": true,
  "SVC_AGENT_API_RATE_LIMIT_MAX": 10,
  "mail": {"driver": "smtp", "host": "smtp.example.com", "port": 465, "encryption": "ssl", "from": "svc@example.com"},
  "db_password": "0123"
}`
	a := mustLoad(t, "config.yaml", yml)
	b := mustLoad(t, "config.json", jsn)
	c := mustLoad(t, "config.yml", yml)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("yaml vs json (-yaml +json):\n%s", diff)
	}
	if diff := cmp.Diff(a, c); diff != "" {
		t.Errorf("yaml vs yml:\n%s", diff)
	}
	if a.AppURL != "https://example.com/svc" || a.AppPrefix != "/svc" || a.DBPort != 3307 || !a.AgentAPI ||
		a.AgentAPIRateLimitMax != 10 || a.DBPassword != "0123" || !a.MailConfigured() {
		t.Errorf("unexpected values: %v", a)
	}
	// A JSON file whose name says YAML is still read (YAML is a superset of JSON).
	d := mustLoad(t, "config.yaml", jsn)
	if diff := cmp.Diff(a, d); diff != "" {
		t.Errorf("json in .yaml:\n%s", diff)
	}
}

func TestFileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, content string
		invalid             bool // a *ValidationError (key problems) rather than a parse error
		want                []string
	}{
		{"unknown key with suggestion", "c.yaml", "db_port: 1\ndb_drvier: mysql\n", true,
			[]string{`line 2`, `unknown key "db_drvier" (line 2, did you mean db_driver?)`}},
		{"unknown keys listed together", "c.yaml", "foo: 1\nbar:\n  baz: 2\n", true,
			[]string{`unknown keys "bar_baz" (line 3), "foo" (line 1)`}},
		{"unknown nested key", "c.yaml", "db:\n  drver: x\n", true, []string{`unknown key "db_drver"`}},
		{"lower-case agent_api is not a key", "c.yaml", "agent_api: true\n", true, []string{`unknown key "agent_api"`}},
		{"env spelling of other keys is not a key", "c.yaml", "SVC_DB_DRIVER: mysql\n", true, []string{`unknown key "SVC_DB_DRIVER"`}},
		{"SVC_AGENT_API only flat", "c.yaml", "SVC:\n  AGENT_API: true\n", true, []string{"line 2: SVC_AGENT_API must be written flat"}},
		{"unknown key json", "c.json", `{"lg_level": "info"}`, true, []string{`config file`, `c.json: unknown key "lg_level" (did you mean log_level?)`}},
		{"string for int", "c.yaml", "db_port: abc\n", true, []string{`c.yaml line 1: db_port: expected an integer, got the string "abc"`}},
		{"float for int", "c.yaml", "max_workers: 1.5\n", true, []string{`max_workers: expected an integer, got the number 1.5`}},
		{"int for string", "c.yaml", "db_password: 0123\n", true, []string{`db_password: expected a string, got the number 83 (quote the value)`}},
		{"string for bool", "c.yaml", "allow_registration: \"yes\"\n", true, []string{`allow_registration: expected true or false, got the string "yes"`}},
		{"list for string", "c.yaml", "db_host:\n  - a\n", true, []string{`db_host: expected a string, got a list`}},
		{"wrong type json", "c.json", "{\n  \"db_port\": \"3306\"\n}", true, []string{`db_port: expected an integer, got the string "3306"`}},
		{"all key problems together", "c.yaml", "db_port: x\nmax_workers: y\nfoo: 1\n", true, []string{"db_port:", "max_workers:", `unknown key "foo"`}},
		{"yaml syntax", "c.yaml", "db_port: 1\n  bad: [\n", false, []string{"c.yaml: line 2"}},
		{"yaml tab", "c.yaml", "db:\n\tdriver: mysql\n", false, []string{"c.yaml: line"}},
		{"yaml duplicate", "c.yaml", "db_port: 1\ndb_port: 2\n", false, []string{"line 2: key db_port is defined twice (lines 1 and 2)"}},
		{"same depth conflict", "c.yaml", "mail_from:\n  name: A\nmail:\n  from_name: B\n", false, []string{"key mail_from_name is defined twice"}},
		{"yaml merge key", "c.yaml", "base: &b\n  x: 1\n<<: *b\n", false, []string{"merge keys (<<) are not supported"}},
		{"yaml two documents", "c.yaml", "db_port: 1\n---\ndb_port: 2\n", false, []string{"only one YAML document"}},
		{"yaml root list", "c.yaml", "- a\n", false, []string{"line 1: the top level must be a mapping"}},
		{"yaml root scalar", "c.yaml", "hello\n", false, []string{"top level must be a mapping"}},
		{"yaml non-scalar key", "c.yaml", "? [a]\n: 1\n", false, []string{"a key must be a plain name"}},
		{"json syntax", "c.json", "{\n  \"db_port\": 1,\n  \"x\" 2\n}", false, []string{"c.json: line 3 column 7"}},
		{"json truncated", "c.json", "{\n  \"db_port\": 1,\n", false, []string{"c.json: line 3", "unexpected end"}},
		{"json trailing data", "c.json", `{"db_port": 1} {}`, false, []string{"unexpected data after the top-level object"}},
		{"json root array", "c.json", `[1]`, false, []string{"top level must be an object"}},
		{"too deep", "c.yaml", strings.Repeat("a:\n", 1) + nest(20), false, []string{"nested more than 16 levels"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(t, tt.file, tt.content)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			var ve *ValidationError
			if got := errors.As(err, &ve); got != tt.invalid {
				t.Errorf("ValidationError = %v, want %v (%v)", got, tt.invalid, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

// nest returns a YAML mapping nested n levels deep.
func nest(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%sk:\n", strings.Repeat(" ", 2*(i+1)))
	}
	fmt.Fprintf(&b, "%sv: 1\n", strings.Repeat(" ", 2*(n+1)))
	return b.String()
}

func TestFileEdgeCases(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, file, content string }{
		{"empty yaml", "c.yaml", ""},
		{"comments only", "c.yaml", "# nothing\n"},
		{"null document", "c.yaml", "~\n"},
		{"empty json", "c.json", "  \n"},
		{"json null", "c.json", "null"},
		{"json empty object", "c.json", "{}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustLoad(t, tt.file, tt.content)
			if diff := cmp.Diff(Defaults(), c); diff != "" {
				t.Errorf("(-defaults +got):\n%s", diff)
			}
		})
	}

	t.Run("directory", func(t *testing.T) {
		t.Parallel()
		_, err := NewLoader([]string{"SVC_CONFIG_FILE=" + t.TempDir()}).Load()
		if err == nil || !strings.Contains(err.Error(), "is a directory") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		t.Parallel()
		_, err := load(t, "c.yaml", "# "+strings.Repeat("x", maxFileSize)+"\n")
		if err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		t.Parallel()
		if os.Geteuid() == 0 {
			t.Skip("root reads everything")
		}
		path := writeFile(t, "c.yaml", "db_port: 1\n")
		if err := os.Chmod(path, 0); err != nil {
			t.Fatal(err)
		}
		_, err := NewLoader([]string{"SVC_CONFIG_FILE=" + path}).Load()
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("default path", func(t *testing.T) {
		t.Parallel()
		if p := NewLoader(nil).Path(); p != "config.yaml" {
			t.Errorf("Path = %q", p)
		}
	})
}

func TestEnvErrors(t *testing.T) {
	t.Parallel()
	_, err := load(t, "", "", "SVC_DB_PORT=abc", "SVC_ALLOW_REGISTRATION=yes", "SVC_LOG_LEVEL=loud")
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a ValidationError", err)
	}
	want := []string{
		`SVC_DB_PORT="abc" is not an integer`,
		`SVC_ALLOW_REGISTRATION="yes" is not a boolean (use true or false)`,
		`log_level "loud" is not supported (use debug, info, warning or error) (from SVC_LOG_LEVEL)`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\ndoes not contain %q", err, w)
		}
	}
	if len(ve.Problems) != len(want) {
		t.Errorf("problems = %q, want %d", ve.Problems, len(want))
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  []string
		want string // "" means valid
	}{
		{"app_env", []string{"SVC_APP_ENV=staging"}, `app_env "staging" is not supported (use development or production) (from SVC_APP_ENV)`},
		{"production needs secret_key", []string{"SVC_APP_ENV=production"}, "secret_key is required when app_env is production"},
		{"production needs app_url", []string{"SVC_APP_ENV=production", "SVC_SECRET_KEY=" + testKey}, "app_url is required when app_env is production"},
		{"production with secret_key and app_url", []string{"SVC_APP_ENV=production", "SVC_SECRET_KEY=" + testKey, "SVC_APP_URL=https://svc.example"}, ""},
		{"http_read_timeout", []string{"SVC_HTTP_READ_TIMEOUT=0"}, "http_read_timeout must be at least 1 (got 0)"},
		{"max_request_bodies", []string{"SVC_MAX_REQUEST_BODIES=-1"}, "max_request_bodies must be at least 1 (got -1)"},
		{"max_request_bodies_per_client", []string{"SVC_MAX_REQUEST_BODIES_PER_CLIENT=0"}, "max_request_bodies_per_client must be at least 1 (got 0)"},
		{"min_body_bytes_per_second", []string{"SVC_MIN_BODY_BYTES_PER_SECOND=-1"}, "min_body_bytes_per_second must not be negative"},
		{"min_body_bytes_per_second off", []string{"SVC_MIN_BODY_BYTES_PER_SECOND=0"}, ""},
		{"trusted_proxies", []string{"SVC_TRUSTED_PROXIES=10.0.0.0/8, 192.168.1.1 ,::1"}, ""},
		{"trusted_proxies bad", []string{"SVC_TRUSTED_PROXIES=10.0.0.0/8,proxy.local"}, `trusted_proxies entry "proxy.local" is neither an IP address nor a CIDR`},
		{"secret_key raw std", []string{"SVC_SECRET_KEY=" + strings.TrimRight(testKey, "=")}, ""},
		{"secret_key url", []string{"SVC_SECRET_KEY=-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_8"}, ""},
		{"secret_key short", []string{"SVC_SECRET_KEY=AQEBAQ=="}, "secret_key must be the base64 encoding of exactly 32 bytes, got 4 bytes"},
		{"secret_key not base64", []string{"SVC_SECRET_KEY=not*base64"}, "secret_key is not valid base64"},
		{"key_path needed without secret_key", []string{"SVC_KEY_PATH="}, "key_path is required when secret_key is not set"},
		{"key_path not needed with secret_key", []string{"SVC_KEY_PATH=", "SVC_SECRET_KEY=" + testKey}, ""},
		{"db_driver", []string{"SVC_DB_DRIVER=oracle"}, `db_driver "oracle" is not supported (use sqlite, mysql, mariadb or postgres)`},
		{"db_sslmode", []string{"SVC_DB_SSLMODE=sometimes"}, `db_sslmode "sometimes" is not supported (use disable, allow, prefer, require, verify-ca or verify-full)`},
		{"db_driver mariadb", []string{"SVC_DB_DRIVER=mariadb"}, ""},
		{"db_port negative", []string{"SVC_DB_PORT=-1"}, "db_port must be between 1 and 65535 (got -1)"},
		{"db_port high", []string{"SVC_DB_PORT=65536"}, "db_port must be between 1 and 65535 (got 65536)"},
		{"db_name empty", []string{"SVC_DB_NAME="}, "db_name is required"},
		{"db_name path", []string{"SVC_DB_NAME=../x"}, `db_name "../x" must not contain`},
		{"db_host for mysql", []string{"SVC_DB_DRIVER=mysql", "SVC_DB_HOST="}, "db_host is required with db_driver mysql"},
		{"db_user colon", []string{"SVC_DB_DRIVER=mysql", "SVC_DB_USER=a:b"}, "db_user must not contain a colon"},
		{"worker_runtime_mode", []string{"SVC_WORKER_RUNTIME_MODE=hybrid"}, `worker_runtime_mode "hybrid" is not supported (use server or client)`},
		{"log_level", []string{"SVC_LOG_LEVEL=warn"}, `log_level "warn" is not supported (use debug, info, warning or error)`},
		{"log_path", []string{"SVC_LOG_PATH="}, "log_path is required (a file path or stdout)"},
		{"sqlite_busy_timeout", []string{"SVC_SQLITE_BUSY_TIMEOUT=-1"}, "sqlite_busy_timeout must not be negative (got -1)"},
		{"tick_lease_seconds", []string{"SVC_TICK_LEASE_SECONDS=-1"}, "tick_lease_seconds must not be negative"},
		{"worker_stale_minutes", []string{"SVC_WORKER_STALE_MINUTES=-1"}, "worker_stale_minutes must not be negative"},
		{"worker_stale_minutes zero", []string{"SVC_WORKER_STALE_MINUTES=0"}, ""},
		{"retention_task_days", []string{"SVC_RETENTION_TASK_DAYS=-1"}, "retention_task_days must not be negative"},
		{"retention_outbox_days over 100 years", []string{"SVC_RETENTION_OUTBOX_DAYS=36501"}, "retention_outbox_days must be at most 36500 days"},
		{"retention_usage_ledger_days zero", []string{"SVC_RETENTION_USAGE_LEDGER_DAYS=0"}, ""},
		{"max_workers", []string{"SVC_MAX_WORKERS=-2"}, "max_workers must not be negative (got -2)"},
		{"db_max_open_conns", []string{"SVC_DB_MAX_OPEN_CONNS=-1"}, "db_max_open_conns must not be negative (got -1)"},
		{"db_max_open_conns", []string{"SVC_DB_MAX_OPEN_CONNS=1001"}, "db_max_open_conns must be at most 1000 (got 1001)"},
		{"llm_timeout", []string{"SVC_LLM_TIMEOUT=-1"}, "llm_timeout must not be negative"},
		{"shutdown_grace_seconds", []string{"SVC_SHUTDOWN_GRACE_SECONDS=0"}, "shutdown_grace_seconds must be at least 1 (got 0)"},
		{"shutdown_grace_seconds ok", []string{"SVC_SHUTDOWN_GRACE_SECONDS=8"}, ""},
		{"llm_retry_after_max_seconds", []string{"SVC_LLM_RETRY_AFTER_MAX_SECONDS=-1"}, "llm_retry_after_max_seconds must not be negative"},
		{"tool_http_timeout", []string{"SVC_TOOL_HTTP_TIMEOUT=-1"}, "tool_http_timeout must not be negative"},
		{"llm_allowed_hosts", []string{"SVC_LLM_ALLOWED_HOSTS=localhost, 10.0.0.0/33"}, `llm_allowed_hosts: "10.0.0.0/33" is not a network in CIDR notation`},
		{"llm_allowed_hosts ok", []string{"SVC_LLM_ALLOWED_HOSTS=localhost 10.0.0.0/8,ollama.lan"}, ""},
		{"mail_allowed_hosts", []string{"SVC_MAIL_ALLOWED_HOSTS=relay.lan, 10.0.0.0/33"}, `mail_allowed_hosts: "10.0.0.0/33" is not a network in CIDR notation`},
		{"mail_allowed_hosts ok", []string{"SVC_MAIL_ALLOWED_HOSTS=localhost 10.0.0.0/8,relay.lan"}, ""},
		{"rate limit", []string{"SVC_AGENT_API_RATE_LIMIT_MAX=-1"}, "SVC_AGENT_API_RATE_LIMIT_MAX must not be negative"},
		{"plugin_catalog_ttl", []string{"SVC_PLUGIN_CATALOG_TTL=-1"}, "plugin_catalog_ttl must not be negative"},
		{"mcp_max_processes_per_server", []string{"SVC_MCP_MAX_PROCESSES_PER_SERVER=0"}, "mcp_max_processes_per_server must be at least 1 (got 0)"},
		{"mcp_max_processes", []string{"SVC_MCP_MAX_PROCESSES=-3"}, "mcp_max_processes must be at least 1 (got -3)"},
		{"mcp_idle_seconds", []string{"SVC_MCP_IDLE_SECONDS=0"}, "mcp_idle_seconds must be at least 1 (got 0)"},
		{"mcp limits ok", []string{"SVC_MCP_MAX_PROCESSES_PER_SERVER=1", "SVC_MCP_MAX_PROCESSES=1", "SVC_MCP_IDLE_SECONDS=1"}, ""},
		{"plugin_catalog_url plain http", []string{"SVC_PLUGIN_CATALOG_URL=http://catalog.example/index.json"}, `plugin_catalog_url "http://catalog.example/index.json" must use https (plain http only on a loopback host`},
		{"plugin_catalog_url loopback http", []string{"SVC_PLUGIN_CATALOG_URL=http://127.0.0.1:8081/index.json"}, ""},
		{"plugin_catalog_url localhost http", []string{"SVC_PLUGIN_CATALOG_URL=http://localhost:8081/index.json"}, ""},
		{"plugin_catalog_url https", []string{"SVC_PLUGIN_CATALOG_URL=https://catalog.example/index.json"}, ""},
		{"plugin_catalog_public_key short", []string{"SVC_PLUGIN_CATALOG_PUBLIC_KEY=AAAA"}, "plugin_catalog_public_key must be a 32-byte ed25519 public key"},
		{"plugin_catalog_public_key base64", []string{"SVC_PLUGIN_CATALOG_PUBLIC_KEY=" + base64.StdEncoding.EncodeToString(make([]byte, 32))}, ""},
		{"plugin_catalog_public_key hex", []string{"SVC_PLUGIN_CATALOG_PUBLIC_KEY=" + strings.Repeat("ab", 32)}, ""},
		{"app_url relative", []string{"SVC_APP_URL=/svc"}, `app_url "/svc" must be an absolute http:// or https:// URL`},
		{"app_url scheme", []string{"SVC_APP_URL=ftp://example.com"}, `app_url "ftp://example.com" must be an absolute http:// or https:// URL`},
		{"app_url no host", []string{"SVC_APP_URL=http://"}, "must be an absolute http:// or https:// URL"},
		{"app_url query", []string{"SVC_APP_URL=https://example.com/?a=1"}, "must not have a query or fragment"},
		{"app_url credentials", []string{"SVC_APP_URL=https://u:pw@example.com"}, "app_url must not contain credentials"},
		{"app_url ok", []string{"SVC_APP_URL=https://example.com:8443/sub/"}, ""},
		{"app_prefix dots", []string{"SVC_APP_PREFIX=/a/../b"}, `app_prefix "/a/../b" must not contain . or .. segments`},
		{"app_prefix query", []string{"SVC_APP_PREFIX=/a?b"}, `app_prefix "/a?b" must be a plain path`},
		{"app_prefix space", []string{"SVC_APP_PREFIX=/a b"}, "must be a plain path"},
		{"mercure_url", []string{"SVC_MERCURE_URL=hub", "SVC_MERCURE_JWT_KEY=k"}, `mercure_url "hub" must be an absolute http:// or https:// URL`},
		{"mercure_publish_url", []string{"SVC_MERCURE_PUBLISH_URL=hub"}, `mercure_publish_url "hub" must be an absolute`},
		{"mercure_jwt_key", []string{"SVC_MERCURE_URL=https://hub.example/.well-known/mercure"}, "mercure_jwt_key is required when mercure_url is set"},
		{"mail_driver", []string{"SVC_MAIL_DRIVER=smpt"}, `mail_driver "smpt" is not supported (use smtp, none or "")`},
		{"mail_port", []string{"SVC_MAIL_PORT=0"}, "mail_port must be between 1 and 65535 (got 0)"},
		{"mail_port high", []string{"SVC_MAIL_PORT=70000"}, "mail_port must be between 1 and 65535"},
		{"mail_encryption", []string{"SVC_MAIL_ENCRYPTION=starttls"}, `mail_encryption "starttls" is not supported (use tls, ssl, none or "")`},
		{"ssl on 587", []string{"SVC_MAIL_ENCRYPTION=ssl", "SVC_MAIL_PORT=587"}, "mail_encryption ssl cannot be used with mail_port 587"},
		{"ssl on 465", []string{"SVC_MAIL_ENCRYPTION=ssl", "SVC_MAIL_PORT=465"}, ""},
		{"tls on 587", []string{"SVC_MAIL_ENCRYPTION=TLS"}, ""},
		{"mail_host scheme", []string{"SVC_MAIL_HOST=smtp://mail.example.com"}, `mail_host "smtp://mail.example.com" must be a host name only`},
		{"mail_host port", []string{"SVC_MAIL_HOST=mail.example.com:25"}, "must be a host name only"},
		{"mail_host path", []string{"SVC_MAIL_HOST=mail.example.com/x"}, "must be a host name only"},
		{"mail_host ip", []string{"SVC_MAIL_HOST=127.0.0.1"}, ""},
		{"mail_host ipv6", []string{"SVC_MAIL_HOST=::1"}, ""},
		{"mail_from", []string{"SVC_MAIL_FROM=not an address"}, `mail_from "not an address" is not a valid email address`},
		{"smtp needs host and from", []string{"SVC_MAIL_DRIVER=smtp"}, "mail_host is required when mail_driver is smtp; mail_from is required when mail_driver is smtp"},
		{"smtp complete", []string{"SVC_MAIL_DRIVER=smtp", "SVC_MAIL_HOST=localhost", "SVC_MAIL_FROM=Svc <svc@example.com>"}, ""},
		{"llm_driver", []string{"SVC_LLM_DRIVER=gemini"}, `llm_driver "gemini" is not supported (use openai, anthropic or scripted)`},
		{"llm_driver ok", []string{"SVC_LLM_DRIVER=anthropic", "SVC_LLM_MODEL=claude-x"}, ""},
		{"llm_driver without model", []string{"SVC_LLM_DRIVER=openai"}, "llm_model is required when llm_driver is set"},
		{"llm_model without driver", []string{"SVC_LLM_MODEL=gpt-x"}, "llm_driver is required when llm_model is set"},
		{"llm scripted path", []string{"SVC_LLM_DRIVER=scripted", "SVC_LLM_MODEL=demo", "SVC_LLM_BASE_URL=scripts/demo.json"}, ""},
		{"llm scripted url", []string{"SVC_LLM_DRIVER=scripted", "SVC_LLM_MODEL=demo", "SVC_LLM_BASE_URL=http://x/y"}, "must be a relative path inside the working directory"},
		{"llm scripted outside", []string{"SVC_LLM_DRIVER=scripted", "SVC_LLM_MODEL=demo", "SVC_LLM_BASE_URL=../demo.json"}, "must be a relative path inside the working directory"},
		{"llm scripted no path", []string{"SVC_LLM_DRIVER=scripted", "SVC_LLM_MODEL=demo"}, "llm_base_url (the script path) is required"},
		{"llm_base_url", []string{"SVC_LLM_BASE_URL=localhost:11434"}, `llm_base_url "localhost:11434" must be an absolute`},
		{"listen", []string{"SVC_LISTEN=8080"}, `listen "8080" must be a host:port address such as :8080 (from SVC_LISTEN)`},
		{"SERVER_NAME", []string{"SERVER_NAME=localhost"}, `listen "localhost" must be a host:port address such as :8080 (from SERVER_NAME)`},
		{"metrics_token short", []string{"SVC_METRICS_TOKEN=short"}, "metrics_token must be at least 16 characters"},
		{"metrics_token space", []string{"SVC_METRICS_TOKEN=0123456789 abcdefgh"}, "metrics_token must be printable ASCII without spaces"},
		{"metrics_token ok", []string{"SVC_METRICS_TOKEN=0123456789abcdefgh"}, ""},
		{"metrics_listen", []string{"SVC_METRICS_LISTEN=9090"}, `metrics_listen "9090" must be a host:port address`},
		{"metrics_listen same", []string{"SVC_METRICS_LISTEN=:8080"}, "metrics_listen must differ from listen"},
		{"metrics_listen ok", []string{"SVC_METRICS_LISTEN=127.0.0.1:9090"}, ""},
		{"worker_health_listen", []string{"SVC_WORKER_HEALTH_LISTEN=9091"}, `worker_health_listen "9091" must be a host:port address`},
		{"worker_health_listen same", []string{"SVC_METRICS_LISTEN=127.0.0.1:9090", "SVC_WORKER_HEALTH_LISTEN=127.0.0.1:9090"}, "worker_health_listen must differ from metrics_listen"},
		{"worker_health_listen ok", []string{"SVC_WORKER_HEALTH_LISTEN=127.0.0.1:9091"}, ""},
		{"otel_endpoint", []string{"SVC_OTEL_ENDPOINT=collector:4318"}, `otel_endpoint "collector:4318" must be an absolute http:// or https:// URL`},
		{"otel_service_name", []string{"SVC_OTEL_ENDPOINT=http://127.0.0.1:4318", "SVC_OTEL_SERVICE_NAME="}, "otel_service_name is required when otel_endpoint is set"},
		{"otel ok", []string{"SVC_OTEL_ENDPOINT=http://127.0.0.1:4318"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(t, "", "", tt.env...)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && err == nil:
				t.Errorf("no error, want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q\ndoes not contain %q", err, tt.want)
			}
		})
	}
}

func TestValidationCollectsEverything(t *testing.T) {
	t.Parallel()
	_, err := load(t, "config.yaml", "db_driver: oracle\nlog_level: loud\n",
		"SVC_APP_ENV=production", "SVC_DB_PORT=-1", "SVC_MAIL_ENCRYPTION=ssl")
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	if !strings.HasPrefix(err.Error(), "invalid configuration: ") {
		t.Errorf("message %q", err)
	}
	if len(ve.Problems) != 6 {
		t.Errorf("%d problems, want 6: %q", len(ve.Problems), ve.Problems)
	}
	if !strings.Contains(err.Error(), `db_driver "oracle" is not supported (use sqlite, mysql, mariadb or postgres) (from config file `) ||
		!strings.Contains(err.Error(), "config.yaml line 1)") {
		t.Errorf("origin of a file value missing: %q", err)
	}
}

func TestNormalisePrefix(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", ""},
		{"/", ""},
		{"//", ""},
		{"  /  ", ""},
		{"svc", "/svc"},
		{"/svc", "/svc"},
		{"/svc/", "/svc"},
		{"svc/", "/svc"},
		{"//svc//", "/svc"},
		{" /svc ", "/svc"},
		{"/a//b///c/", "/a/b/c"},
		{"a/b", "/a/b"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			if got := NormalisePrefix(tt.in); got != tt.want {
				t.Errorf("NormalisePrefix(%q) = %q, want %q", tt.in, got, tt.want)
			}
			c := mustLoad(t, "", "", "SVC_APP_PREFIX="+tt.in)
			if c.AppPrefix != tt.want {
				t.Errorf("loaded app_prefix %q, want %q", c.AppPrefix, tt.want)
			}
		})
	}
}

func TestAppURLNormalised(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://example.com/":      "https://example.com",
		"https://example.com/svc//": "https://example.com/svc",
		" http://host:8080/svc ":    "http://host:8080/svc",
		"":                          "",
	} {
		c := mustLoad(t, "", "", "SVC_APP_URL="+in)
		if c.AppURL != want {
			t.Errorf("app_url %q → %q, want %q", in, c.AppURL, want)
		}
	}
}

// secretConfig has every secret set to a recognisable value.
func secretConfig(t *testing.T) *Config {
	t.Helper()
	return mustLoad(t, "", "",
		"SVC_SECRET_KEY="+testKey,
		"SVC_DB_PASSWORD=dbpass-hunter2",
		"SVC_MAIL_PASSWORD=mailpass-hunter2",
		"SVC_MERCURE_URL=https://hub.example/.well-known/mercure",
		"SVC_MERCURE_JWT_KEY=jwt-hunter2",
		"SVC_LLM_API_KEY=sk-hunter2",
		"SVC_METRICS_TOKEN=metrics-token-hunter2",
	)
}

func assertNoSecret(t *testing.T, what, s string) {
	t.Helper()
	for _, secret := range []string{testKey, "hunter2", "AQEBAQEB"} {
		if strings.Contains(s, secret) {
			t.Errorf("%s leaks %q: %s", what, secret, s)
		}
	}
}

func TestRedaction(t *testing.T) {
	t.Parallel()
	c := secretConfig(t)
	if c.DBPassword != "dbpass-hunter2" || c.SecretKey != testKey {
		t.Fatal("secrets not loaded")
	}
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	logger.Info("config", "value", *c, "pointer", c)
	textBuf := &bytes.Buffer{}
	slog.New(slog.NewTextHandler(textBuf, nil)).Info("config", "c", c)
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	jsv, _ := json.Marshal(*c)
	outputs := map[string]string{
		"String":      c.String(),
		"%v pointer":  fmt.Sprintf("%v", c),
		"%v value":    fmt.Sprintf("%v", *c),
		"%+v pointer": fmt.Sprintf("%+v", c),
		"%+v value":   fmt.Sprintf("%+v", *c),
		"%#v value":   fmt.Sprintf("%#v", *c),
		//lint:ignore S1025 the %s verb itself is under test
		"%s pointer": fmt.Sprintf("%s", c),
		"slog json":  buf.String(),
		"slog text":  textBuf.String(),
		"json":       string(js),
		"json value": string(jsv),
	}
	for what, out := range outputs {
		assertNoSecret(t, what, out)
		if !strings.Contains(out, "REDACTED") {
			t.Errorf("%s does not show redaction: %s", what, out)
		}
		if !strings.Contains(out, "hub.example") {
			t.Errorf("%s lost non-secret values: %s", what, out)
		}
	}
	if !strings.Contains(c.String(), `mail_password="[REDACTED]"`) || !strings.Contains(c.String(), "db_port=0") {
		t.Errorf("String = %s", c)
	}
	// Unset secrets stay visibly unset.
	if !strings.Contains(Defaults().String(), `secret_key=""`) {
		t.Errorf("unset secret shown as %s", Defaults())
	}
}

func TestErrorsDoNotLeakSecrets(t *testing.T) {
	t.Parallel()
	for _, env := range [][]string{
		{"SVC_SECRET_KEY=c2hvcnQtU0VDUkVU"}, // base64 of "short-SECRET"
		{"SVC_SECRET_KEY=hunter2*not*base64"},
		{"SVC_APP_URL=https://user:hunter2@example.com"},
		{"SVC_MERCURE_URL=ftp://user:hunter2@example.com", "SVC_MERCURE_JWT_KEY=k"},
	} {
		_, err := load(t, "", "", env...)
		if err == nil {
			t.Errorf("%v: no error", env)
			continue
		}
		assertNoSecret(t, fmt.Sprint(env), err.Error())
		if strings.Contains(err.Error(), "c2hvcnQtU0VDUkVU") {
			t.Errorf("error leaks the key: %v", err)
		}
	}
}

func TestPublic(t *testing.T) {
	t.Parallel()
	c := secretConfig(t)
	got := c.Public()
	want := map[string]any{
		"agent_api":                   false,
		"plugin_install_enabled":      false,
		"plugin_catalog_enabled":      true,
		"worker_runtime_mode":         "server",
		"allow_registration":          true,
		"push":                        "mercure",
		"app_prefix":                  "/svc",
		"notifications_email_enabled": true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Public (-want +got):\n%s", diff)
	}
	js, _ := json.Marshal(got)
	assertNoSecret(t, "Public", string(js))

	d := mustLoad(t, "", "", "SVC_AGENT_API=1", "SVC_APP_PREFIX=/", "SVC_WORKER_RUNTIME_MODE=client")
	p := d.Public()
	if p["push"] != "embedded" || p["agent_api"] != true || p["app_prefix"] != "" || p["worker_runtime_mode"] != "client" {
		t.Errorf("Public = %v", p)
	}
}

func TestHelpers(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, "", "", "SVC_DB_NAME=agents")
	if got := c.SQLitePath(); got != filepath.Join("storage", "agents.sqlite") {
		t.Errorf("SQLitePath = %q", got)
	}

	for _, tt := range []struct {
		name string
		env  []string
		addr string
	}{
		{"plain", []string{"SVC_DB_PASSWORD=p@ss:w/rd?x&y=z)"}, "db.internal:3307"},
		{"no password", nil, "db.internal:3307"},
		{"ipv6", []string{"SVC_DB_HOST=::1"}, "[::1]:3307"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := append([]string{"SVC_DB_DRIVER=mysql", "SVC_DB_HOST=db.internal", "SVC_DB_PORT=3307", "SVC_DB_USER=u", "SVC_DB_NAME=d"}, tt.env...)
			c := mustLoad(t, "", "", env...)
			dsn := c.MySQLDSN()
			for _, p := range []string{"parseTime=true", "charset=utf8mb4", "loc=UTC", "multiStatements=true"} {
				if !strings.Contains(dsn, p) {
					t.Errorf("DSN lacks %s", p)
				}
			}
			mc, err := mysql.ParseDSN(dsn)
			if err != nil {
				t.Fatalf("ParseDSN: %v", err)
			}
			if mc.User != "u" || mc.Passwd != c.DBPassword || mc.Net != "tcp" || mc.Addr != tt.addr || mc.DBName != "d" ||
				!mc.ParseTime || !mc.MultiStatements || mc.Loc != time.UTC {
				t.Errorf("ParseDSN = %+v", mc)
			}
		})
	}

	// PostgreSQL: the driver's port when db_port is unset, the password escaped, db_sslmode.
	pg := mustLoad(t, "", "", "SVC_DB_DRIVER=postgres", "SVC_DB_HOST=db.internal", "SVC_DB_USER=u",
		"SVC_DB_PASSWORD=p@ss:w/rd?x", "SVC_DB_NAME=d", "SVC_DB_SSLMODE=Require")
	pcfg, err := pgx.ParseConfig(pg.PostgresDSN())
	if err != nil {
		t.Fatalf("pgx.ParseConfig: %v", err)
	}
	if pcfg.Host != "db.internal" || pcfg.Port != 5432 || pcfg.User != "u" || pcfg.Password != "p@ss:w/rd?x" || pcfg.Database != "d" {
		t.Errorf("PostgresDSN parses as %s:%d user %q password %q db %q", pcfg.Host, pcfg.Port, pcfg.User, pcfg.Password, pcfg.Database)
	}
	if !strings.Contains(pg.PostgresDSN(), "sslmode=require") {
		t.Errorf("PostgresDSN lacks sslmode=require")
	}
	if my := mustLoad(t, "", "", "SVC_DB_DRIVER=mysql"); my.DBAddr() != "127.0.0.1:3306" {
		t.Errorf("MySQL DBAddr without db_port = %q", my.DBAddr())
	}

	p := mustLoad(t, "", "", "SVC_APP_ENV=production", "SVC_SECRET_KEY="+testKey, "SVC_APP_URL=https://svc.example")
	if !p.IsProduction() {
		t.Error("IsProduction false")
	}
	m := mustLoad(t, "", "", "SVC_MAIL_DRIVER=smtp", "SVC_MAIL_HOST=localhost", "SVC_MAIL_FROM=a@example.com")
	if !m.MailConfigured() {
		t.Error("MailConfigured false")
	}
	if n := mustLoad(t, "", "", "SVC_MAIL_DRIVER=none"); n.MailConfigured() {
		t.Error("MailConfigured true for none")
	}
}

func TestFileKeysAndStorable(t *testing.T) {
	t.Parallel()
	keys := FileKeys()
	if len(keys) != len(fields) || keys[0] > keys[len(keys)-1] {
		t.Errorf("FileKeys = %v", keys)
	}
	for key, want := range map[string]bool{
		"log_level": true, "SVC_AGENT_API": true, "mail_password": true,
		"secret_key": false, "key_path": false, "db_driver": false, "db_password": false, "listen": false,
		"sqlite_busy_timeout": false, "nope": false,
	} {
		if got := Storable(key); got != want {
			t.Errorf("Storable(%s) = %v", key, got)
		}
	}
}

func TestNewLogger(t *testing.T) {
	t.Parallel()
	levels := []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError}
	for _, tt := range []struct {
		level   string
		lowest  slog.Level
		wantLvl slog.Level
	}{
		{"debug", slog.LevelDebug, slog.LevelDebug},
		{"info", slog.LevelInfo, slog.LevelInfo},
		{"warning", slog.LevelWarn, slog.LevelWarn},
		{"error", slog.LevelError, slog.LevelError},
	} {
		t.Run(tt.level, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "nested", "deeper", "svc.log")
			c := mustLoad(t, "", "", "SVC_LOG_LEVEL="+tt.level, "SVC_LOG_PATH="+path)
			if c.Level() != tt.wantLvl {
				t.Errorf("Level = %v", c.Level())
			}
			logger, closer, err := NewLogger(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range levels {
				if got := logger.Enabled(context.Background(), l); got != (l >= tt.lowest) {
					t.Errorf("Enabled(%v) = %v", l, got)
				}
			}
			logger.Error("first", "n", 1)
			if err := closer.Close(); err != nil {
				t.Fatal(err)
			}
			// A second logger appends.
			logger, closer, err = NewLogger(c)
			if err != nil {
				t.Fatal(err)
			}
			logger.Error("second")
			closer.Close()
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(lines) != 2 {
				t.Fatalf("log file:\n%s", data)
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || rec["msg"] != "first" || rec["level"] != "ERROR" {
				t.Errorf("record %s (%v)", lines[0], err)
			}
		})
	}

	t.Run("stdout", func(t *testing.T) {
		t.Parallel()
		c := mustLoad(t, "", "", "SVC_LOG_PATH=stdout", "SVC_LOG_LEVEL=info")
		logger, closer, err := NewLogger(c)
		if err != nil {
			t.Fatal(err)
		}
		if !logger.Enabled(context.Background(), slog.LevelInfo) || logger.Enabled(context.Background(), slog.LevelDebug) {
			t.Error("wrong level")
		}
		if err := closer.Close(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat("stdout"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a file named stdout was created: %v", err)
		}
	})

	t.Run("unwritable", func(t *testing.T) {
		t.Parallel()
		blocker := writeFile(t, "file", "")
		c := Defaults()
		c.LogPath = filepath.Join(blocker, "svc.log")
		if _, _, err := NewLogger(c); err == nil {
			t.Error("no error for a log path under a file")
		}
	})
}

// TestPublicBase: links never come from a request; without app_url (development) they come from
// the listen address.
func TestPublicBase(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		env  []string
		want string
	}{
		{nil, "http://localhost:8080/svc"},
		{[]string{"SVC_LISTEN=0.0.0.0:9000", "SVC_APP_PREFIX="}, "http://localhost:9000"},
		{[]string{"SVC_LISTEN=[::]:9000"}, "http://localhost:9000/svc"},
		{[]string{"SVC_LISTEN=127.0.0.1:9000"}, "http://127.0.0.1:9000/svc"},
		{[]string{"SVC_LISTEN=[::1]:9000"}, "http://[::1]:9000/svc"},
		{[]string{"SVC_APP_URL=https://svc.example/base/"}, "https://svc.example/base"},
	} {
		if got := mustLoad(t, "", "", tt.env...).PublicBase(); got != tt.want {
			t.Errorf("%v: PublicBase = %q, want %q", tt.env, got, tt.want)
		}
	}
}

func TestTrustedProxyList(t *testing.T) {
	t.Parallel()
	if got := mustLoad(t, "", "").TrustedProxyList(); got != nil {
		t.Errorf("default trusts %v", got)
	}
	got := mustLoad(t, "", "", "SVC_TRUSTED_PROXIES= 10.0.0.0/8,,192.168.1.1 ").TrustedProxyList()
	if !slices.Equal(got, []string{"10.0.0.0/8", "192.168.1.1"}) {
		t.Errorf("TrustedProxyList = %q", got)
	}
}
