"""Real HTTP servers on loopback for the web tools' tests (threads of this process)."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

WEB_FIXTURES = Path(__file__).resolve().parents[4].parent / "shared" / "fixtures" / "web"

Route = Callable[["Handler"], None]


class Handler(BaseHTTPRequestHandler):
    server: Server  # pyright: ignore[reportIncompatibleVariableOverride]

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest's output clean
        pass

    def do_GET(self) -> None:
        self.server.hits.append((self.command, self.path, dict(self.headers.items()), b""))
        self.server.route(self)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        self.server.hits.append((self.command, self.path, dict(self.headers.items()), body))
        self.server.route(self)

    def send(self, status: int, body: bytes, content_type: str = "text/html", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    @property
    def query(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, route: Route, port: int = 0) -> None:
        super().__init__((host, port), Handler)
        self.route = route
        self.hits: list[tuple[str, str, dict[str, str], bytes]] = []

    @property
    def port(self) -> int:
        return self.server_address[1]


@contextmanager
def serve(route: Route, host: str = "127.0.0.1", port: int = 0) -> Iterator[Server]:
    server = Server(host, route, port)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def site(h: Handler) -> None:
    """The pages the fetch tests read: the saved articles, redirects, text, binary, big bodies."""
    path = urlsplit(h.path).path
    if path.startswith("/page/"):
        h.send(200, (WEB_FIXTURES / path.removeprefix("/page/")).read_bytes(), "text/html; charset=utf-8")
    elif path == "/secret":
        h.send(200, b"the internal secret", "text/plain")
    elif path == "/redirect":
        h.send(302, b"", Location=h.query["to"])
    elif path == "/loop":
        h.send(302, b"", Location="/loop")
    elif path == "/text":
        h.send(200, "plain text, not HTML: caf\u00e9".encode(), "text/plain; charset=utf-8")
    elif path == "/gzip":
        h.send(
            200, gzip.compress(b"<html><body><p>compressed body</p></body></html>"), Content_Encoding="gzip"
        )
    elif path == "/big":
        h.send(200, b"x" * 100_000, "text/plain")
    elif path == "/binary":
        h.send(200, b"\x89PNG\r\n\x1a\n" + bytes(100), "image/png")
    elif path == "/missing":
        h.send(404, b"not here", "text/plain")
    elif path == "/json":
        h.send(200, json.dumps({"ok": True}).encode(), "application/json")
    else:
        h.send(404, b"no such page", "text/plain")
