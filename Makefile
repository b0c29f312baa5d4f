# One-liners over uv. The README and .ci/run call these same targets.
.PHONY: install format lint typecheck test bench demo

UV ?= uv

install:
	$(UV) sync --locked --all-extras

format:
	$(UV) run ruff format src tests examples
	$(UV) run ruff check --fix src tests examples

lint:
	$(UV) run ruff check src tests examples
	$(UV) run ruff format --check src tests examples

typecheck:
	$(UV) run pyright

test: install lint typecheck
	$(UV) run pytest

demo:
	$(UV) run helikon demo

bench:
	bash benchmarks/setup_env.sh
	.bench-venv/bin/python benchmarks/loop_overhead.py
