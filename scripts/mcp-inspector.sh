#!/usr/bin/env bash
# End-to-end check of the per-agent MCP endpoint (issue 29) with an MCP client not written here:
# the MCP Inspector's CLI from npm (@modelcontextprotocol/inspector, fetched by npx), against
# svc built from this tree on a fresh database, its model scripts/fakemodel (loopback). It
# lists the tools and resources, starts a chat and waits for its answer, reads the recent
# chats, and checks that a wrong key is refused. Needs Go, Node.js (npx), curl and jq.
# Run by hand (`scripts/mcp-inspector.sh`); CI does not run it (it fetches a package from npm).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
INSPECTOR=${INSPECTOR:-@modelcontextprotocol/inspector@0.17.2}
work=$(mktemp -d)
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
(cd "$work" && SVC_LISTEN="127.0.0.1:$port" SVC_AGENT_API=true SVC_LOG_PATH="$work/svc.log" exec ./svc serve) 2>"$work/svc.out" &
pids+=($!)
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/svc/healthz" >/dev/null 2>&1 && break; sleep 0.1; done

B=http://127.0.0.1:$port/svc/api/v1
j() { curl -fsS -b "$work/jar" -c "$work/jar" -H 'Content-Type: application/json' "$@"; }
j -X POST $B/auth/register -d '{"email":"ada@example.com","password":"correct horse battery"}' >/dev/null
j -X POST $B/auth/login -d '{"email":"ada@example.com","password":"correct horse battery"}' >/dev/null
TOKEN=$(j $B/auth/me | jq -r .data.csrf_token)
H="X-CSRF-Token: $TOKEN"
GROUP=$(j -X POST $B/groups -H "$H" -d '{"name":"Lab"}' | jq -r .data.group.id)
j -X POST $B/groups/$GROUP/llm-configs -H "$H" -d "{\"name\":\"fake\",\"driver\":\"openai\",\"model\":\"fake\",\"base_url\":\"$(cat "$work/fakemodel.url")\",\"api_key\":\"none\",\"is_default\":true,\"is_global\":true}" >/dev/null
AGENT=$(j -X POST $B/agents -H "$H" -d '{"name":"Helper","system_prompt":"Be brief."}' | jq -r .data.agent.id)
KEY=$(j -X POST $B/agents/$AGENT/api-keys -H "$H" -d '{"name":"inspector"}' | jq -r .data.key)

inspect() { npx -y "$INSPECTOR" --cli "$B/agent-api/mcp" --transport http --header "Authorization: Bearer $KEY" "$@"; }
echo "== tools/list"
inspect --method tools/list | tee "$work/tools.json" | jq -c '[.tools[].name]'
jq -e '[.tools[].name] | contains(["start_chat","send_message","get_chat","get_transcript","approve_tool_calls","reject_tool_calls","answer_question"])' "$work/tools.json" >/dev/null
echo "== resources/list, resources/templates/list"
inspect --method resources/list | jq -e '.resources[0].uri == "chats://recent"'
inspect --method resources/templates/list | jq -e '.resourceTemplates[0].uriTemplate == "chat://{id}"'
echo "== tools/call start_chat (waits for the answer)"
inspect --method tools/call --tool-name start_chat --tool-arg 'text=Hello there' --tool-arg wait_seconds=30 | tee "$work/start.json" | jq -c .structuredContent
jq -e '.structuredContent.status == "COMPLETED" and (.structuredContent.answer | length > 0)' "$work/start.json" >/dev/null
CHAT=$(jq -r .structuredContent.id "$work/start.json")
echo "== tools/call get_chat, a refusal as a tool error"
inspect --method tools/call --tool-name get_chat --tool-arg chat_id=$CHAT | jq -e '.structuredContent.messages | length == 2'
inspect --method tools/call --tool-name get_chat --tool-arg chat_id=999999 | jq -e '.isError == true and (.content[0].text | startswith("NOT_FOUND"))'
echo "== resources/read chats://recent"
inspect --method resources/read --uri 'chats://recent' | jq -e --argjson id "$CHAT" '.contents[0].text | fromjson | .chats[0].id == $id'
echo "== a wrong key is refused"
if KEY=svk_nope_nope inspect --method tools/list >"$work/refused.txt" 2>&1; then
  cat "$work/refused.txt"; echo "a wrong key was accepted"; exit 1
fi
grep -q UNAUTHENTICATED "$work/refused.txt" || { cat "$work/refused.txt"; echo "the refusal was not UNAUTHENTICATED"; exit 1; }
echo "MCP Inspector CLI ($INSPECTOR) against svc serve: all checks passed"
