#!/usr/bin/env bash
# Generates the integrators' SDKs from the committed contract with each generator's default
# settings into a throwaway folder and proves them (issue 13): the Go client
# (`oapi-codegen -generate types,client`) builds and vets and runs scripts/sdkflow/main.go, and
# the TypeScript types (openapi-typescript) type-check scripts/sdkflow/flow.ts (openapi-fetch,
# strict), which then runs under Node; both walkthroughs run against a real `svc serve`. A
# schema or enum name that collides with generated code fails here, not in an integrator's build.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
# Inside the module (a folder starting with _ is left out of ./...), so the Go client builds
# against go.mod's oapi-codegen runtime without fetching anything; scripts/sdkflow imports it
# from there.
work=./_sdk
rm -rf "$work" && mkdir -p "$work"
run=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work" "$run"
}
trap cleanup EXIT

mkdir -p "$work/goclient"
go tool oapi-codegen -generate types,client -package client openapi.yaml >"$work/goclient/client.go"
go build "./$work/goclient"
go vet "./$work/goclient"
echo "Go client: $(grep -c '^func ' "$work/goclient/client.go") functions, builds and vets"

# The walkthrough with the generated Go client against a running svc (SQLite, the scripted
# model: each task asks for the calculator, then answers).
go build -o "$run/svc" ./cmd/svc
cat >"$run/script.json" <<'JSON'
[{"tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "6*7"}}]}, {"text": "42"}]
JSON
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$run" && SVC_LISTEN="127.0.0.1:$port" SVC_AGENT_API=true SVC_LLM_DRIVER=scripted SVC_LLM_MODEL=script \
  SVC_LLM_BASE_URL=script.json SVC_LOG_PATH="$run/svc.log" exec ./svc serve) &
pid=$!
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/svc/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
if ! go run ./scripts/sdkflow/main.go -base "http://127.0.0.1:$port/svc/api/v1"; then
  tail -n 30 "$run/svc.log"
  exit 1
fi
echo "Go client walkthrough: task and chat approved and completed"

npx --no-install openapi-typescript openapi.yaml -o "$work/schema.d.ts" >/dev/null
cp scripts/sdkflow/flow.ts "$work/flow.ts"
echo '{"type": "module"}' >"$work/package.json"
cat >"$work/tsconfig.json" <<'JSON'
{ "compilerOptions": { "strict": true, "target": "ES2022", "module": "ES2022", "moduleResolution": "Bundler",
  "skipLibCheck": false, "lib": ["ES2022", "DOM"], "outDir": "js" }, "files": ["flow.ts"] }
JSON
npx --no-install tsc -p "$work/tsconfig.json"
echo "TypeScript types: the openapi-fetch walkthrough type-checks (strict)"
node "$work/js/flow.js" "http://127.0.0.1:$port/svc/api/v1"
