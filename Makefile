# Quick start: `make demo` runs the default scenario; `make test` runs the suite.
.PHONY: setup demo test test-fast bench clean

setup:
	@./scripts/setup.sh

demo: setup
	@.venv/bin/ftharness run

test: setup
	@./scripts/setup-browser.sh
	@.venv/bin/python -m pytest -q tests

test-fast: setup
	@.venv/bin/python -m pytest -q -m "not cluster and not slow" tests

bench: setup
	@.venv/bin/python benchmarks/overhead.py

clean:
	rm -rf results .pytest_cache .hypothesis
