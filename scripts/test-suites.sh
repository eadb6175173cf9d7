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
# Every package's test binary is linked once (`go test -c`) and run by the suites that need it: a
# link costs 1–16 s of a core, and `go test` links again on every run, so the plain binaries
# the three databases share were linked three times (the server's) or twice (the others'). With
# `scripts/test-suites.sh build` the binaries are only built, into $SVC_TEST_BINARIES (CI does it
# in the background while its checks run); a later run with the same $SVC_TEST_BINARIES runs
# them when they were built from the same tree, and builds them again when not.
#
# Each suite writes to its own log; a suite's log is printed when it ends, with its time, and
# the script fails when any suite failed.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
module=$($GO list -m)
if [ -n "${SVC_TEST_BINARIES:-}" ]; then
  bins=$SVC_TEST_BINARIES
else # ~3 GB of binaries: gone when the run ends
  bins=$(mktemp -d /tmp/svc-testbin.XXXXXX)
  trap 'rm -rf "$bins"' EXIT
fi

# Packages with tests, and among them those whose tests open a database: those whose test binary
# imports store/storetest, and those whose tests read a DSN variable themselves (the binary's and
# the benchmark's). One `go list` for all: a `go list … | grep -q` per package failed at random
# under pipefail (grep leaving early sent go list a SIGPIPE) and skipped the package.
tested_packages() {
  $GO list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... | grep .
}
db_packages() {
  {
    $GO list -test -f '{{.ImportPath}}{{range .Deps}} {{.}}{{end}}' ./... |
      awk -v want="$module/store/storetest" '$1 ~ /\.test$/ { for (i = 2; i <= NF; i++) if ($i == want) { sub(/\.test$/, "", $1); print $1; next } }'
    grep -ls 'SVC_TEST_MYSQL_DSN\|SVC_TEST_POSTGRES_DSN' $(git ls-files '*_test.go') |
      xargs -r -n1 dirname | sort -u | sed "s#^\.\$##; s#^#$module/#; s#/\$##"
  } | sort -u
}

# The binary of package $2 built in mode $1 (race or plain): its import path with / as _.
binary() { echo "$bins/$1/$(echo "$2" | tr / _).test"; }

