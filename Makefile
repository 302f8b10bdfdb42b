# The two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export CHARGENET_TEST_DATABASE_URL ?= postgresql+asyncpg://chargenet:chargenet@127.0.0.1:5432/chargenet_test

.PHONY: demo test lint typecheck unit bench install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml constraints.txt sdk/python/pyproject.toml
	# The partner SDK is its own distribution; chargenet's reference receiver and demo use it.
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]' -e sdk/python
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/chargenet demo --data-dir .demo

lint: $(STAMP)
	$(BIN)/ruff check chargenet tests bench scripts
	$(BIN)/ruff format --check chargenet tests bench scripts
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy chargenet

# The RFC 9421 interop test verifies our signatures with an npm package; installed once, before the
# parallel workers start, so they never race on node_modules.
tests/interop/node_modules: tests/interop/package-lock.json
	@command -v npm >/dev/null || { echo "make test needs Node.js and npm (apt-get install nodejs npm)"; exit 1; }
	cd tests/interop && npm ci --no-audit --no-fund --silent
	touch $@

unit: $(STAMP) tests/interop/node_modules
	# Four workers on two cores: most tests wait on sockets, fsync and servers rather than compute.
	$(BIN)/pytest -q -n 4

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .demo .pytest_cache .mypy_cache .ruff_cache
