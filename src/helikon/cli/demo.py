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


def _demo(model_string: str | None) -> int:
    path = _example_path()
    if not path.exists():
        print(f"helikon demo: the example is missing ({path}); reinstall paigasus-helikon", file=sys.stderr)
        return 2
    model: helikon.Model | None = None
    if model_string is not None:
        try:
            model = helikon.resolve_model(model_string)
            # Built now, not at the first model call, so a missing key or extra is reported
            # before the demo starts instead of as a failed run.
            if isinstance(model, helikon.LazyModel):
                model.build()
        except (helikon.UserError, ImportError) as exc:
            print(f"helikon demo: {exc}", file=sys.stderr)
            return 2
        print(f"Running on {model_string} (--model).\n")
    example: dict[str, Any] = runpy.run_path(str(path), run_name="helikon_demo")
    return int(asyncio.run(example["main"](model)))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `helikon` console script."""
    parser = argparse.ArgumentParser(prog="helikon", description="Build agentic AI systems in Python.")
    parser.add_argument("--version", action="version", version=f"helikon {helikon.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="run the Quickstart budgeting assistant (scripted without an API key)",
        description="Run the Quickstart budgeting assistant: on --model if given, else on the first "
        "provider whose key is set (OpenAI, Anthropic, Gemini, AWS Bedrock), else on the built-in "
        "scripted model.",
    )
    demo.add_argument(
        "--model",
        metavar="MODEL",
        help="a model string, e.g. openai:gpt-5-mini, anthropic:claude-sonnet-4-6, "
        "openai-compatible:llama3.2@http://localhost:8000/v1; "
        f"prefixes: {', '.join(helikon.model_prefixes())}",
    )
    args = parser.parse_args(argv)
    if args.command == "demo":
        return _demo(args.model)
    parser.print_help()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
