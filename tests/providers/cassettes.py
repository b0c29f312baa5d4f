"""Replay recorded provider HTTP traffic (vcrpy YAML cassettes) under the official SDKs.

`ReplayTransport(path)` is an `httpx2` transport: pass `httpx2.AsyncClient(transport=...)`
as the SDK's `http_client`. It answers each request with the next recorded response whose
method and path match, in recording order, and keeps every request it saw (`requests`)
so tests can assert the body the adapter built. Handles the formats described in
`shared/fixtures/cassettes/INDEX.md`: pydantic-ai's decoded `parsed_body`, gzip
`!!binary` bodies, SSE strings and binary event streams.

`ReplayServer(interactions)` serves the same recordings from a real HTTP server on
127.0.0.1, for code that builds its own client (a model made from an API key in the
environment): point the SDK's base-URL variable at `server.url`.
"""

from __future__ import annotations

import gzip
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import httpx2
import yaml

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "cassettes"


@dataclass
class Interaction:
    method: str
    path: str
    request_body: Any
    status: int
    headers: dict[str, str]
    body: bytes


def _body_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body).encode()


def _headers(raw: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in (raw or {}).items():
        if isinstance(value, list):
            value = value[0] if value else ""
        if isinstance(value, bytes):
            value = value.decode(errors="replace")
        out[str(key).lower()] = str(value)
    return out


def load(path: str | Path) -> list[Interaction]:
    """The interactions of a cassette (a path relative to the fixtures folder, or absolute)."""
    full = Path(path) if Path(path).is_absolute() else FIXTURES / path
    data = yaml.load(full.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    out: list[Interaction] = []
    for item in data["interactions"]:
        request, response = item["request"], item["response"]
        if "parsed_body" in request:
            request_body: Any = request["parsed_body"]
        else:
            raw = request.get("body")
            raw = raw.get("string") if isinstance(raw, dict) else raw
            try:
                request_body = json.loads(raw) if raw else None
            except (TypeError, ValueError):
                request_body = raw
        headers = _headers(response.get("headers"))
        if "parsed_body" in response:
            body = json.dumps(response["parsed_body"]).encode()
        else:
            raw_body = response.get("body", {})
            body = _body_bytes(raw_body.get("string") if isinstance(raw_body, dict) else raw_body)
        if headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        headers.pop("content-encoding", None)
        headers.pop("content-length", None)
        headers.pop("transfer-encoding", None)
        out.append(
            Interaction(
                method=request["method"].upper(),
                path=urlsplit(request["uri"]).path,
                request_body=request_body,
                status=int(response["status"]["code"]),
                headers=headers,
                body=body,
            )
        )
    return out


@dataclass
class ReplayTransport(httpx2.AsyncBaseTransport):
    """Serves a cassette's responses in order; records the requests it was sent."""

    interactions: list[Interaction]
    requests: list[httpx2.Request] = field(default_factory=lambda: [])

    @classmethod
    def from_cassette(cls, path: str | Path) -> ReplayTransport:
        return cls(load(path))

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        await request.aread()
        self.requests.append(request)
        for index, interaction in enumerate(self.interactions):
            if interaction.method == request.method and request.url.path.endswith(
                interaction.path.split("/v1")[-1]
            ):
                del self.interactions[index]
                return httpx2.Response(
                    interaction.status, headers=interaction.headers, content=interaction.body, request=request
                )
        raise AssertionError(f"no recorded response left for {request.method} {request.url}")

    def sent_json(self, index: int = -1) -> Any:
        """The JSON body of the `index`-th request sent."""
        return json.loads(self.requests[index].content)


def endpoint(path: str) -> str:
    """The operation a request path names, without the model id in it.

    `/v1/chat/completions` -> `completions`, `/v1beta/models/gemini-2.5-flash:streamGenerateContent`
    -> `streamGenerateContent`, `/model/amazon.nova-micro-v1%3A0/converse-stream` -> `converse-stream`:
    a recording then answers the same call made for another model.
    """
    return urlsplit(path).path.rsplit("/", 1)[-1].rsplit(":", 1)[-1]


@dataclass
class Received:
    """One request the server got."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class _Handler(BaseHTTPRequestHandler):
    server: ReplayServer  # pyright: ignore[reportIncompatibleVariableOverride]  (socketserver types it as the base class)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        received = Received(
            "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length)
        )
        status, headers, body = self.server.answer(received)
        self.send_response(status)
        for name, value in headers.items():
            if name != "connection":  # one connection per request, whatever was recorded
                self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # keep the test output quiet
        pass


class ReplayServer(ThreadingHTTPServer):
    """Recorded responses from a real HTTP server on 127.0.0.1, in a thread.

    Each request gets the next unused recording of the same method and `endpoint`; one with
    no recording left gets a 599 and is kept in `unanswered`, so the test can name it. A
    thread rather than the test's event loop, so synchronous callers (`run_sync`) reach it.
    """

    def __init__(self, interactions: list[Interaction]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.interactions = list(interactions)
        self.received: list[Received] = []
        self.unanswered: list[Received] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def answer(self, request: Received) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.received.append(request)
            for index, interaction in enumerate(self.interactions):
                if interaction.method == request.method and endpoint(interaction.path) == endpoint(
                    request.path
                ):
                    del self.interactions[index]
                    return interaction.status, interaction.headers, interaction.body
            self.unanswered.append(request)
        return 599, {"content-type": "application/json"}, b'{"error": "no recorded response left"}'

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join()
