#!/usr/bin/env bash
# Create the AgentCore benchmark venv (.bench-venv-agentcore): AWS's bedrock-agentcore SDK and
# helikon (editable, `agentcore` extra), for benchmarks/agentcore.py.
# Usage (from anywhere): bash benchmarks/setup_agentcore_env.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# A venv of its own: bedrock-agentcore pins pydantic<2.41.3, which .bench-venv's peers do not
# share (see benchmarks/requirements-agentcore.txt).
uv venv --clear -p 3.11 .bench-venv-agentcore
# --compile-bytecode: ship .pyc files so cold-start numbers are not source-compilation times
# (some environments set PYTHONDONTWRITEBYTECODE=1, which would otherwise leave none).
uv pip install --compile-bytecode --python .bench-venv-agentcore/bin/python -r benchmarks/requirements-agentcore.txt -e ".[agentcore]"
