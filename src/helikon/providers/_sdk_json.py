"""Stream events as JSON objects when the SDK's stream is not its own `AsyncStream`.

The OpenAI and Anthropic adapters read a stream's events as the SDK's decoded JSON (the
SDK's `AsyncStream` over the same response with `cast_to=object`) rather than as pydantic
models. When `create(...)` returned something else (a test double yielding SDK models, a
wrapper that is not a proxy of the SDK's stream), its events are turned into the same
JSON objects here, at the cost the SDK models already had.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, cast


async def as_json(stream: AsyncIterable[Any]) -> AsyncIterator[dict[str, Any]]:
    """The events of `stream` as JSON objects (`dict`s pass through, models are dumped by alias).

    `warnings=False`: the SDKs build event and block types they do not know as some other
    model class (keeping the real `type`), whose dump would otherwise warn.
    """
    async for event in stream:
        if isinstance(event, dict):
            yield cast(dict[str, Any], event)
        else:
            yield cast(dict[str, Any], event.model_dump(by_alias=True, warnings=False))
