# pmgate — every target works offline once the Go modules are downloaded.
GO      ?= go
PKGS    := ./...
AUDIT_CHECKS ?= 2000
AUDIT_STEPS  ?= 100
FUZZTIME     ?= 10s

.PHONY: help test test-clients test-browser spec spec-check audit bench bench-load bench-check lint fuzz build demo soak mutate probe-check
.PHONY: install image image-smoke container-check unit-check release test-snippets

## help: list the targets with their one-line descriptions
help:
	@awk '/^## [a-z-]+:/ { sub(/^## /, ""); n = index($$0, ": "); printf "  %-13s %s\n", substr($$0, 1, n - 1), substr($$0, n + 2); doc = 1; next } \
		/^## / && doc { sub(/^## /, ""); printf "  %-13s %s\n", "", $$0; next } { doc = 0 }' $(MAKEFILE_LIST)

## test: the whole test suite with the race detector (the README's test command)
test:
	$(GO) test -race -count=1 $(PKGS)

## test-clients: the client conformance suite (openai-go, the openai npm SDK, 9router, Claude Code,
## opencode, the AI SDK, Codex CLI, gemini-cli and @google/genai) against the
## emulator, both strategies. Installs the pinned npm packages of clients/js and clients/codex and the Go
## modules first (registries only), then runs the tests in a network namespace that has only loopback
## (scripts/netns.sh); bin/clients-report.txt lists outbound attempts and sizes.
test-clients:
	cd clients/js && npm ci --ignore-scripts --no-audit --no-fund && node setup.mjs
	cd clients/codex && npm ci --ignore-scripts --no-audit --no-fund
	$(GO) mod download
	@mkdir -p bin; rm -f bin/clients-report.txt
	@status=0; scripts/netns.sh env GOPROXY=off GOTOOLCHAIN=local GOFLAGS=-mod=readonly \
		PMGATE_CLIENTS=1 PMGATE_CLIENTS_NETNS=1 PMGATE_CLIENTS_REPORT=$(CURDIR)/bin/clients-report.txt \
		$(GO) test -race -count=1 -timeout 30m -run '^(TestClients|TestCodex)$$' ./cmd/gateway/ || status=$$?; \
	echo "== client report (bin/clients-report.txt)"; cat bin/clients-report.txt 2>/dev/null; exit $$status

## test-browser: the /admin page in Debian's chromium (apt-get install chromium), driven by chromedp;
## screenshots go to bin/screenshots/
test-browser:
	PMGATE_BROWSER=1 $(GO) test -race -count=1 -run '^TestTheAdminPage' ./cmd/gateway/

## build: bin/gateway, stamped with the VCS revision when built from a git checkout (gateway version)
build:
	$(GO) build -buildvcs=auto -o bin/gateway ./cmd/gateway

## spec: regenerate spec/ from the declared machines
spec:
	$(GO) run ./cmd/gateway diagram --dir spec

## spec-check: fail when spec/ is stale
spec-check:
	$(GO) run ./cmd/gateway diagram --dir spec --check

## audit: property tests with high counts; fails if a row was never exercised. spec/AUDIT.md (tracked)
## lists each row and its verdict only, so a passing run leaves it unchanged; the run's counts and the
## tests that hit each row go to bin/audit-counts.md (untracked)
audit:
	@dir=$$(mktemp -d); \
	PMGATE_AUDIT_DIR=$$dir RAPID_CHECKS=$(AUDIT_CHECKS) RAPID_STEPS=$(AUDIT_STEPS) \
		$(GO) test -count=1 ./domain/... || { rm -rf $$dir; exit 1; }; \
	$(GO) run ./internal/audit/report -hits $$dir -out spec/AUDIT.md -counts bin/audit-counts.md \
		-settings "RAPID_CHECKS=$(AUDIT_CHECKS) RAPID_STEPS=$(AUDIT_STEPS) go test ./domain/..."; \
	status=$$?; rm -rf $$dir; exit $$status

## bench: benchmarks of the hot paths, and whole requests through a served gateway (cmd/gateway BenchmarkRequest)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./domain/... ./adapters/... ./app/... ./cmd/gateway/

## bench-load: the load rig — emulator, bare hop, its A/A twin and the gateway in one run (docs/BENCHMARKS.md); BENCH_FLAGS adds flags
BENCH_FLAGS ?=
bench-load:
	@mkdir -p bin
	$(GO) run ./internal/bench/load -out bin/bench-load.md $(BENCH_FLAGS)

