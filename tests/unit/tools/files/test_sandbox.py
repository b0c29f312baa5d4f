"""`Sandbox.open(root)`: the directory capability the ready-made tools are confined to."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helikon import UserError
from helikon.tools import Sandbox


def test_the_root_is_the_real_directory_opened(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with Sandbox.open(tmp_path / "link") as sandbox:
        assert sandbox.root == (tmp_path / "real").resolve()
        assert os.path.samestat(os.fstat(sandbox.fd), os.stat(tmp_path / "real"))


def test_the_sandbox_stays_on_the_directory_it_opened_when_the_path_moves(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "kept.txt").write_text("kept")
    with Sandbox.open(tmp_path / "root") as sandbox:
        (tmp_path / "root").rename(tmp_path / "moved")
        (tmp_path / "root").mkdir()  # an impostor at the old path
        assert os.listdir(f"/proc/self/fd/{sandbox.fd}") == ["kept.txt"]


def test_a_missing_root_or_a_file_is_refused_with_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such directory; create it first"):
        Sandbox.open(tmp_path / "nowhere")
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="not a directory"):
        Sandbox.open(tmp_path / "file")


def test_a_closed_sandbox_says_so(tmp_path: Path) -> None:
    sandbox = Sandbox.open(tmp_path)
    sandbox.close()
    sandbox.close()  # twice is fine
    assert sandbox.closed and "(closed)" in repr(sandbox)
    with pytest.raises(UserError, match="is closed: open a new Sandbox"):
        _ = sandbox.fd
