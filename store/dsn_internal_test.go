package store

import (
	"errors"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// TestMySQLDSNForcesWhatTheStoreNeeds: whatever the administrator's DSN says, the store's
// connections parse times in UTC, count matched rows, and take multi-statement texts with
// their arguments written in by the driver (a step's held writes, blindwrite.go), on utf8mb4;
// an empty or malformed DSN is refused as invalid.
func TestMySQLDSNForcesWhatTheStoreNeeds(t *testing.T) {
	out, err := mysqlDSN("svc:pw@tcp(127.0.0.1:3306)/svc?parseTime=false&interpolateParams=false&multiStatements=false&collation=latin1_swedish_ci")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := gomysql.ParseDSN(out)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.ParseTime || cfg.Loc != time.UTC || !cfg.ClientFoundRows || !cfg.MultiStatements || !cfg.InterpolateParams ||
		cfg.Collation != "utf8mb4_unicode_ci" || cfg.User != "svc" || cfg.DBName != "svc" {
		t.Fatalf("DSN %q parses as %+v", out, cfg)
	}
	for _, bad := range []string{"", "svc@tcp(127.0.0.1:3306)", "svc@tcp(127.0.0.1:3306)/svc?timeTruncate=soon"} {
		if _, err := mysqlDSN(bad); !errors.Is(err, svcerr.ErrInvalid) {
			t.Errorf("mysqlDSN(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

// TestPreparableRefusesSeveralStatements: a text of several statements (MySQL's held writes)
// is never prepared, which MySQL would refuse; a data statement is.
func TestPreparableRefusesSeveralStatements(t *testing.T) {
	if !preparable("INSERT INTO t (a) VALUES (?)") || !preparable(" (SELECT 1)") {
		t.Fatal("a data statement is not preparable")
	}
	for _, q := range []string{"INSERT INTO t (a) VALUES (?); INSERT INTO u (b) VALUES (?)", "UPDATE t SET a = 1;", "PRAGMA x", "SET a = 1"} {
		if preparable(q) {
			t.Errorf("preparable(%q) = true", q)
		}
	}
}
