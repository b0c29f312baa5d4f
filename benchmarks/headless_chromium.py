"""Debian's Chromium for the browser benchmarks, started as the test suite starts it.

One home for the flags and the lookup: `tests/browser.py`, re-exported here. The flags keep
Chromium off the network, which is closed here; the benchmarks only open files and servers on
127.0.0.1. Playwright drives `/usr/bin/chromium` through `executable_path`: `playwright
install`, which downloads a browser, is never run.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from browser import FLAGS, chromium_path

__all__ = ["FLAGS", "chromium_path"]
