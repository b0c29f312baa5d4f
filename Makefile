# One-liners over uv. The README and .ci/run call these same targets.
.PHONY: install test-deps format lint typecheck test bench demo

UV ?= uv

install:
	# Byte-compiled, dependencies too (as pip installs them; uv does not by default):
	# PYTHONDONTWRITEBYTECODE may be set, and import time matters (typing_extensions alone
	# takes ~50 ms to compile at every import).
	$(UV) sync --locked --all-extras --compile-bytecode
	$(UV) run python -m compileall -q src

# System packages the suite needs (server binaries); installs only what is missing.
test-deps:
	bash scripts/test-deps.sh

format:
	$(UV) run ruff format src tests examples benchmarks
	$(UV) run ruff check --fix src tests examples benchmarks

lint:
	$(UV) run ruff check src tests examples benchmarks
	$(UV) run ruff format --check src tests examples benchmarks

typecheck:
	$(UV) run pyright

# The floor under helikon/core's test coverage (line and branch), a little under what the
# suite measures (95.8% on 2026-12-01): `make test` fails when core's coverage drops below it.
CORE_COVERAGE_FLOOR ?= 94

test: test-deps install lint typecheck
	$(UV) run pytest --cov --cov-report=
	$(UV) run coverage report --include='*/helikon/core/*' --fail-under=$(CORE_COVERAGE_FLOOR)

demo:
	$(UV) run --extra cli helikon demo

bench:
	bash benchmarks/setup_env.sh
	.bench-venv/bin/python benchmarks/loop_overhead.py
