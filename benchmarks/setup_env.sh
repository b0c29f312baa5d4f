#!/usr/bin/env bash
# Create the benchmark venv (.bench-venv) with the peer frameworks and helikon (editable).
# Usage (from anywhere): bash benchmarks/setup_env.sh
# (benchmarks/agentcore.py has a venv of its own, .bench-venv-agentcore: benchmarks/setup_agentcore_env.sh.)
set -euo pipefail
cd "$(dirname "$0")/.."
uv venv --clear -p 3.11 .bench-venv
# --compile-bytecode: ship .pyc files so import-time numbers are not source-compilation times
# (some environments set PYTHONDONTWRITEBYTECODE=1, which would otherwise leave none).
# The `cli` extra gives `.bench-venv/bin/helikon` what it needs to run (benchmarks/cli.py times it).
uv pip install --compile-bytecode --python .bench-venv/bin/python -r benchmarks/requirements.txt -e ".[sessions-sqlite,sessions-postgres,sessions-redis,otel,openai,anthropic,gemini,bedrock,mcp,evals,server,cli]"
# The eval peer for benchmarks/evals.py. pydantic-evals' newest release (2.62.0) pins the
# pydantic-ai-slim of its own release, older than the one pinned above for the loop benchmark;
# it imports and runs on that one, so it is installed without its pins.
uv pip install --compile-bytecode --python .bench-venv/bin/python --no-deps "pydantic-evals==2.62.0"
