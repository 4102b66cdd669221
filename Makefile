# agenthost build and test entry points (GNU make).
#
#   make build   the binary, ./agenthost, linked statically, naming the packages it compiles
#   make test    the one test command: installs the npm peers, PostgreSQL and Chromium when needed, then runs every
#                Go test with -race
#   make peers   installs the npm peers pinned in testdata/peers (npm ci), only when they are missing or stale
#   make postgres  checks for the PostgreSQL server binaries the tests start clusters with, installing them if it can
#   make chromium  checks for the Chromium the web console's browser tests drive, installing it if it can
#   make check   gofmt, go vet, and the binary built for Windows and macOS (the product must build there)
#   make bench   the benchmarks (BENCH=regexp, BENCHCOUNT=n)

GO  ?= go
NPM ?= npm

PEERS       := testdata/peers
# npm ci deletes node_modules before installing, so the stamp exists only after an install that succeeded.
PEERS_STAMP := $(PEERS)/node_modules/.agenthost-installed

BENCH      ?= .
BENCHCOUNT ?= 10

.PHONY: build test peers postgres chromium check bench

# Without cgo the binary is static: it runs on any Linux whatever its C library, and maps no libc (1.5 MiB less
# resident). Go's own DNS resolver and user lookup stand in for the C library's. go build is silent while it
# compiles, and a first build compiles about 400 packages for a minute or two: -v names each package as it is
# compiled (none when all are in the build cache), so a long build shows where it is.
build:
	@echo "make: building ./agenthost (a first build compiles about 400 packages: about 2 minutes on 2 cores)"
	CGO_ENABLED=0 $(GO) build -v -o agenthost ./cmd/agenthost
	@echo "make: built ./agenthost: $$(./agenthost version)"

test: $(PEERS_STAMP) postgres chromium
	$(GO) test -race -count=1 ./...

# The tests start throwaway PostgreSQL clusters: they need the server binaries (initdb, pg_ctl), which Debian's
# postgresql-15 package has. Installed with apt-get when missing and run as root; otherwise say what to install.
postgres:
	@if [ -n "$$AGENTHOST_PG_BIN" ] || command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15; \
	else \
		echo "make: the tests need the PostgreSQL server binaries: install postgresql-15 (Debian), or set AGENTHOST_PG_BIN" >&2; exit 1; \
	fi

# The web console's end-to-end tests drive a headless Chromium (internal/testkit/browser): Debian's chromium package,
# or the binary $AGENTHOST_CHROMIUM names. Installed with apt-get when missing and run as root; otherwise say what to
# install.
chromium:
	@if [ -n "$$AGENTHOST_CHROMIUM" ] || command -v chromium >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else \
		echo "make: the browser tests need Chromium: install chromium (Debian), or set AGENTHOST_CHROMIUM to its binary" >&2; exit 1; \
	fi

peers: $(PEERS_STAMP)

$(PEERS_STAMP): $(PEERS)/package.json $(PEERS)/package-lock.json $(PEERS)/.npmrc
	@command -v $(NPM) >/dev/null 2>&1 || { echo "make: $(NPM) not found: the tests need Node 20 or later with npm" >&2; exit 1; }
	$(NPM) ci --prefix $(PEERS) --no-audit --no-fund
	@touch $@

check:
	@files=$$(find . -path ./$(PEERS)/node_modules -prune -o -name '*.go' -print); \
	unformatted=$$(gofmt -l $$files); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	GOOS=windows GOARCH=amd64 $(GO) build -o /dev/null ./cmd/agenthost
	GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null ./cmd/agenthost

bench: $(PEERS_STAMP)
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count $(BENCHCOUNT) ./...
