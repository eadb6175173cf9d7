# Targets: generate, verify, build, web, run, test, test-go, e2e, screenshots, lint, bench, bench-binary, fuzz.
GO ?= go
BIN := bin/svc
export REDOCLY_TELEMETRY := off
export CGO_ENABLED := 1

.PHONY: generate verify build web run test test-go e2e screenshots lint bench bench-binary fuzz

## generate: openapi.yaml -> gen/ (oapi-codegen), then the 501 stubs of api/ (cmd/stubgen)
generate:
	$(GO) tool oapi-codegen -config oapi-codegen.yaml openapi.yaml
	$(GO) run ./cmd/stubgen

## verify: fail when gen/, the stubs, go.mod or go.sum are stale
verify: generate
	@if [ -n "$$(git status --porcelain -- gen api/unimplemented.gen.go)" ]; then \
		git status --short -- gen api/unimplemented.gen.go; \
		echo "gen/ is stale: run 'make generate' and commit"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) mod verify

## build: the binary; it embeds web/dist as it is (the console's page says how to build it when absent)
build:
	$(GO) build -o $(BIN) ./cmd/svc

## web: the console's bundle (web/ -> web/dist, embedded by the next build); needs Node.js 20 and npm
web: web/node_modules/.package-lock.json
	cd web && npm run build

web/node_modules/.package-lock.json: web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund
	@touch $@

## run: build the console and the binary, then serve on SQLite at http://localhost:8080/svc
run: web
	$(MAKE) build
	./$(BIN) serve

## test: the whole suite: the Go tests and the console's browser tests (beside the MariaDB and
## PostgreSQL suites: scripts/test-suites.sh)
test:
	GO=$(GO) MAKE=$(MAKE) SVC_E2E=1 scripts/test-suites.sh

## test-go: the Go tests: SQLite with the race detector (the server package without it), then
## MariaDB/MySQL (SVC_TEST_MYSQL_DSN) and PostgreSQL (SVC_TEST_POSTGRES_DSN) at once when their DSN
## is set (scripts/test-suites.sh)
test-go:
	GO=$(GO) scripts/test-suites.sh

## e2e: the console's browser tests (headless chromium, /usr/bin/chromium) against bin/svc
e2e: web
	$(MAKE) build
	$(GO) build -o bin/oidcop ./scripts/oidcop
	cd web && SVC_BIN=../$(BIN) npm run e2e

## screenshots: the browser tests, keeping their screenshots in docs/screenshots
screenshots: web
	$(MAKE) build
	$(GO) build -o bin/oidcop ./scripts/oidcop
	cd web && SVC_BIN=../$(BIN) SVC_E2E_SHOTS=../docs/screenshots npm run e2e

## lint: go vet, gofmt, staticcheck, and the contract linted by Redocly and Spectral (spectral:oas, .spectral.yaml; errors fail)
lint: node_modules/.bin/redocly
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) tool staticcheck $$($(GO) list ./... | grep -v /gen$$)
	npx --no-install redocly lint openapi.yaml
	npx --no-install spectral lint --fail-severity error openapi.yaml

node_modules/.bin/redocly: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## bench-binary: issue 14's table on the real binary (bench/svcbench: builds cmd/svc and bench/river, SQLite,
## MariaDB/MySQL when SVC_TEST_MYSQL_DSN is set, PostgreSQL when SVC_TEST_POSTGRES_DSN is, River beside them;
## about 5 minutes); BENCHFLAGS adds flags (-quick, -rows, -n …)
bench-binary:
	$(GO) run ./bench/svcbench -v $(BENCHFLAGS)

## fuzz: run each fuzz target for FUZZTIME (default 20s)
FUZZTIME ?= 20s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; done
