"""`helikon init`: a runnable starter in which `repl`, `run` and `eval run` work at once."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

STARTER = Path(__file__).parent / "starter"
"""The starter's files, as `init` copies them (`gitignore` becomes `.gitignore`)."""


def write_starter(directory: Path) -> int:
    """Copy the starter into `directory` (made if missing); 1 without writing if a file would be replaced."""
    files = sorted(path for path in STARTER.rglob("*") if path.is_file() and "__pycache__" not in path.parts)
    targets = {path: directory / _target_name(path.relative_to(STARTER)) for path in files}
    existing = [target for target in targets.values() if target.exists()]
    if existing:
        names = ", ".join(str(path) for path in existing)
        print(
            f"helikon init: {names} already exist(s); nothing was written (pick an empty directory)",
            file=sys.stderr,
        )
        return 1
    for source, target in targets.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    where = "" if directory.absolute() == Path.cwd() else f"cd {directory} && "
    print(f"Wrote a starter in {directory}: agents.toml, a Lua tool, a scripted model and a dataset.")
    print(f"Try:  {where}helikon repl")
    print(f"      {where}helikon run 'How many words: the quick brown fox'")
    print(f"      {where}helikon eval run dataset.jsonl --agent assistant")
    return 0


def _target_name(relative: Path) -> Path:
    return relative.with_name(".gitignore") if relative.name == "gitignore" else relative


__all__ = ["STARTER", "write_starter"]
