"""A real HTTP server on 127.0.0.1 that speaks OpenAI's chat-completions stream, as a local one would.

It answers `POST /v1/chat/completions` with a recorded OpenAI stream (the SSE body of
`openai_chat/test_openai_moderation_stream.yaml`, a gpt-5 answer "Paris.") and keeps every
request it got, as Ollama, vLLM or llama.cpp would be reached. `chat_server` is its fixture.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from providers.cassettes import load

RECORDED = load("openai_chat/test_openai_moderation_stream.yaml")[0]


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class _Handler(BaseHTTPRequestHandler):
    """Answers `POST /v1/chat/completions` with the recorded stream; anything else is a 404."""

    server: ChatServer  # pyright: ignore[reportIncompatibleVariableOverride]  (socketserver types it as the base class)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.server.received.append(Received("POST", self.path, headers, json.loads(body) if body else None))
        if self.path == "/v1/chat/completions":
            status, content_type, payload = 200, RECORDED.headers["content-type"], RECORDED.body
        else:
            status, content_type, payload = 404, "application/json", b'{"error":"not found"}'
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # keep the test output quiet
        pass


class ChatServer(ThreadingHTTPServer):
    """A real HTTP server on 127.0.0.1 speaking the chat-completions stream, in a thread.

    A thread rather than the test's event loop, so sync callers (`helikon demo`, which
    starts its own loop) reach it too.
    """

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[Received] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    server = ChatServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
