#!/usr/bin/env bash
# Generates the integrators' SDKs from the committed contract with each generator's default
# settings into a throwaway folder and compiles them (issue 13): the Go client
# (`oapi-codegen -generate types,client`) must build and vet, and the TypeScript types
# (openapi-typescript) must type-check a small openapi-fetch program in strict mode. A schema or
# enum name that collides with generated code fails here, not in an integrator's build.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
# Inside the module (a folder starting with _ is left out of ./...), so the Go client builds
# against go.mod's oapi-codegen runtime without fetching anything.
work=$(mktemp -d ./_sdk.XXXXXX)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/goclient"
go tool oapi-codegen -generate types,client -package client openapi.yaml >"$work/goclient/client.go"
go build "./$work/goclient"
go vet "./$work/goclient"
echo "Go client: $(grep -c '^func ' "$work/goclient/client.go") functions, builds and vets"

npx --no-install openapi-typescript openapi.yaml -o "$work/schema.d.ts" >/dev/null
cat >"$work/check.ts" <<'TS'
import createClient from "openapi-fetch";
import type { components, paths } from "./schema";

type User = components["schemas"]["User"];

export async function walkthrough(base: string): Promise<User | undefined> {
  const api = createClient<paths>({ baseUrl: base + "/api/v1" });
  const login = await api.POST("/auth/login", { body: { email: "ada@example.com", password: "secret-password" } });
  if (!login.data) return undefined;
  const csrf: string = login.data.data.csrf_token;
  // openapi-typescript's default (defaultNonNullable) makes request fields that have a default
  // required in its types, so the defaults are spelled out here.
  const agent = await api.POST("/agents", {
    body: { name: "Helper", max_steps: 10, allow_followup: true, retry_after_minutes: 5, max_retries: 0 },
    headers: { "X-CSRF-Token": csrf },
  });
  if (agent.data) {
    const task = await api.POST("/tasks", {
      body: { agent_id: agent.data.data.agent.id, prompt: "Hello" },
      headers: { "X-CSRF-Token": csrf },
    });
    const status: components["schemas"]["TaskStatus"] | undefined = task.data?.data.task.status;
    void status;
  }
  return login.data.data.user;
}
TS
cat >"$work/tsconfig.json" <<'JSON'
{ "compilerOptions": { "strict": true, "noEmit": true, "target": "ES2022", "module": "ES2022",
  "moduleResolution": "Bundler", "skipLibCheck": false, "lib": ["ES2022", "DOM"] }, "files": ["check.ts"] }
JSON
npx --no-install tsc -p "$work/tsconfig.json"
echo "TypeScript types: type-check with openapi-fetch"
