#!/usr/bin/env bash
# Runs the shell snippets of README.md and docs/integrators.md, verbatim and in order, against a
# fresh `svc serve` (issue 24), so the documentation stays true.
#
# Convention for the fenced blocks of those two files:
#   ```sh           runs; every curl must answer 2xx and every command exit 0
#   ```sh refusals  runs; its curls show refusals, so their status is not checked
#   ```sh norun     not run (the set-up commands, snippets that need values from elsewhere)
# Other languages (```go …) are not run here; scripts/sdk-check.sh runs the same code.
#
# All blocks share one bash (set -euo pipefail), README.md's first, in a throwaway folder under
# the repository (so npx finds the repository's openapi-typescript). Two honest substitutions:
# the documented http://localhost:8080 becomes this run's loopback address (the port is free, not
# 8080), and LLM_BASE_URL/LLM_MODEL/LLM_API_KEY, which the README reads with a local Ollama as the
# default, point at scripts/fakemodel, a loopback OpenAI-compatible stand-in (CI has no model).
# The server runs with SVC_AGENT_API=true, as the README's per-agent section says it must.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
repo=$(pwd)
work="$repo/_snippets"
rm -rf "$work" && mkdir -p "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/svc" ./cmd/svc
go build -o "$work/fakemodel" ./scripts/fakemodel
"$work/fakemodel" >"$work/fakemodel.url" 2>"$work/fakemodel.log" &
pids+=($!)
for _ in $(seq 1 50); do [ -s "$work/fakemodel.url" ] && break; sleep 0.1; done
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/server"
(cd "$work/server" && SVC_LISTEN="127.0.0.1:$port" SVC_AGENT_API=true SVC_LOG_PATH="$work/svc.log" exec ../svc serve) \
  2>"$work/svc.out" &
pids+=($!)
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/svc/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done

# extract FILE: the runnable blocks of FILE as one script, each block preceded by a marker line.
extract() {
  awk -v file="$1" '
    /^```/ && !inblock { inblock = 1; info = substr($0, 4); run = (info == "sh" || info == "sh refusals")
      if (run) { printf "__snippet %s:%d %s\n", file, NR, (info == "sh refusals" ? "refusals" : "checked") }; next }
    /^```/ && inblock { inblock = 0; next }
    inblock && run { print }
  ' "$1"
}

{
  cat <<'PRELUDE'
set -euo pipefail
checked=1
# __snippet names the block that follows (in errors) and whether its curls must answer 2xx.
__snippet() { echo "== $1" >&2; [ "$2" = checked ] && checked=1 || checked=0; }
# curl as the documentation writes it; in a checked block an answer that is not 2xx fails the run.
curl() {
  if [ "$checked" = 0 ]; then command curl "$@"; echo; return; fi
  local out code
  out=$(command curl -w '\n%{http_code}' "$@")
  code=${out##*$'\n'}
  printf '%s\n' "${out%$'\n'*}"
  case $code in 2*) ;; *) echo "curl $* answered HTTP $code" >&2; return 1 ;; esac
}
LLM_BASE_URL=$SNIPPET_LLM_BASE_URL LLM_MODEL=fake LLM_API_KEY=none
PRELUDE
  extract README.md
  extract docs/integrators.md
} | sed "s#http://localhost:8080#http://127.0.0.1:$port#g" >"$work/snippets.sh"

start=$(date +%s)
if ! (cd "$work" && SNIPPET_LLM_BASE_URL=$(cat "$work/fakemodel.url") bash snippets.sh >"$work/out.txt"); then
  tail -n 40 "$work/out.txt"
  echo "--- server log (tail)"
  tail -n 30 "$work/svc.log"
  echo "a documented snippet failed (above); the script run: $work/snippets.sh"
  exit 1
fi
# The first task's answer (the README prints it) must be the model's, not a failure.
grep -q '"status": "COMPLETED"' "$work/out.txt" || { cat "$work/out.txt"; echo "the README's first task did not complete"; exit 1; }
echo "README.md and docs/integrators.md: $(grep -c '^__snippet' "$work/snippets.sh") shell blocks ran in $(( $(date +%s) - start ))s"
