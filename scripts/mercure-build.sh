#!/usr/bin/env bash
# Builds the Mercure hub used by the real-hub integration test (server/mercure_test.go) and the
# multi-instance drill (scripts/drill), in a throwaway module outside the repository, and prints
# the path of the binary. Cached: a second run with the same version prints the path at once.
#   export SVC_TEST_MERCURE_BIN="$(scripts/mercure-build.sh)"
#
# The hub is the Mercure project's own library (github.com/dunglas/mercure: the hub Caddy's
# Mercure module serves) on a plain net/http server, not Caddy: Caddy with its standard modules
# took most of CI's two cores for ~15 minutes to compile, and the tests use nothing of it but the
# hub (local transport, HS256 publisher and subscriber keys, no TLS). Usage:
#   mercure -addr 127.0.0.1:PORT -key KEY
# serves the hub at http://127.0.0.1:PORT/.well-known/mercure (404 elsewhere) until killed.
set -euo pipefail
version="${MERCURE_VERSION:-v0.21.4}"
dir="${SVC_MERCURE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-mercure}/$version-lib"
bin="$dir/mercure"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
export PATH="/usr/local/go/bin:$PATH"
mkdir -p "$dir"
work=$(mktemp -d "$dir/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
cat >main.go <<'GO'
// Command mercure serves the Mercure hub library on a plain HTTP listener, for svc's tests.
package main

import (
	"context"
	"flag"
	"log"
	"net/http"

	"github.com/dunglas/mercure"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:3000", "listen address")
	key := flag.String("key", "", "the HS256 key of publishers' and subscribers' JWTs")
	flag.Parse()
	if *key == "" {
		log.Fatal("-key is required")
	}
	hub, err := mercure.NewHub(context.Background(),
		mercure.WithPublisherJWT([]byte(*key), "HS256"),
		mercure.WithSubscriberJWT([]byte(*key), "HS256"))
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("mercure hub on http://%s/.well-known/mercure", *addr)
	log.Fatal(http.ListenAndServe(*addr, hub))
}
GO
start=$(date +%s)
export GONOSUMDB=github.com/dunglas/mercure GOFLAGS=-mod=mod CGO_ENABLED=0
{
  go mod init svc-mercure-hub
  go get "github.com/dunglas/mercure@$version"
  go mod tidy
  go build -trimpath -o "$bin.tmp" .
} >&2
mv "$bin.tmp" "$bin"
echo "mercure hub $version built in $(( $(date +%s) - start ))s: $bin" >&2
echo "$bin"
