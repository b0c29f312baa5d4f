"""Shared pieces of the OpenAI adapter: content, tools, response formats and error mapping."""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Sequence
from typing import Any, cast

import httpx2
import openai

from helikon.core.exceptions import (
    ContextLengthExceeded,
    ModelError,
    OtherModelError,
    RateLimited,
    Transport,
    Unavailable,
)
from helikon.core.items import ContentPart, ImagePart, TextPart, UrlSource
from helikon.core.model import ResponseFormat, ToolDef
from helikon.core.schema import strict as strict_schema

_CONTEXT_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
_UNAVAILABLE_CODES = frozenset({"server_error", "overloaded", "server_overloaded", "service_unavailable"})
_RATE_CODES = frozenset({"rate_limit_exceeded", "rate_limit_error"})


def parameters_schema(tool: ToolDef) -> dict[str, Any]:
    """The tool's arguments schema, rewritten for strict mode when the tool asks for it."""
    params = dict(tool.parameters)
    return strict_schema(params) if tool.strict else params


def format_schema(fmt: ResponseFormat) -> dict[str, Any]:
    """A json_schema format's schema, rewritten for strict mode when it is strict."""
    schema = dict(fmt.schema or {})
    return strict_schema(schema) if fmt.strict else schema


def image_url(part: ImagePart) -> str:
    """The URL (or `data:` URL) of an image part."""
    source = part.source
    if isinstance(source, UrlSource):
        return source.url
    return f"data:{source.media_type};base64,{source.data}"


def parts_text(parts: Sequence[ContentPart]) -> str:
    """The text parts of `parts`, joined."""
    return "".join(p.text for p in parts if isinstance(p, TextPart))


def args_json(args: object) -> str:
    """Tool-call arguments as the JSON string the API expects (a raw string passes through)."""
    return args if isinstance(args, str) else json.dumps(args, separators=(",", ":"))


def retry_after_ms(headers: httpx2.Headers) -> int | None:
    """The server's retry hint in milliseconds, from `retry-after-ms` or `retry-after`."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0, round(float(raw_ms)))
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0, round(float(raw) * 1000))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0, round((when.timestamp() - time.time()) * 1000))


def _field(mapping: object, key: str) -> object:
    return cast("dict[str, object]", mapping).get(key) if isinstance(mapping, dict) else None


def _error_fields(body: object) -> tuple[str | None, str | None]:
    """`(message, code)` of an OpenAI error body `{"error": {...}}` (or the bare error object)."""
    inner = _field(body, "error") or body
    if isinstance(inner, str):
        return inner, None
    message, code, raw = (
        _field(inner, "message"),
        _field(inner, "code"),
        _field(_field(inner, "metadata"), "raw"),
    )
    text = message if isinstance(message, str) else None
    if isinstance(raw, str) and raw:
        text = f"{text}: {raw}" if text else raw
    return text, (str(code) if code is not None else None)


def error_from_code(code: str | None, message: str, status_code: int | None = None) -> ModelError:
    """The `ModelError` for an error reported inside a stream (no HTTP status)."""
    if code in _RATE_CODES:
        return RateLimited(message, status_code=status_code)
    if code in _CONTEXT_CODES or "maximum context length" in message:
        return ContextLengthExceeded(message, status_code=status_code)
    if code in _UNAVAILABLE_CODES:
        return Unavailable(message, status_code=status_code)
    return OtherModelError(message, status_code=status_code)


def map_error(exc: Exception) -> ModelError:
    """Translate an SDK or transport exception into the matching `ModelError`."""
    if isinstance(exc, openai.APIConnectionError | httpx2.TransportError):
        return Transport(str(exc) or type(exc).__name__)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        message, code = _error_fields(exc.body)
        message = message or exc.message
        if code == "insufficient_quota":
            return OtherModelError(message, status_code=status)
        if status == 429:
            return RateLimited(
                message, retry_after_ms=retry_after_ms(exc.response.headers), status_code=status
            )
        if code in _CONTEXT_CODES or "maximum context length" in message:
            return ContextLengthExceeded(message, status_code=status)
        if status >= 500:
            return Unavailable(message, status_code=status)
        return OtherModelError(message, status_code=status)
    if isinstance(exc, openai.APIError):
        message, code = _error_fields(exc.body)
        return error_from_code(code or exc.code, message or exc.message)
    return OtherModelError(str(exc) or type(exc).__name__)


MAPPED_ERRORS: tuple[type[Exception], ...] = (openai.OpenAIError, httpx2.TransportError)
"""The exceptions `map_error` translates at the adapter boundary."""
