"""What requests carry, read strictly: bodies with a size limit, run requests, decisions, session ids.

Each reader raises `ApiError(4xx)` naming the field and what it must be, before anything
runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from pydantic import ValidationError
from starlette.requests import Request

from ..core.approvals import Approve, Decision, Deny, Edit
from ..core.input import RunInput
from ..core.items import ITEM_ADAPTER, Item
from .errors import ApiError

Strategy = Literal["enqueue", "reject", "interrupt", "rollback"]
OnDisconnect = Literal["cancel", "continue"]
STRATEGIES: tuple[Strategy, ...] = ("enqueue", "reject", "interrupt", "rollback")
ON_DISCONNECT: tuple[OnDisconnect, ...] = ("cancel", "continue")

# Message tags other agent APIs use (`user_message`...), beside helikon's own item tags.
_MESSAGE_TAGS = {"user_message": "user", "assistant_message": "assistant", "system_message": "system"}
# A session id is a header value and a key in every backend: printable, no spaces, bounded.
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@~-]{0,127}")  # `~`: a fork's default id


@dataclass(frozen=True, slots=True)
class RunRequest:
    """A `POST /agents/{name}/runs` body, read."""

    input: RunInput
    multitask_strategy: Strategy
    on_disconnect: OnDisconnect | None
    """None: the mode's default (cancel for one-shot and SSE, continue for async)."""


