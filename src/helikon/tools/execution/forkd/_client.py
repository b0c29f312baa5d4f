"""The forkd controller's REST calls (the contract is `docs/tools-forkd.md`): fork, exec, destroy, list.

Each call translates what can go wrong at the boundary into one `ForkdError` whose message
says which call failed and what to check: an unreachable controller, a refused token (401),
an error body, a body that is not the contract's JSON, a late answer. The bearer token is
sent on every call and never appears in a message.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Self
from urllib.parse import urlsplit

from helikon.core._internal.extras import missing_extra
from helikon.core._internal.json_value import JsonObject, JsonValue
from helikon.core.exceptions import ToolError, UserError

from ..backend import ExecOutput

try:
    import httpx2
except ImportError as exc:  # pragma: no cover - the extra is installed in the suite
    raise missing_extra("ForkdBackend needs httpx2", "tools-microvm") from exc

_ERROR_TEXT = 300
"""Characters of a controller's error message kept in a `ForkdError`."""
_MAX_CONTROL_BODY = 8 << 20
"""Bytes read of a fork, destroy or list answer; a larger one is not the contract's."""
_SANDBOX_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class ForkdError(ToolError):
    """A forkd controller call failed, or the egress proxy failed its probe.

    Attributes:
        status_code: The controller's HTTP status, when it answered.
        code: The contract's error code (`unauthorized`, `not_found`, `snapshot_not_found`,
            `egress_unsupported`, ...), or one of the client's own: `unreachable`, `timeout`,
            `bad_response`, `egress_unreachable`.
    """

    def __init__(self, message: str, *, code: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.status_code = status_code


@dataclass(frozen=True, slots=True)
class Listed:
    """One sandbox from `GET /v1/sandboxes`; `age` is `None` when its timestamps are unusable."""

    id: str
    snapshot: str
    age: float | None


class ForkdClient:
    """One controller and token; `async with` it, so its connections are closed."""

    __slots__ = ("_client", "_control_timeout")

    def __init__(self, url: str, token: str, *, control_timeout: float) -> None:
        self._control_timeout = control_timeout
        # trust_env=False: the controller is reached directly, never through this process's
        # http_proxy (which may be the very egress proxy the guests are confined to).
        self._client = httpx2.AsyncClient(
            base_url=url,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=None,  # the deadline is `_call`'s, on the whole call
            trust_env=False,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._client.aclose()

    async def fork(self, snapshot: str, egress: JsonObject | None) -> str:
        body: JsonObject = {"snapshot": snapshot}
        if egress is not None:
            body["egress"] = egress
        data = await self._call("fork", "POST", "/v1/sandboxes", body, expect=(201, 200))
        sandbox_id = data.get("id")
        if not isinstance(sandbox_id, str) or _SANDBOX_ID.fullmatch(sandbox_id) is None:
            # The id goes into later URLs: a garbled one must not address something else.
            raise _bad_response("fork", f"no usable 'id' in the answer: {str(sandbox_id)[:100]!r}")
        return sandbox_id

    async def exec(
        self, sandbox_id: str, body: JsonObject, *, answer_within: float, max_body: int
    ) -> JsonObject:
        return await self._call(
            "exec",
            "POST",
            f"/v1/sandboxes/{sandbox_id}/exec",
            body,
            expect=(200,),
            within=answer_within,
            max_body=max_body,
        )

    async def destroy(self, sandbox_id: str) -> None:
        # 404: already gone (destroyed by a reaper, or never fully created); destroy is idempotent.
        await self._call("destroy", "DELETE", f"/v1/sandboxes/{sandbox_id}", None, expect=(204, 200, 404))

    async def list(self, snapshot: str) -> list[Listed]:
        data = await self._call(
            "list", "GET", "/v1/sandboxes", None, expect=(200,), params={"snapshot": snapshot}
        )
        entries = data.get("sandboxes")
        if not isinstance(entries, list):
            raise _bad_response("list", "no 'sandboxes' list in the answer")
        now = _timestamp(data.get("now"))
        listed: list[Listed] = []
        for entry in entries:
            if (
                not isinstance(entry, dict)
                or not isinstance(entry.get("id"), str)
                or (_SANDBOX_ID.fullmatch(str(entry["id"])) is None)
            ):
                raise _bad_response("list", f"a sandbox entry without an 'id': {str(entry)[:100]}")
            tag = entry.get("snapshot")
            created = _timestamp(entry.get("created_at"))
            age = (now - created).total_seconds() if now is not None and created is not None else None
            listed.append(Listed(id=str(entry["id"]), snapshot=tag if isinstance(tag, str) else "", age=age))
        return listed

    async def _call(
        self,
        what: str,
        method: str,
        path: str,
        body: JsonObject | None,
        *,
        expect: tuple[int, ...],
        params: dict[str, str] | None = None,
        within: float | None = None,
        max_body: int = _MAX_CONTROL_BODY,
    ) -> JsonObject:
        limit = self._control_timeout if within is None else within
        try:
            # A deadline on the whole call: httpx's timeouts bound each read, and a controller
            # that trickles bytes would never trip them.
            async with asyncio.timeout(limit):
                status, content = await self._send(method, path, body, params, max_body)
        except TimeoutError:
            raise ForkdError(
                f"forkd {what}: the controller did not answer within {limit:g} s", code="timeout"
            ) from None
        except httpx2.HTTPError as exc:
            raise ForkdError(
                f"forkd {what}: cannot reach the controller at {self._client.base_url}: "
                f"{exc or type(exc).__name__}; check the controller URL and that forkd is running",
                code="unreachable",
            ) from None
        if content is None:
            raise _bad_response(what, f"an answer over {max_body} bytes")
        if status not in expect:
            raise _status_error(what, status, content)
        if status in (204, 404) or method == "DELETE":
            return {}
        return _json_object(what, content)

    async def _send(
        self, method: str, path: str, body: JsonObject | None, params: dict[str, str] | None, max_body: int
    ) -> tuple[int, bytes | None]:
        """The status and body of one request; the body is None past `max_body` bytes."""
        async with self._client.stream(method, path, json=body, params=params) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > max_body:
                    return response.status_code, None
                chunks.append(chunk)
            return response.status_code, b"".join(chunks)


def _status_error(what: str, status: int, content: bytes) -> ForkdError:
    code, message = _error_body(content)
    if status == 401:
        return ForkdError(
            f"forkd {what}: the controller refused the bearer token (HTTP 401"
            f"{': ' + message if message else ''}); pass the controller's token to .bearer_token(...)",
            code=code or "unauthorized",
            status_code=status,
        )
    detail = f"{code}: {message}" if code and message else message or code or "no error body"
    return ForkdError(
        f"forkd {what}: the controller answered HTTP {status} ({detail})",
        code=code or ("controller_error" if status >= 500 else "rejected"),
        status_code=status,
    )


def _error_body(content: bytes) -> tuple[str, str]:
    """The contract's `{"error": {"code", "message"}}`, or ('', the text) for anything else."""
    text = content[:_ERROR_TEXT].decode("utf-8", "replace").strip()
    try:
        data: JsonValue = json.loads(content)
    except ValueError:
        return "", text
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        return (
            code if isinstance(code, str) else "",
            message[:_ERROR_TEXT] if isinstance(message, str) else "",
        )
    return "", text


def _json_object(what: str, content: bytes) -> JsonObject:
    try:
        data: JsonValue = json.loads(content)
    except ValueError:
        raise _bad_response(what, f"not JSON: {content[:100]!r}") from None
    if not isinstance(data, dict):
        raise _bad_response(what, f"a JSON {type(data).__name__}, not an object")
    return data


def _bad_response(what: str, detail: str) -> ForkdError:
    return ForkdError(
        f"forkd {what}: the controller's answer does not follow the contract ({detail}); "
        "see docs/tools-forkd.md",
        code="bad_response",
    )


def _timestamp(value: object) -> datetime | None:
    """An RFC 3339 timestamp with its offset; anything else (naive, missing, garbled) is None."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.utcoffset() is not None else None


def decode_stream(what: str, data: JsonObject, name: str) -> bytes:
    """The base64 `name` field of an exec answer (absent: empty)."""
    value = data.get(name, "")
    if not isinstance(value, str):
        raise _bad_response(what, f"{name!r} is not a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise _bad_response(what, f"{name!r} is not valid base64") from None


def exec_output(answer: JsonObject, cap: int, duration: float) -> ExecOutput:
    """The exec answer as an `ExecOutput`, checked against the contract and cut at `cap`."""
    stdout = decode_stream("exec", answer, "stdout_b64")
    stderr = decode_stream("exec", answer, "stderr_b64")
    exit_code, sig, timed_out = answer.get("exit_code"), answer.get("signal"), answer.get("timed_out", False)
    if not (exit_code is None or (isinstance(exit_code, int) and not isinstance(exit_code, bool))):
        raise ForkdError(
            f"forkd exec: 'exit_code' must be an int or null, not {exit_code!r}", code="bad_response"
        )
    if not (sig is None or (isinstance(sig, int) and not isinstance(sig, bool) and sig > 0)):
        raise ForkdError(
            f"forkd exec: 'signal' must be a positive int or null, not {sig!r}", code="bad_response"
        )
    if not isinstance(timed_out, bool):
        raise ForkdError(f"forkd exec: 'timed_out' must be a bool, not {timed_out!r}", code="bad_response")
    return ExecOutput(
        exit_code=None if timed_out or sig is not None else exit_code,
        stdout=stdout[:cap].decode("utf-8", "replace"),
        stderr=stderr[:cap].decode("utf-8", "replace"),
        # The cap is enforced here too: a controller that sends more is cut, not believed.
        stdout_truncated=answer.get("stdout_truncated") is True or len(stdout) > cap,
        stderr_truncated=answer.get("stderr_truncated") is True or len(stderr) > cap,
        timed_out=timed_out,
        signal=sig,
        duration=duration,
    )


def exec_body_limit(cap: int) -> int:
    """Bytes an exec answer may have: both streams at the cap in base64, and the rest of the JSON."""
    return 2 * 4 * -(-cap // 3) + 65536


def check_controller_url(url: object) -> str:
    parts = urlsplit(url) if isinstance(url, str) else None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
    ):
        raise UserError(
            f"ForkdBackend.builder({url!r}): give the controller's base URL, e.g. 'https://controller:8889'"
        )
    if parts.username or parts.password:
        raise UserError("ForkdBackend.builder(url): put the token in .bearer_token(...), not in the URL")
    return url.rstrip("/")  # type: ignore[union-attr]
