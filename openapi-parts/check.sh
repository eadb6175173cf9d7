#!/usr/bin/env bash
# check.sh PART: merge skeleton + PART, lint with Redocly, generate with oapi-codegen and compile.
set -euo pipefail
cd "$(dirname "$0")/.."
part=$1; name=$(basename "$part" .yaml | tr -cd 'a-z0-9')
dir=checkgen/p$name; mkdir -p "$dir"
python3 openapi-parts/merge.py "$dir/openapi.yaml" "$part"
REDOCLY_TELEMETRY=off npx --no-install redocly lint --format=stylish "$dir/openapi.yaml" 2>&1 | tail -40
cat > "$dir/cfg.yaml" <<CFG
package: p$name
generate: {gin-server: true, strict-server: true, models: true, embedded-spec: true}
output: $dir/api.gen.go
CFG
go tool oapi-codegen -config "$dir/cfg.yaml" "$dir/openapi.yaml"
go build "./$dir/" && echo "GENERATED AND COMPILED OK"
