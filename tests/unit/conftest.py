"""Fixtures the file-tool tests share: an empty `root` directory and a `Sandbox` opened on it.

A test module that needs another layout (the escape corpus puts an `outside` beside the root)
defines its own `root` or `sandbox`, which takes precedence over these.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helikon.tools import Sandbox


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty directory for a sandbox root."""
    made = tmp_path / "root"
    made.mkdir()
    return made


@pytest.fixture
def sandbox(root: Path) -> Iterator[Sandbox]:
    """A `Sandbox` open on `root`, closed after the test."""
    with Sandbox.open(root) as opened:
        yield opened
