# Targets: generate, verify, build, run, test, lint, bench, fuzz.
GO ?= go
BIN := bin/svc
export REDOCLY_TELEMETRY := off
export CGO_ENABLED := 1

.PHONY: generate verify build run test lint bench fuzz

## generate: openapi.yaml -> gen/ (oapi-codegen), then the 501 stubs of api/ (internal/stubgen)
generate:
	$(GO) tool oapi-codegen -config oapi-codegen.yaml openapi.yaml
	$(GO) run ./internal/stubgen

## verify: fail when gen/, the stubs, go.mod or go.sum are stale
verify: generate
	@if [ -n "$$(git status --porcelain -- gen api/unimplemented.gen.go)" ]; then \
		git status --short -- gen api/unimplemented.gen.go; \
		echo "gen/ is stale: run 'make generate' and commit"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) mod verify

build:
	$(GO) build -o $(BIN) ./cmd/svc

## run: build and serve on SQLite at http://localhost:8080/svc
run: build
	./$(BIN) serve

## test: the whole suite (SQLite; MariaDB/MySQL too when SVC_TEST_MYSQL_DSN is set)
test:
	$(GO) test -race -count=1 ./...

lint: node_modules/.bin/redocly
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) tool staticcheck $$($(GO) list ./... | grep -v /gen$$)
	npx --no-install redocly lint openapi.yaml

node_modules/.bin/redocly: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## fuzz: run each fuzz target for FUZZTIME (default 20s)
FUZZTIME ?= 20s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; done
