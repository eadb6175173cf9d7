#!/usr/bin/env bash
# Builds the Mercure hub (Caddy with the Mercure module) used by the real-hub integration test
# (server/mercure_test.go) in a throwaway module outside the repository, and prints the path of the
# binary. Cached: a second run with the same version prints the path at once.
#   export SVC_TEST_MERCURE_BIN="$(scripts/mercure-build.sh)"
set -euo pipefail
version="${MERCURE_VERSION:-v0.21.4}"
dir="${SVC_MERCURE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-mercure}/$version"
bin="$dir/mercure"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
export PATH="/usr/local/go/bin:$PATH"
mkdir -p "$dir"
work=$(mktemp -d "$dir/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
cat >main.go <<'GO'
// Command mercure is Caddy with the Mercure hub module, for the integration test of svc.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/dunglas/mercure/caddy"
)

func main() { caddycmd.Main() }
GO
start=$(date +%s)
export GONOSUMDB=github.com/dunglas/mercure GOFLAGS=-mod=mod CGO_ENABLED=0
{
  go mod init svc-mercure-hub
  go get "github.com/dunglas/mercure/caddy@$version"
  go mod tidy
  go build -trimpath -o "$bin.tmp" .
} >&2
mv "$bin.tmp" "$bin"
echo "mercure hub $version built in $(( $(date +%s) - start ))s: $bin" >&2
echo "$bin"
