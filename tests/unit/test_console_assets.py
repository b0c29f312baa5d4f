"""The console's files: within the size budget, all listed, nothing inline or from elsewhere."""

from __future__ import annotations

import gzip
import re

from helikon.server.console import ASSETS, POLICY, UI

BUDGET = 300 * 1024  # gzipped, the whole console


def test_the_console_fits_its_size_budget() -> None:
    total = sum(len(gzip.compress(path.read_bytes())) for path in UI.iterdir() if path.is_file())
    assert 0 < total <= BUDGET, f"the console is {total} bytes gzipped; the budget is {BUDGET}"


def test_every_file_is_served_and_nothing_comes_from_elsewhere() -> None:
    assert {path.name for path in UI.iterdir() if path.is_file()} == {*ASSETS, "index.html"}
    page = (UI / "index.html").read_text(encoding="utf-8")
    assert not re.search(r"<script(?![^>]*\bsrc=)", page)  # no inline script: the policy forbids it
    for path in UI.iterdir():
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), path.name
        assert "innerHTML" not in text and "insertAdjacentHTML" not in text, path.name  # text stays text
    assert "script-src 'self'" in POLICY and "'unsafe-inline'" not in POLICY
