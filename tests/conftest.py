"""Shared fixtures: the suite never reaches off this machine."""

from __future__ import annotations

import os
import socket
from typing import Any

import pytest
from hypothesis import settings

# `chat_server`: a local OpenAI-compatible server; `spans`: the spans runs record, in memory.
pytest_plugins = ["local_chat_server", "recorded_spans"]

# The machines are shared and noisy: a wall-clock deadline per example only adds flakes.
settings.register_profile("helikon", deadline=None)
# CI replays the same examples on every run, so its verdict on a change is repeatable; a
# developer's runs keep exploring new ones (and a failure they find becomes a test).
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "helikon")


@pytest.fixture(autouse=True)
def _no_network_off_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any test that opens a connection to anything but 127.0.0.0/8 or ::1."""
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        loopback = isinstance(host, str) and (host.startswith("127.") or host in ("::1", "localhost"))
        if not loopback and self.family in (socket.AF_INET, socket.AF_INET6):
            raise AssertionError(f"test tried to reach {address!r}: tests may only use loopback")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
