# pallasify — build, test, demo, bench.
# `make test` builds everything it needs (the Python venv included) and runs every test.
SHELL := /bin/bash
GO ?= go
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
BIN := bin/pallasify
export PALLASIFY_PYTHON := $(CURDIR)/$(VPY)
export GOFLAGS := -buildvcs=false
# Tests that need the real stack (torch, torch_tpu, libtpu, jax in .venv) fail instead of skipping
# when it is missing, under make.
export PALLASIFY_REQUIRE_STACK := 1
# The HTML report's browser test (pipeline/report) fails instead of skipping when chromium is missing.
export PALLASIFY_REQUIRE_BROWSER := 1

.PHONY: all build test demo bench fuzz lint venv deps deps-sandbox clean corpus corpus-tpuhost corpus-audit

all: build

build:
	$(GO) build -o $(BIN) ./cmd/pallasify

# The sandbox the kernel stage runs a repository's code in (bubblewrap): all make demo needs of deps.
deps-sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get install -y -qq bubblewrap >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null)); \
	  else echo "warning: bubblewrap (bwrap) is missing; install it for sandboxed validation" >&2; fi; }

# System tools the tests need (bubblewrap for the sandbox, PostgreSQL for the queue, Chromium for the
# HTML report's browser test). Installs with apt-get when missing and we are root; otherwise says what to install.
deps: deps-sandbox
	@# PostgreSQL server binaries for the queue tests (pipeline/queue/pgtest starts a private server).
	@ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || command -v postgres >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get install -y -qq postgresql >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq postgresql >/dev/null)); \
	  else echo "warning: PostgreSQL is missing; install the postgresql package for the queue tests" >&2; fi; }
	@# Chromium, headless, for pipeline/report's TestHTMLReportInBrowser (--format html).
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get install -y -qq chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)); \
	  else echo "warning: chromium is missing; install the chromium package for the HTML report's browser test" >&2; fi; }

$(VPY): validators/harness/requirements.txt validators/harness/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --disable-pip-version-check -r validators/harness/requirements.txt -c validators/harness/constraints.txt
	touch $(VPY)

venv: $(VPY)

# staticcheck, pinned, built into bin/ the first time lint runs (from the Go module proxy).
STATICCHECK_VERSION := v0.8.2
STATICCHECK := bin/staticcheck-$(STATICCHECK_VERSION)

$(STATICCHECK):
	@mkdir -p bin/.staticcheck
	GOBIN=$(CURDIR)/bin/.staticcheck GOFLAGS= $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv bin/.staticcheck/staticcheck $@

# vet + gofmt + staticcheck + `go mod tidy` is a no-op.
lint: $(STATICCHECK)
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.venv/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	./$(STATICCHECK) ./...
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy (go mod tidy -diff):"; $(GO) mod tidy -diff; exit 1; }

test: deps venv lint
	$(GO) test -count=1 -timeout=60m -skip='^TestFixtureKernels$$' ./...
	@# The validator's fixture proof, verbose so its kill rate, false rejections and each failing case are printed.
	set -o pipefail; $(GO) test -count=1 -timeout=30m -v -run='^TestFixtureKernels$$' ./validators/ ./validators/emulator/ | grep -E 'kill rate|proven in|reference via|_test.go:[0-9]+: [^ :]+/[^ :]+: |^(--- |ok|FAIL|PASS)'
	$(GO) test -run='^$$' -fuzz=FuzzEngine -fuzztime=15s ./transforms/
	$(VPY) -m pytest -q validators/harness fixtures/kernels validators/tpuhost/python/tests

