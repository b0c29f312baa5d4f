"""Replay recorded provider HTTP traffic (vcrpy YAML cassettes) under the official SDKs.

`ReplayTransport(path)` is an `httpx2` transport: pass `httpx2.AsyncClient(transport=...)`
as the SDK's `http_client`. It answers each request with the next recorded response whose
method and path match, in recording order, and keeps every request it saw (`requests`)
so tests can assert the body the adapter built. Handles the formats described in
`shared/fixtures/cassettes/INDEX.md`: pydantic-ai's decoded `parsed_body`, gzip
`!!binary` bodies, SSE strings and binary event streams.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
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
