# `make` sets everything up in .venv and builds the bundled catalogue; `make test` runs the tests
# and checks that the committed market-index.json and packages/ are up to date.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: all build test clean

all: build

$(BIN)/olares-pack: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

build: $(BIN)/olares-pack
	$(BIN)/olares-pack build

test: $(BIN)/olares-pack
	$(BIN)/python -m pytest
	$(BIN)/olares-pack build --check

clean:
	rm -rf build $(VENV)