# build_binaries mode pkgs…: `go test -c` for every package in one go command (its build runs two
# jobs at once) per group of packages whose last path element differs, since `-o dir/` names a
# binary by it; each binary then moves to its import path's name.
build_binaries() {
  local mode=$1; shift
  local flags=() pending=("$@") group=() rest=() p base
  [ "$mode" = race ] && flags=(-race)
  mkdir -p "$bins/$mode"
  while [ ${#pending[@]} -gt 0 ]; do
    declare -A seen=()
    group=() rest=()
    for p in "${pending[@]}"; do
      base=${p##*/}
      if [ -n "${seen[$base]:-}" ]; then rest+=("$p"); else seen[$base]=1; group+=("$p"); fi
    done
    unset seen
    local out
    out=$(mktemp -d "$bins/$mode/.group.XXXXXX")
    $GO test -c "${flags[@]}" -o "$out/" "${group[@]}" || return 1
    for p in "${group[@]}"; do mv "$out/${p##*/}.test" "$(binary "$mode" "$p")" || return 1; done
    rmdir "$out"
    pending=("${rest[@]}")
  done
}

# The tree the binaries are built from: the commit, the uncommitted changes and the untracked files.
tree_print() {
  git rev-parse HEAD; git diff HEAD --binary; git ls-files -o --exclude-standard | sort | xargs -r sha256sum
}

mapfile -t tested < <(tested_packages)
raced=() plain=()
for p in "${tested[@]}"; do [ "$p" = "$module/server" ] || raced+=("$p"); done
# The plain binaries: the server package's, and with a server database's DSN (or to build them
# for a later run) every database package's.
pkgs=() plain=("$module/server")
if [ -n "${SVC_TEST_MYSQL_DSN:-}${SVC_TEST_POSTGRES_DSN:-}" ] || [ "${1:-}" = build ]; then
  mapfile -t pkgs < <(db_packages)
  for p in "${pkgs[@]}"; do [ "$p" = "$module/server" ] || plain+=("$p"); done
fi

print=$({ tree_print; echo "${raced[*]}"; echo "${plain[*]}"; } | sha256sum | cut -d' ' -f1)
if [ "$(cat "$bins/built" 2>/dev/null)" != "$print" ]; then
  rm -rf "${bins:?}/race" "${bins:?}/plain" "$bins/built"
  echo "== building the test binaries into $bins"
  start=$(date +%s)
  build_binaries race "${raced[@]}" || { echo "the raced test binaries did not build"; exit 1; }
  build_binaries plain "${plain[@]}" || { echo "the test binaries did not build"; exit 1; }
  echo "$print" >"$bins/built"
  echo "test binaries built in $(( $(date +%s) - start ))s"
fi
[ "${1:-}" = build ] && exit 0

logs=$(mktemp -d /tmp/svc-suites.XXXXXX)
declare -A dirs=()
while read -r p dir; do dirs[$p]=$dir; done < <($GO list -f '{{.ImportPath}} {{.Dir}}' ./...)

# run_packages mode jobs pkgs…: each package's binary in its package's directory with the flags
# `go test` gives it, $jobs at once; prints `ok` or, as `go test` does, the failing package's
# output and `FAIL`, and fails when any package failed.
run_packages() {
  local mode=$1 jobs=$2; shift 2
  local out p i rc=0
  out=$(mktemp -d "$logs/pkg.XXXXXX")
  i=0
  for p in "$@"; do
    ( start=$(date +%s%N)
      (cd "${dirs[$p]}" && exec "$(binary "$mode" "$p")" -test.paniconexit0 -test.timeout=30m) >"$out/$i.log" 2>&1
      echo $? >"$out/$i.rc"
      ms=$(( ($(date +%s%N) - start) / 1000000 ))
      printf '%d.%03ds' $((ms / 1000)) $((ms % 1000)) >"$out/$i.secs" ) &
    i=$((i + 1))
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  done
  wait
  i=0
  for p in "$@"; do
    if [ "$(cat "$out/$i.rc")" = 0 ]; then
      printf 'ok  \t%s\t%s\n' "$p" "$(cat "$out/$i.secs")"
    else
      cat "$out/$i.log"; printf 'FAIL\t%s\t%s\n' "$p" "$(cat "$out/$i.secs")"; rc=1
    fi
    i=$((i + 1))
  done
  return $rc
}
# without VAR command…: the command without the environment variable (a DSN: which database).
without() { (unset "$1"; shift; "$@"); }

names=() pids=()
run_suite() { # name, then the command; the suite's own time goes to $logs/<name>.secs
  local name=$1; shift
  names+=("$name")
  (start=$(date +%s); "$@" >"$logs/$name.log" 2>&1; rc=$?
   echo $(( $(date +%s) - start )) >"$logs/$name.secs"; echo $rc >"$logs/$name.rc"; exit $rc) &
  pids+=($!)
}

# SQLite with the race detector first, alone: it runs two packages at once and its
# timing-sensitive drills must not share the two cores with other suites. The server package's
# end-to-end tests are the exception: raced they took over 8 of CI's 20 minutes (every HTTP
# handler, stream and daemon instrumented, 4.6 GB), so they run without it beside the server
# databases below; the concurrency they drive lives in the packages raced here (store, agentloop,
# internal/jobs, internal/platform, plugins), each with its own concurrent tests.
run_suite sqlite-race without SVC_TEST_MYSQL_DSN without SVC_TEST_POSTGRES_DSN run_packages race 2 "${raced[@]}"
wait "${pids[0]}"
run_suite sqlite-server without SVC_TEST_MYSQL_DSN without SVC_TEST_POSTGRES_DSN run_packages plain 1 "$module/server"
if [ -n "${SVC_TEST_MYSQL_DSN:-}" ]; then
  run_suite mariadb without SVC_TEST_POSTGRES_DSN run_packages plain 1 "${pkgs[@]}"
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
  without SVC_TEST_MYSQL_DSN run_packages plain 1 "${pkgs[@]}"
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
  grep -vE '^ok ' "$logs/${names[$i]}.log" || true
  grep -cE '^ok ' "$logs/${names[$i]}.log" | sed 's/^/packages ok: /'
done
if [ ${#failed[@]} -gt 0 ]; then echo "suites failed: ${failed[*]}"; exit 1; fi
