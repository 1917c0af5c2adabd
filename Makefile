# Quick start: `make demo` runs the default scenario; `make test` runs the suite CI runs
# (pure tests plus one real scenario per fault family); `make test-full` runs every real test.
# `make demo` installs ftharness alone; `make test` adds the extras its tests use (TEST_EXTRAS).
# `make lock` rewrites requirements/ci.lock, the versions CI installs (CI=true ./scripts/setup.sh).
.PHONY: setup demo test test-full test-fast bench clean lock system

TEST_EXTRAS ?= test,ctk,s3,docs,frameworks,matrix

setup:
	@./scripts/setup.sh

demo:
	@EXTRAS= ./scripts/setup.sh
	@.venv/bin/ftharness run

system:
	@./scripts/setup-system.sh

test:
	@EXTRAS=$(TEST_EXTRAS) ./scripts/setup.sh
	@./scripts/setup-system.sh
	@./scripts/test.sh core

test-full:
	@EXTRAS=$(TEST_EXTRAS) ./scripts/setup.sh
	@./scripts/setup-system.sh
	@./scripts/test.sh full

test-fast:
	@EXTRAS=$(TEST_EXTRAS) ./scripts/setup.sh
	@.venv/bin/python -P -m pytest -q -m "not (cluster or slow or exclusive_ray or torchrun or serial)" tests

bench:
	@EXTRAS= ./scripts/setup.sh
	@.venv/bin/python -P benchmarks/overhead.py

lock:
	@uv pip compile -q pyproject.toml $(foreach e,$(subst $(comma), ,$(TEST_EXTRAS)),--extra $(e)) \
	  --python-version 3.11 --python-platform x86_64-unknown-linux-gnu --no-emit-package torch \
	  -o requirements/ci.lock

clean:
	rm -rf results .pytest_cache .hypothesis

comma := ,
