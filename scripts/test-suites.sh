#!/usr/bin/env bash
# The Go tests on every database CI has: SQLite with the race detector over every package but the
# server's end-to-end tests (which run without it beside the next ones), then
# each server database named by its DSN variable (SVC_TEST_MYSQL_DSN, SVC_TEST_POSTGRES_DSN) at
# once, without it, one package at a time, over the packages whose tests reach a database (those
# that import store/storetest), and with SVC_E2E=1 the console's browser tests (make e2e) beside
# them. The race detector watches Go code, which is the same on every dialect,
# so one raced run is enough and the others run at their natural speed; see docs/decisions.md
# ("CI runs the database suites at once").
#
# Each suite writes to its own log; a suite's log is printed when it ends, with its time, and
# the script fails when any suite failed.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
logs=$(mktemp -d /tmp/svc-suites.XXXXXX)

# Packages whose tests open a database: those importing store/storetest, directly or not, and
# those whose tests read a DSN variable themselves (the binary's and the benchmark's).
db_packages() {
  local p dir
  while read -r p dir; do
    if $GO list -test -deps "$p" 2>/dev/null | grep -qx 'github.com/agentsvc/svc/store/storetest' ||
      grep -qs 'SVC_TEST_MYSQL_DSN\|SVC_TEST_POSTGRES_DSN' "$dir"/*_test.go; then
      echo "$p"
    fi
  done < <($GO list -f '{{.ImportPath}} {{.Dir}}' ./...)
}

names=() pids=()
run_suite() { # name, then the command; the suite's own time goes to $logs/<name>.secs
  local name=$1; shift
  names+=("$name")
  (start=$(date +%s); "$@" >"$logs/$name.log" 2>&1; rc=$?
   echo $(( $(date +%s) - start )) >"$logs/$name.secs"; echo $rc >"$logs/$name.rc"; exit $rc) &
  pids+=($!)
}

# SQLite with the race detector first, alone: it runs two packages at once (-p 2) and its
# timing-sensitive drills must not share the two cores with other suites. The server package's
# end-to-end tests are the exception: raced they took over 8 of CI's 20 minutes (every HTTP
# handler, stream and daemon instrumented, 4.6 GB), so they run without it beside the server
# databases below; the concurrency they drive lives in the packages raced here (store, agentloop,
# internal/jobs, internal/platform, plugins), each with its own concurrent tests.
mapfile -t all < <($GO list ./...)
raced=()
for p in "${all[@]}"; do [ "$p" = github.com/agentsvc/svc/server ] || raced+=("$p"); done
run_suite sqlite-race env -u SVC_TEST_MYSQL_DSN -u SVC_TEST_POSTGRES_DSN $GO test -race -count=1 -timeout 30m "${raced[@]}"
wait "${pids[0]}"
run_suite sqlite-server env -u SVC_TEST_MYSQL_DSN -u SVC_TEST_POSTGRES_DSN $GO test -count=1 -timeout 30m ./server/
if [ -n "${SVC_TEST_MYSQL_DSN:-}" ] || [ -n "${SVC_TEST_POSTGRES_DSN:-}" ]; then
  mapfile -t pkgs < <(db_packages)
fi
if [ -n "${SVC_TEST_MYSQL_DSN:-}" ]; then
  run_suite mariadb env -u SVC_TEST_POSTGRES_DSN $GO test -count=1 -timeout 30m -p 1 "${pkgs[@]}"
fi
# The PostgreSQL suite first vacuums its database's catalogs: the machines' server runs with
# autovacuum off, so every schema that tests create and drop leaves dead catalog rows behind
# (after a day of runs 400,000 in pg_class, 2 million in pg_attribute), which every new
# connection and DDL statement of the suite then reads through.
postgres_suite() {
  if command -v psql >/dev/null; then
    psql "$SVC_TEST_POSTGRES_DSN" -qc 'VACUUM pg_catalog.pg_class, pg_catalog.pg_attribute,
      pg_catalog.pg_attrdef, pg_catalog.pg_constraint, pg_catalog.pg_depend, pg_catalog.pg_index,
      pg_catalog.pg_namespace, pg_catalog.pg_sequence, pg_catalog.pg_trigger, pg_catalog.pg_type' ||
      echo "vacuuming the catalogs failed; the suite runs on"
  fi
  env -u SVC_TEST_MYSQL_DSN $GO test -count=1 -timeout 30m -p 1 "${pkgs[@]}"
}
if [ -n "${SVC_TEST_POSTGRES_DSN:-}" ]; then
  run_suite postgres postgres_suite
fi
# The console's browser tests (SVC_E2E=1, as `make test` sets) beside them: headless chromium
# against the binary on its own SQLite file waits on pages far more than it computes.
if [ "${SVC_E2E:-}" = 1 ]; then
  run_suite e2e ${MAKE:-make} --no-print-directory e2e
fi

failed=()
wait
for i in "${!names[@]}"; do
  if [ "$(cat "$logs/${names[$i]}.rc")" = 0 ]; then status=ok; else status=FAILED; failed+=("${names[$i]}"); fi
  echo "== Go tests on ${names[$i]}: $status after $(cat "$logs/${names[$i]}.secs")s (log $logs/${names[$i]}.log)"
  grep -vE '^ok |no test files' "$logs/${names[$i]}.log" || true
  grep -cE '^ok ' "$logs/${names[$i]}.log" | sed 's/^/packages ok: /'
done
if [ ${#failed[@]} -gt 0 ]; then echo "suites failed: ${failed[*]}"; exit 1; fi
