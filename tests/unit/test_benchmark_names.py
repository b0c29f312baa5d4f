"""No benchmark script shadows a module: run as a script, `benchmarks/` is first on `sys.path`.

`benchmarks/mcp.py` once hid the MCP SDK from every script there, so `loop_overhead.py`
could not import openai-agents (which imports `mcp`). Checked against what this environment
installs (the benchmark venv adds the peers, which import the same SDKs).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

# In a fresh interpreter (pytest puts the test folders on sys.path): which names import as something.
FIND = "import importlib.util as u, json, sys; print(json.dumps([n for n in sys.argv[1:] if u.find_spec(n)]))"


def test_no_benchmark_script_is_named_like_an_importable_module() -> None:
    scripts = sorted(path.stem for path in BENCHMARKS.glob("*.py"))
    assert "loop_overhead" in scripts
    found = subprocess.run(
        [sys.executable, "-I", "-c", FIND, *scripts], capture_output=True, text=True, check=True
    )
    shadowing = sorted(
        {*json.loads(found.stdout), *(name for name in scripts if name in sys.stdlib_module_names)}
    )
    assert shadowing == [], f"rename benchmarks/{shadowing[0]}.py: it hides the module of that name"
