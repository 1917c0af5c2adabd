# Quick start: `make demo` runs the default scenario; `make test` runs the suite CI runs
# (pure tests plus one real scenario per fault family); `make test-full` runs every real test.
.PHONY: setup demo test test-full test-fast bench clean

setup:
	@./scripts/setup.sh

demo: setup
	@.venv/bin/ftharness run

test: setup
	@./scripts/setup-system.sh
	@./scripts/test.sh core

test-full: setup
	@./scripts/setup-system.sh
	@./scripts/test.sh full

test-fast: setup
	@.venv/bin/python -P -m pytest -q -m "not (cluster or slow or exclusive_ray or torchrun or serial)" tests

bench: setup
	@.venv/bin/python -P benchmarks/overhead.py

clean:
	rm -rf results .pytest_cache .hypothesis
