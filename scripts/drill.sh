#!/usr/bin/env bash
# The multi-instance drill (issue 14; docs/benchmarks.md "Multi-instance drill"): builds bin/svc
# and the Mercure hub (cached), then runs scripts/drill: a throwaway database on the MariaDB/MySQL
# server of SVC_TEST_MYSQL_DSN (default root@tcp(127.0.0.1:3306)/test) or, with `-db postgres`
# (or SVC_DRILL_DB=postgres), on the PostgreSQL server of SVC_TEST_POSTGRES_DSN (default
# postgres://postgres@127.0.0.1:5432/test?sslmode=disable), 2 × `svc serve
# --api-only` + 2 × `svc worker`, N tasks with a tool call each, one worker killed (SIGKILL) and
# restarted mid-way. Exit status 1 on any lost task, double-executed call or missed event.
#   scripts/drill.sh            # N=10000
#   scripts/drill.sh -db postgres -n 1000   # the same guarantees on PostgreSQL
#   scripts/drill.sh -n 300     # CI; any flag of scripts/drill (-keep, -workdir DIR, -kill-at 0.3 …)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
mkdir -p bin
go build -o bin/svc ./cmd/svc
hub="${SVC_TEST_MERCURE_BIN:-$(scripts/mercure-build.sh)}"
go build -o bin/drill ./scripts/drill
exec bin/drill -svc bin/svc -mercure "$hub" "$@"
