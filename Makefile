# One set of targets for humans and CI alike (.ci/run calls `make test`, then `make lint`).
# PYTHON is your interpreter: `make dev` installs into it. `make test` and `make lint` never touch
# it: they build and install memwire into their own virtualenv, TEST_VENV (created from PYTHON
# when missing), so they test the installed package and leave an editable install alone.
PYTHON ?= python3
CARGO ?= cargo
TEST_VENV ?= .venv-test
TEST_PYTHON := $(TEST_VENV)/bin/python
# Exact versions of every dev tool (pytest, hypothesis, ruff, mypy, maturin...), as pip constraints.
PINS := requirements-dev.txt
# Extra pytest arguments for both passes, e.g. `make test-python PYTEST_ARGS="-x --durations=20"`.
PYTEST_ARGS ?=
export PIP_DISABLE_PIP_VERSION_CHECK = 1

.PHONY: help dev install-test test test-rust test-python lint codegen golden bench pure-wheel clean

help:
	@echo "make dev           editable install into PYTHON ($(PYTHON)): extension + pinned dev tools"
	@echo "make test          everything below, in $(TEST_VENV)/ (never touches PYTHON's packages):"
	@echo "  make install-test  build memwire and install it + pinned test tools into $(TEST_VENV)/"
	@echo "  make test-rust     codegen and golden checks, cargo test"
	@echo "  make test-python   pytest twice: all tests (Rust kernel), then the tests whose kernel"
	@echo "                     MEMWIRE_BACKEND picks (pure-Python kernel); PYTEST_ARGS=... for both"
	@echo "make lint          in $(TEST_VENV)/: ruff, mypy --strict, cargo fmt --check, clippy -D warnings"
	@echo "make codegen       regenerate the kernel tables from native/"
	@echo "make golden        regenerate tests/golden/ from the pure kernel (review the diff!)"
	@echo "make bench         asv kernel benchmarks (see asv_bench/)"
	@echo "make pure-wheel    build the py3-none-any wheel (pure-Python kernel only)"
	@echo "make wheels        dist/: manylinux_2_28 wheels (x86_64, aarch64; WHEEL_ARCHS=...), sdist, pure wheel"
	@echo "make wheel-checks  the built wheels: aarch64 under QEMU, x86_64 on CPython 3.11-3.13, pure;"
	@echo "                   the sdist built from source (Rust + C++) and tested"
	@echo "make clean         remove build outputs, caches and $(TEST_VENV)/"
	@echo "Tool versions: $(PINS) (one file for dev, test and lint)."

# maturin first, from the pins, so the build below uses it (no isolated build env with whatever
# maturin is newest); then the package, its dependencies and the tools of [dev].
dev:
	$(PYTHON) -m pip install -c $(PINS) maturin
	$(PYTHON) -m pip install -c $(PINS) --no-build-isolation -e ".[dev]"

$(TEST_PYTHON):
	$(PYTHON) -m venv $(TEST_VENV)

# A regular (non-editable) install: the tests import memwire from site-packages, as users do.
# The build reuses rust/target, so an unchanged tree rebuilds in seconds.
install-test: $(TEST_PYTHON)
	$(TEST_PYTHON) -m pip install -q -c $(PINS) maturin
	$(TEST_PYTHON) -m pip install -q -c $(PINS) --no-build-isolation ".[test]"

test: install-test test-rust test-python

test-rust: install-test
	$(TEST_PYTHON) native/codegen.py --check
	$(TEST_PYTHON) tests/golden/generate.py --check
	# --release reuses the dependencies the wheel build just compiled (usearch's C++ above all).
	cd rust && $(CARGO) test --locked --release

