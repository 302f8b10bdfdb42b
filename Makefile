# The two commands a newcomer needs: `make demo` and `make test`. Each first runs scripts/setup.py, which sets up
# what it needs on this machine (Debian packages as root, .venv, the interop test's npm packages) and skips
# what is already there.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck unit bench bench-power install setup-test setup-demo clean

setup-test:
	@$(PYTHON) scripts/setup.py test

setup-demo:
	@$(PYTHON) scripts/setup.py demo

install: setup-test

demo: setup-demo
	$(BIN)/chargenet demo --data-dir .demo

lint: setup-test
	$(BIN)/ruff check chargenet tests bench scripts docs/screenshot.py
	$(BIN)/ruff format --check chargenet tests bench scripts docs/screenshot.py
	$(BIN)/lint-imports

typecheck: setup-test
	$(BIN)/mypy chargenet

# The store tests start a throwaway PostgreSQL server of their own unless CHARGENET_TEST_DATABASE_URL names one.
unit: setup-test
	# Four workers on two cores: most tests wait on sockets, fsync and servers rather than compute. By group: the
	# tests of a module that shares one server (xdist_group) stay on one worker; every other test is its own group.
	$(BIN)/pytest -q -n 4 --dist loadgroup

test: lint typecheck unit

bench: setup-test
	$(BIN)/python -m bench

# Site power in real time (10 minutes; CHARGENET_BENCH_POWER_SECONDS sets it): not in `make bench`.
bench-power: setup-test
	$(BIN)/python -m bench power_realtime

clean:
	rm -rf $(VENV) .demo .pytest_cache .mypy_cache .ruff_cache tests/interop/node_modules tests/browser/node_modules
