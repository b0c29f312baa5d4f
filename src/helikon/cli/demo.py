"""`helikon demo`: the Quickstart budgeting assistant, on a live provider when a key is set."""

from __future__ import annotations

import asyncio
import runpy
import sys
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


def run_demo(model_string: str | None) -> int:
    """Run the Quickstart example; 0 on success, 2 for a model string that cannot be used."""
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
