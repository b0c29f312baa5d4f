"""Headless Debian Chromium for the suite's browser tests, driven by Playwright.

Playwright drives the system's `/usr/bin/chromium` (`make test-deps` installs Debian's
`chromium`) through `executable_path`: `playwright install`, which downloads a browser,
is never run. The flags keep Chromium off the network: this machine's is closed, and a
browser test only ever opens files and servers on 127.0.0.1.

The browser benchmarks start Chromium with these same flags (`benchmarks/headless_chromium.py`
re-exports `FLAGS` and `chromium_path` from here).

Screenshots and other things a person may want to look at after a run go to `ARTIFACTS`
(`test-artifacts/` at the checkout's root, not committed).
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"

FLAGS = (
    "--headless",
    "--no-sandbox",  # the suite may run as root, where Chromium's own sandbox refuses to start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium_path() -> str:
    """Where Debian's Chromium is; an error that says how to install it when it is not."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise RuntimeError(
            "the browser tests need Debian's chromium: run `make test-deps` (apt-get install chromium)"
        )
    return found


@asynccontextmanager
async def browser_page(
    width: int = 1400, height: int = 900, *, allow: tuple[str, ...] = ()
) -> AsyncIterator[Any]:
    """A fresh page in a new headless Chromium; page errors and console errors fail the test at exit.

    `allow`: console errors the test expects (substrings of their text), e.g. a refused request.

    The async API, on the test's own loop: leaving it waits until Playwright's driver
    process has exited (the sync API's own loop can close first, and a driver reaped later
    warns in whatever test runs then).
    """
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium_path(), args=list(FLAGS))
        try:
            page = await browser.new_page(viewport={"width": width, "height": height})
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))

            def console(message: Any) -> None:
                if message.type == "error":  # with where it came from: a failed load names its URL
                    errors.append(f"{message.text} ({message.location.get('url', '')})")

            page.on("console", console)
            yield page
            unexpected = [error for error in errors if not any(part in error for part in allow)]
            assert not unexpected, f"the page reported errors: {unexpected}"
        finally:
            await browser.close()


def artifact(name: str) -> Path:
    """A path in `ARTIFACTS` for a file named `name` (the folder is made)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / name