# pytest runs twice (tests/conftest.py, "Two passes"). The first pass runs every test, with the
# Rust kernel wherever MEMWIRE_BACKEND decides. The second, with the pure-Python kernel, runs only
# the tests whose kernel MEMWIRE_BACKEND decides: a test marked both_kernels already covered both
# kernels in the first pass, one marked backend_independent runs no kernel MEMWIRE_BACKEND picks.
# tests/test_passes.py checks that every test runs in at least one of the two passes below.
# MEMWIRE_TEST_INSTALLED=1: conftest refuses to run on a memwire imported from the source tree.
SECOND_PASS := not both_kernels and not backend_independent
test-python: install-test
	MEMWIRE_TEST_INSTALLED=1 MEMWIRE_REQUIRE_RUST=1 MEMWIRE_BACKEND=rust \
	  $(TEST_PYTHON) -m pytest $(PYTEST_ARGS)
	MEMWIRE_TEST_INSTALLED=1 MEMWIRE_BACKEND=python \
	  $(TEST_PYTHON) -m pytest -m "$(SECOND_PASS)" $(PYTEST_ARGS)

# Runs in TEST_VENV: mypy type-checks against the dependencies installed there.
lint: install-test
	$(TEST_PYTHON) -m pip install -q -c $(PINS) ruff mypy
	$(TEST_PYTHON) -m ruff check python tests native asv_bench scripts benchmarks
	$(TEST_PYTHON) -m ruff format --check python tests native asv_bench scripts benchmarks
	$(TEST_PYTHON) -m mypy
	# The extension's stub (_native.pyi) against the installed build; no allowlist.
	$(TEST_PYTHON) -m mypy.stubtest memwire._kernel._native
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

# Release artefacts into dist/ (scripts/build_wheels.py): the manylinux_2_28 wheels, cross-compiled
# with zig on any linux x86_64 (no container), each checked by auditwheel; the sdist; the pure
# wheel. The build tools go into TEST_VENV, never into PYTHON.
WHEEL_ARCHS ?= x86_64 aarch64
WHEEL_TOOLS := "ziglang==0.15.2" "auditwheel==6.8.2"
# Reads cibuildwheel.toml for scripts/check_cibuildwheel.py (through its internals: pinned).
CIBUILDWHEEL := "cibuildwheel==4.3.5"
.PHONY: wheels wheel-checks
wheels: $(TEST_PYTHON)
	$(TEST_PYTHON) -m pip install -q -c $(PINS) maturin $(WHEEL_TOOLS)
	$(TEST_PYTHON) scripts/build_wheels.py $(addprefix --arch ,$(WHEEL_ARCHS))

# First the release pipeline's config as cibuildwheel reads it: every Linux and macOS build
# identifier tests with the Rust kernel forced (nothing here can run those builds). Then what
# `make wheels` built, run where it can run here, each in its own virtualenv: the aarch64 wheel
# under QEMU (import, backend_info, the parity suite with its golden vectors); the x86_64 wheel's
# whole suite on CPython 3.11 and the parity, backend and packaging tests on 3.12 and 3.13; the
# pure wheel's whole suite with MEMWIRE_BACKEND=python, where no extension exists; the sdist,
# built from source by pip on 3.13 (Rust + C++), then the same tests as on 3.12 and 3.13.
# File names start with the distribution name (pyproject's memwire-agent-memory, PEP 427 form).
DIST := dist/memwire_agent_memory
wheel-checks: $(TEST_PYTHON)
	$(TEST_PYTHON) -m pip install -q $(CIBUILDWHEEL)
	$(TEST_PYTHON) scripts/check_cibuildwheel.py
	$(PYTHON) scripts/emulated_check.py $(DIST)-*-manylinux_2_28_aarch64.whl
	$(PYTHON) scripts/wheel_matrix.py $(DIST)-*-manylinux_2_28_x86_64.whl --python 3.11 -- tests
	$(PYTHON) scripts/wheel_matrix.py $(DIST)-*-manylinux_2_28_x86_64.whl \
	  --python 3.12 --python 3.13
	$(PYTHON) scripts/wheel_matrix.py $(DIST)-*-py3-none-any.whl --python 3.11
	$(PYTHON) scripts/wheel_matrix.py $(DIST)-*.tar.gz --python 3.13

clean:
	rm -rf rust/target dist build .pytest_cache .mypy_cache .ruff_cache $(TEST_VENV)
