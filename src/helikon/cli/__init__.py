"""The `helikon` command: `helikon --version`, `helikon demo`."""

from ._main import main

__all__ = ["main"]
