"""Debian's Chromium for the browser benchmarks, started as the test suite starts it (`tests/browser.py`).

The flags keep Chromium off the network, which is closed here; the benchmarks only open
files and servers on 127.0.0.1. Playwright drives `/usr/bin/chromium` through
`executable_path`: `playwright install`, which downloads a browser, is never run.
"""

from __future__ import annotations

import shutil

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium_path() -> str:
    """Where Debian's Chromium is; exits saying how to install it when it is not."""
    found = shutil.which("chromium")
    if found is None:
        raise SystemExit("Debian's chromium is needed: run `make test-deps`")
    return found
