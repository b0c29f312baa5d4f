from __future__ import annotations

import argparse
import asyncio
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import helikon

_EXAMPLE = "budget_assistant.py"


def _example_path() -> Path:
    """The Quickstart example: packaged in a wheel, or the repository's `examples/` in a checkout."""
    packaged = Path(helikon.__file__).parent / "_examples" / _EXAMPLE
    if packaged.exists():
        return packaged
    return Path(helikon.__file__).resolve().parents[2] / "examples" / _EXAMPLE


def _demo() -> int:
    path = _example_path()
    if not path.exists():
        print(f"helikon demo: the example is missing ({path}); reinstall paigasus-helikon", file=sys.stderr)
        return 2
    example: dict[str, Any] = runpy.run_path(str(path), run_name="helikon_demo")
    return int(asyncio.run(example["main"]()))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `helikon` console script."""
    parser = argparse.ArgumentParser(prog="helikon", description="Build agentic AI systems in Python.")
    parser.add_argument("--version", action="version", version=f"helikon {helikon.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("demo", help="run the Quickstart budgeting assistant (scripted without an API key)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return _demo()
    parser.print_help()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
