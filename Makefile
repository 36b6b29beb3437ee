# One set of targets for humans and CI alike (.ci/run calls `make lint test`).
PYTHON ?= python3
CARGO ?= cargo
export PIP_DISABLE_PIP_VERSION_CHECK = 1

.PHONY: help dev install-test test test-rust test-python lint codegen golden bench pure-wheel clean

help:
	@echo "make dev         editable install with the Rust extension and dev tools"
	@echo "make test        build, then: codegen/golden checks, cargo test, pytest on both backends"
	@echo "make lint        ruff, mypy --strict, cargo fmt --check, clippy -D warnings"
	@echo "make codegen     regenerate the kernel tables from native/"
	@echo "make golden      regenerate tests/golden/ from the pure kernel (review the diff!)"
	@echo "make bench       asv kernel benchmarks (see asv_bench/)"
	@echo "make pure-wheel  build the py3-none-any wheel (pure-Python kernel only)"

dev:
	$(PYTHON) -m pip install -e ".[dev]"

install-test:
	$(PYTHON) -m pip install ".[test]"

test: install-test test-rust test-python

test-rust:
	$(PYTHON) native/codegen.py --check
	$(PYTHON) tests/golden/generate.py --check
	# --release reuses the dependencies the wheel build just compiled (usearch's C++ above all).
	cd rust && $(CARGO) test --locked --release

# pytest runs once per backend: the kernel tests compare both backends in each run, and every
# test above the kernel runs on the backend MEMWIRE_BACKEND names.
test-python:
	MEMWIRE_REQUIRE_RUST=1 MEMWIRE_BACKEND=rust $(PYTHON) -m pytest
	MEMWIRE_BACKEND=python $(PYTHON) -m pytest

lint:
	$(PYTHON) -m pip install -q "ruff>=0.5" "mypy>=1.10"
	$(PYTHON) -m ruff check python tests native asv_bench scripts benchmarks
	$(PYTHON) -m ruff format --check python tests native asv_bench scripts benchmarks
	$(PYTHON) -m mypy
	cd rust && $(CARGO) fmt --all --check
	cd rust && $(CARGO) clippy --locked --all-targets -- -D warnings

codegen:
	$(PYTHON) native/codegen.py

golden:
	$(PYTHON) tests/golden/generate.py

bench:
	cd asv_bench && asv machine --yes >/dev/null && asv run --python=same --quick --show-stderr

pure-wheel:
	$(PYTHON) scripts/build_pure_wheel.py

clean:
	rm -rf rust/target dist build .pytest_cache .mypy_cache .ruff_cache