## bench-check: a short load-rig run that fails only on a gross regression against the hop (CI; docs/BENCHMARKS.md)
BENCH_CHECK_FLAGS ?=
bench-check:
	@mkdir -p bin
	$(GO) run ./internal/bench/load -check -rounds 3 -seq 60 -seq-pairs 10 -stream 10 -burst-time 500ms -warmup 40 -cold 30 \
		-timeout 4m -out bin/bench-check.md $(BENCH_CHECK_FLAGS)

## probe-check: the probe against the emulator, verify on its reports and on every seeded bad report
probe-check:
	scripts/probe-check.sh

## demo: the gateway on the built-in emulator
demo:
	$(GO) run ./cmd/gateway demo

## fuzz: run every fuzz target briefly (FUZZTIME each)
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

## lint: gofmt check, go vet, and go.mod/go.sum exactly as `go mod tidy` would leave them
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) mod tidy -diff

## soak: a bounded soak run (SOAK_DURATION, 10m by default) of mixed text, stream, tool and aborted
## traffic against the emulator; RSS and goroutines sampled every 10 s must end within 10 % of the
## warmed-up baseline. Figures: bin/soak.md. Not part of .ci/run.
SOAK_DURATION ?= 10m
soak:
	@mkdir -p bin
	PMGATE_SOAK=$(SOAK_DURATION) PMGATE_SOAK_OUT=$(CURDIR)/bin/soak.md $(GO) test -count=1 -timeout 0 -v -run '^TestSoak$$' ./cmd/gateway/

## mutate: plant each curated defect of internal/mutate in a copy of the tree and check the tests catch it
mutate:
	$(GO) run ./internal/mutate

## install: go install ./cmd/gateway (the gateway on PATH, in $(go env GOPATH)/bin)
install:
	$(GO) install -buildvcs=auto ./cmd/gateway

# The release version stamped into binaries and the image: the tag at HEAD without its v, else the
# development version the binary reports itself.
VERSION ?= $(shell git describe --tags --exact-match 2>/dev/null | sed 's/^v//')
STAMP   := $(if $(VERSION),-X main.releaseVersion=$(VERSION),)
IMAGE   ?= pmgate:$(if $(VERSION),$(VERSION),dev)

## image: the container image (Containerfile, FROM scratch: static binary, CA bundle, non-root, serve by
## default, /readyz health check) built with Debian's buildah, offline; IMAGE names it (pmgate:dev)
image:
	@rm -rf bin/image; mkdir -p bin/image
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=auto -ldflags "-s -w $(STAMP)" -o bin/image/gateway ./cmd/gateway
	cp /etc/ssl/certs/ca-certificates.crt bin/image/ca-certificates.crt
	buildah build --quiet --format docker --layers=false -f Containerfile -t $(IMAGE) bin/image

## image-smoke: run the image's binary from its unpacked root file system: version, a demo turn, /readyz
image-smoke:
	scripts/image-smoke.sh $(IMAGE)

## container-check: run the ```sh container blocks of docs/INSTALL.md as written with podman (Debian's
## podman and crun) against the image and a my.env made from the example file
container-check:
	scripts/container-check.sh

## unit-check: systemd-analyze verify examples/pmgate.service (Debian's systemd package)
unit-check:
	scripts/unit-check.sh

## release: cross-compile linux/darwin/windows x amd64/arm64 into dist/ (static, version-stamped) with
## dist/SHA256SUMS
RELEASE_TARGETS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
release:
	@rm -rf dist; mkdir -p dist
	@set -e; for t in $(RELEASE_TARGETS); do \
		os=$${t%/*}; arch=$${t#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		out=dist/gateway-$$os-$$arch$$ext; echo "build $$out"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -buildvcs=auto -ldflags "-s -w $(STAMP)" -o $$out ./cmd/gateway; \
	done
	cd dist && sha256sum gateway-* > SHA256SUMS && cat SHA256SUMS

## test-snippets: run every `sh run` block of README.md and docs/ against the demo, in order, one shell
## per file, the `go run`/`js run` SDK blocks, the `sh agent` blocks, the demo banner's commands and
## the control page's snippets, in a loopback-only network namespace; check the syntax of the others;
## print the table
## (docs/DEVELOPMENT.md#snippets)
test-snippets:
	scripts/netns.sh env GOPROXY=off GOTOOLCHAIN=local PMGATE_SNIPPETS=1 PMGATE_SNIPPETS_NETNS=1 \
		$(GO) test -count=1 -run '^TestEverySnippet' -v ./internal/doccheck/