# Run first on a fresh clone: bubblewrap (when root) and the venv are built before the kernel half, which says
# what is missing when the sandbox or the compiler cannot run here. The kernel half runs with --drive=false: the
# kernel's spec is inferred from the code (seconds), where driving the extension's ops builds it and the CUDA
# emulator's runtime for the CPU first (about 3 minutes the first time).
demo: build deps-sandbox venv
	./$(BIN) migrate fixtures/projects/ddp_amp_train
	@echo; echo "=== kernel stage: a load_inline CUDA kernel drafted by rules, proven, wired in ==="
	@echo "(spec inferred from the code; drop --drive=false to build the extension for the CPU and drive it)"
	@missing=; nl=$$'\n  - '; \
	  command -v g++ >/dev/null 2>&1 || missing="$$missing$$nl""g++ (apt-get install g++)"; \
	  if ! command -v bwrap >/dev/null 2>&1; then \
	    missing="$$missing$$nl""bubblewrap (make deps-sandbox as root, or apt-get install bubblewrap)"; \
	  elif ! bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all true >/dev/null 2>&1; then \
	    missing="$$missing$$nl""a working bubblewrap sandbox: user namespaces are off here"$$'\n    '; \
	    missing="$$missing""(sysctl kernel.unprivileged_userns_clone=1, or run in a VM)"; fi; \
	  if [ -n "$$missing" ]; then echo "kernel stage not run; missing:$$missing"; echo "then run make demo again"; \
	  else set -x; ./$(BIN) migrate --color never --drive=false fixtures/e2e/inline_act; fi

# First the real-code case: the pinned transformers and diffusers wheels,
# downloaded once with the venv's pip into .bench/ and unpacked, where analyze
# and migrate --kernels=false run alternating with the venv's ruff and grep
# (median wall, CPU, cores, peak RSS, ratio to ruff). Then the generated ~1M-line
# tree (cached under .bench/) against the grep/rg floor; see cmd/pallasify-bench.
bench: build venv
	$(GO) run ./cmd/pallasify-bench -bin $(BIN) -ruff .venv/bin/ruff -python $(VPY)

# Runs analyze and migrate over every folder of ../shared/corpus (real code from
# public repositories; copied to a temp dir first) and prints per-folder and total
# kernel-stage tables; then the TPU-host run (timm, litgpt, dinov2: their tests before
# migration on the CPU, after on the simulated TPU host, both targets; dependencies from
# PyPI into .bench/tpuhost-venv, never .venv). A benchmark, not part of `make test`.
# Last, the maintainer audit of the same three repositories (files changed, hunks, sites
# fixed/flagged/silent, modules that no longer import, the TPU-host run's CUDA-only calls).
# CORPUS_TPUHOST= skips the TPU-host run; `make corpus-tpuhost` runs only it and the audit;
# `make corpus-audit` runs only the audit (no CUDA-only-calls column). See cmd/pallasify-corpus.
CORPUS ?= ../shared/corpus
CORPUS_TPUHOST ?= -tpuhost
CORPUS_AUDIT ?= -audit
corpus: build venv
	PALLASIFY_PYTHON=$(PALLASIFY_PYTHON) $(GO) run ./cmd/pallasify-corpus -bin $(BIN) -corpus $(CORPUS) $(CORPUS_TPUHOST) $(CORPUS_AUDIT) $(CORPUS_FLAGS)

corpus-tpuhost: build venv
	PALLASIFY_PYTHON=$(PALLASIFY_PYTHON) $(GO) run ./cmd/pallasify-corpus -bin $(BIN) -corpus $(CORPUS) -tpuhost-only $(CORPUS_AUDIT) $(CORPUS_FLAGS)

corpus-audit: build venv
	PALLASIFY_PYTHON=$(PALLASIFY_PYTHON) $(GO) run ./cmd/pallasify-corpus -bin $(BIN) -corpus $(CORPUS) -audit-only $(CORPUS_FLAGS)

# FUZZTIME=30m by default (what issue 33 asks to pass clean); a failing input
# lands in transforms/testdata/fuzz/FuzzEngine and is run by every `go test`.
FUZZTIME ?= 30m
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzEngine -fuzztime=$(FUZZTIME) ./transforms/

clean:
	rm -rf bin .cache .bench
