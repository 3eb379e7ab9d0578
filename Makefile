# `make` sets everything up in .venv and builds the bundled catalogue; `make test` also installs
# the Node tools of node/ (wrangler), runs the tests and checks that the committed
# market-index.json and packages/ are up to date.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# wrangler (with workerd) runs the Cloudflare export in the tests, offline
WRANGLER := node/node_modules/.bin/wrangler

.PHONY: all build test clean

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

test: $(BIN)/olares-pack $(WRANGLER)
	@# the HTTPS test makes a self-signed certificate with openssl (CI runs as root on a fresh machine)
	command -v openssl >/dev/null || (apt-get update -qq && apt-get install -y -qq openssl)
	$(BIN)/python -m pytest
	$(BIN)/olares-pack build --check

clean:
	rm -rf build $(VENV) node/node_modules
