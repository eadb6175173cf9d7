package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/agentsvc/svc/store"
)

// createPostgresSchema creates the schema svc_t_<random> in the database of dsn, schedules its
// removal and returns a DSN whose connections work in it (search_path): a schema is much
// cheaper to create and drop than a database, and the store's tables, indexes and migration lock
// are all per schema.
func createPostgresSchema(t testing.TB, dsn string) string {
	t.Helper()
	name := "svc_t_" + randomHex(6)
	pgAdmin(t, dsn, "CREATE SCHEMA "+name)
	t.Cleanup(func() { pgAdminCleanup(t, dsn, "DROP SCHEMA IF EXISTS "+name+" CASCADE") })
	return withPostgresParam(t, dsn, "search_path", name)
}

// PostgresDatabase creates a throwaway database on the server of dsn (dropped when the test
// ends) and returns where it is, for a test that hands the database to another process through
// the service's settings (db_host, db_port, db_name, db_user, db_password).
func PostgresDatabase(t testing.TB, dsn string) (host string, port int, name, user, password string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("storetest: %s: %v", EnvPostgresDSN, err)
	}
	name = "svc_t_" + randomHex(6)
	pgAdmin(t, dsn, "CREATE DATABASE "+name)
	t.Cleanup(func() { pgAdminCleanup(t, dsn, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	return cfg.Host, int(cfg.Port), name, cfg.User, cfg.Password
}

// PostgresDatabaseDSN is PostgresDatabase's database as a DSN.
func PostgresDatabaseDSN(t testing.TB, dsn string) string {
	t.Helper()
	host, port, name, user, password := PostgresDatabase(t, dsn)
	u := url.URL{Scheme: "postgres", Host: host + ":" + strconv.Itoa(port), Path: "/" + name}
	if password != "" {
		u.User = url.UserPassword(user, password)
	} else {
		u.User = url.User(user)
	}
	if q := postgresQuery(t, dsn); q != "" {
		u.RawQuery = q
	}
	return u.String()
}

// postgresQuery is the sslmode of dsn as a query string ("" when dsn has none).
func postgresQuery(t testing.TB, dsn string) string {
	t.Helper()
	if !strings.Contains(dsn, "://") {
		return ""
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("storetest: %s: %v", EnvPostgresDSN, err)
	}
	if m := u.Query().Get("sslmode"); m != "" {
		return "sslmode=" + url.QueryEscape(m)
	}
	return ""
}

// withPostgresParam sets a connection parameter of dsn (URL or key=value form).
func withPostgresParam(t testing.TB, dsn, key, value string) string {
	t.Helper()
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("storetest: %s: %v", EnvPostgresDSN, err)
		}
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " " + key + "=" + value
}

func pgAdmin(t testing.TB, dsn, stmt string) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("storetest: connect to PostgreSQL: %v", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(context.Background(), stmt); err != nil {
		t.Fatalf("storetest: %s: %v", stmt, err)
	}
}

func pgAdminCleanup(t testing.TB, dsn, stmt string) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Errorf("storetest: connect to PostgreSQL: %v", err)
		return
	}
	defer db.Close()
	// Two tests dropping their schemas at once can deadlock on the catalog (SQLSTATE 40P01,
	// seen under load): the victim tries again.
	for attempt := 1; ; attempt++ {
		_, err := db.ExecContext(context.Background(), stmt)
		if err == nil {
			return
		}
		if attempt == 5 || !strings.Contains(err.Error(), "40P01") {
			t.Errorf("storetest: %s: %v", stmt, err)
			return
		}
		time.Sleep(time.Duration(attempt*50) * time.Millisecond)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// KillWakeListeners ends, on the server, every connection LISTENing on the wake channel of s
// (pg_terminate_backend), as a failover or an administrator would, and returns how many it
// ended. The test's own schema names the channel, so parallel tests are untouched.
func KillWakeListeners(t testing.TB, s *store.Store) int {
	t.Helper()
	db, err := sql.Open("pgx", os.Getenv(EnvPostgresDSN))
	if err != nil {
		t.Fatalf("storetest: connect to PostgreSQL: %v", err)
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name LIKE 'svc-wake %' AND query = $1`, "LISTEN "+pgx.Identifier{s.WakeChannel()}.Sanitize()).Scan(&n)
	if err != nil {
		t.Fatalf("storetest: end the wake listeners: %v", err)
	}
	return n
}
