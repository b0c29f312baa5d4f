#!/usr/bin/env bash
# Create the durable-runner benchmark venv (.bench-venv-temporal): temporalio's OpenAI Agents
# integration, pydantic-ai's Temporal durability and helikon (editable, `temporal` extra), for
# benchmarks/temporal.py.
# Usage (from anywhere): bash benchmarks/setup_temporal_env.sh
set -euo pipefail
cd "$(dirname "$0")/.."
uv venv --clear -p 3.11 .bench-venv-temporal
# --compile-bytecode: ship .pyc files so that no run pays for source compilation.
uv pip install --compile-bytecode --python .bench-venv-temporal/bin/python -r benchmarks/requirements-temporal.txt -e ".[temporal,sessions-sqlite]"