async def read_json(request: Request, limit: int) -> Any:
    """The body as JSON; 413 past `limit` bytes, 400 when it is not JSON."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, "body_too_large", f"the body is over this server's limit of {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, "body_too_large", f"the body is over this server's limit of {limit} bytes")
    if not body:
        raise ApiError(400, "invalid_json", "the body is empty: send a JSON object")
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, "invalid_json", f"the body is not JSON ({exc})") from None


def run_request(body: Any) -> RunRequest:
    """A run request from its JSON: `input` (text) or `messages` (items), and the per-request options."""
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_request", "the body must be a JSON object with `input` or `messages`")
    fields = cast("dict[str, Any]", body)
    unknown = sorted(set(fields) - {"input", "messages", "multitask_strategy", "on_disconnect"})
    if unknown:
        raise ApiError(
            400,
            "invalid_request",
            f"unknown field {unknown[0]!r}: a run takes input or messages, multitask_strategy, on_disconnect",
        )
    if ("input" in fields) == ("messages" in fields):
        raise ApiError(
            400, "invalid_request", "give exactly one of `input` (text) or `messages` (a list of items)"
        )
    run_input: RunInput
    if "input" in fields:
        if not isinstance(fields["input"], str) or not fields["input"]:
            raise ApiError(400, "invalid_request", "`input` must be a non-empty string")
        run_input = fields["input"]
    else:
        run_input = _messages(fields["messages"])
    return RunRequest(
        run_input,
        _choice(fields.get("multitask_strategy", "enqueue"), "multitask_strategy", STRATEGIES),
        None
        if fields.get("on_disconnect") is None
        else _choice(fields["on_disconnect"], "on_disconnect", ON_DISCONNECT),
    )


def _messages(value: Any) -> list[Item]:
    if not isinstance(value, list) or not value:
        raise ApiError(400, "invalid_request", "`messages` must be a non-empty list of items")
    items: list[Item] = []
    for index, raw in enumerate(cast("list[Any]", value)):
        if isinstance(raw, dict) and cast("dict[str, Any]", raw).get("type") in _MESSAGE_TAGS:
            raw = {**cast("dict[str, Any]", raw), "type": _MESSAGE_TAGS[cast("dict[str, Any]", raw)["type"]]}
        try:
            items.append(ITEM_ADAPTER.validate_python(raw))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            why = f"{where}: {error['msg']}" if where else error["msg"]
            raise ApiError(
                400,
                "invalid_request",
                f"messages[{index}] is not an item ({why}); e.g. "
                '{"type": "user_message", "content": [{"type": "text", "text": "..."}]}',
            ) from None
    return items


def _choice(value: Any, name: str, allowed: tuple[Any, ...]) -> Any:
    if value not in allowed:
        raise ApiError(400, "invalid_request", f"`{name}` must be one of {', '.join(allowed)}, not {value!r}")
    return value


def session_id(headers: Mapping[str, str]) -> str | None:
    """The `X-Session-Id` header, checked (None without one)."""
    value = headers.get("x-session-id")
    if value is None:
        return None
    return check_session_id(value)


def check_session_id(value: str) -> str:
    """`value` if it is a valid session id; 400 otherwise."""
    if not _SESSION_ID.fullmatch(value):
        raise ApiError(
            400,
            "invalid_session_id",
            "a session id is 1 to 128 letters, digits and . _ : @ ~ -, starting with a letter or digit",
        )
    return value


def seq_field(body: Any, name: str, *, required: bool = True) -> int | None:
    """The integer field `name` of a JSON object body (an event's seq, >= -1)."""
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_request", f"the body must be a JSON object with `{name}`")
    value = cast("dict[str, Any]", body).get(name)
    if value is None and not required:
        return None
    if isinstance(value, float) and value.is_integer():  # JSON's 7.0 is the integer 7
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < -1:
        raise ApiError(400, "invalid_request", f"`{name}` must be an event's seq (an integer >= -1)")
    return value


def decisions(body: Any) -> tuple[dict[str, Decision], bool]:
    """`{"decisions": {request_id: {"decision": "approve"|"deny"|"edit", ...}}, "deny_rest": bool}`, read."""
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_request", "the body must be a JSON object with `decisions`")
    fields = cast("dict[str, Any]", body)
    unknown = sorted(set(fields) - {"decisions", "deny_rest"})
    if unknown:
        raise ApiError(400, "invalid_request", f"unknown field {unknown[0]!r}: send decisions and deny_rest")
    raw = fields.get("decisions", {})
    deny_rest = fields.get("deny_rest", False)
    if not isinstance(raw, dict) or not isinstance(deny_rest, bool):
        raise ApiError(
            400, "invalid_request", "`decisions` must be an object by request id, `deny_rest` a boolean"
        )
    if not raw and not deny_rest:
        raise ApiError(400, "invalid_request", "decide at least one request, or send deny_rest: true")
    chosen: dict[str, Decision] = {}
    for request_id, one in cast("dict[str, Any]", raw).items():
        chosen[request_id] = _decision(request_id, one)
    return chosen, deny_rest


def _decision(request_id: str, one: Any) -> Decision:
    if not isinstance(one, dict):
        raise ApiError(400, "invalid_request", f"decisions[{request_id!r}] must be an object with `decision`")
    fields = cast("dict[str, Any]", one)
    kind, digest = fields.get("decision"), fields.get("digest")
    if digest is not None and not isinstance(digest, str):
        raise ApiError(400, "invalid_request", f"decisions[{request_id!r}].digest must be a string")
    allowed = {"approve": {"decision", "digest"}, "deny": {"decision", "digest", "reason"}}
    allowed["edit"] = {"decision", "digest", "args"}
    if kind not in allowed:
        raise ApiError(
            400,
            "invalid_request",
            f"decisions[{request_id!r}].decision must be approve, deny or edit, not {kind!r}",
        )
    extra = sorted(set(fields) - allowed[kind])
    if extra:
        raise ApiError(400, "invalid_request", f"decisions[{request_id!r}]: {kind} takes no {extra[0]!r}")
    if kind == "approve":
        return Approve(digest)
    if kind == "deny":
        reason = fields.get("reason", "")
        if not isinstance(reason, str):
            raise ApiError(400, "invalid_request", f"decisions[{request_id!r}].reason must be a string")
        return Deny(reason, digest)
    if "args" not in fields:
        raise ApiError(400, "invalid_request", f"decisions[{request_id!r}]: edit needs `args`")
    return Edit(fields["args"], digest)


__all__ = ["ON_DISCONNECT", "STRATEGIES", "OnDisconnect", "RunRequest", "Strategy", "decisions", "read_json"]
