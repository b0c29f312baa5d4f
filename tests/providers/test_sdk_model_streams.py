"""The OpenAI and Anthropic adapters read streams as JSON; SDK models must map the same way.

`OpenAIModel` and `AnthropicModel` read the events of the SDK's `AsyncStream` as decoded JSON
(`cast_to=object`) instead of as pydantic models. When the client's `create(...)` returns
something else (a test double yielding the SDK's models, a wrapper), the adapter dumps those
models to JSON. These tests replay every streamed recording both ways, on the same bytes,
and require the very same `ModelEvent`s (or the same `ModelError`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from types import SimpleNamespace
from typing import Any, cast

import anthropic
import httpx2
import pytest
from openai import AsyncOpenAI

from helikon.core.cancel import CancellationToken
from helikon.core.exceptions import ModelError
from helikon.core.items import UserMessage
from helikon.core.model import Finish, ModelEvent, ModelRequest
from helikon.providers.anthropic import AnthropicModel
from helikon.providers.openai import OpenAIModel

from .cassettes import FIXTURES, ReplayTransport, load

_REQUEST = ModelRequest(messages=[UserMessage.from_text("hi")])


class StandIn:
    """Not the SDK's `AsyncStream`: yields the SDK's models from one, as a test double would."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[Any]:
        async for event in self._stream:
            yield event

    async def close(self) -> None:
        await self._stream.close()


def _streamed(folder: str) -> list[tuple[str, int]]:
    """(cassette, index) of every recorded 200 SSE response in `folder`."""
    out: list[tuple[str, int]] = []
    for path in sorted((FIXTURES / folder).glob("*.yaml")):
        for index, interaction in enumerate(load(path)):
            if interaction.status == 200 and "event-stream" in interaction.headers.get("content-type", ""):
                out.append((f"{folder}/{path.name}", index))
    return out


def _transport(cassette: str, index: int) -> ReplayTransport:
    return ReplayTransport([load(cassette)[index]])


async def _outcome(make: Callable[[], Awaitable[list[ModelEvent]]]) -> list[ModelEvent] | str:
    try:
        return await make()
    except ModelError as exc:
        return f"{type(exc).__name__}: {exc}"


async def _collect(model: Any) -> list[ModelEvent]:
    return [event async for event in model.invoke(_REQUEST, CancellationToken())]


ANTHROPIC = _streamed("anthropic")
OPENAI = _streamed("openai_chat") + _streamed("openai_responses")


def test_the_streamed_recordings_are_found() -> None:
    assert len(ANTHROPIC) >= 5 and len(OPENAI) >= 5, (ANTHROPIC, OPENAI)


@pytest.mark.parametrize(("cassette", "index"), ANTHROPIC)
async def test_anthropic_models_map_like_the_json(cassette: str, index: int) -> None:
    def real(transport: ReplayTransport) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key="k", http_client=httpx2.AsyncClient(transport=transport), max_retries=0
        )

    async def as_json() -> list[ModelEvent]:
        return await _collect(AnthropicModel("claude-test", client=real(_transport(cassette, index))))

    async def as_models() -> list[ModelEvent]:
        client = real(_transport(cassette, index))

        async def create(**params: Any) -> StandIn:
            return StandIn(await client.messages.create(**params))

        stand_in = cast(anthropic.AsyncAnthropic, SimpleNamespace(messages=SimpleNamespace(create=create)))
        return await _collect(AnthropicModel("claude-test", client=stand_in))

    own, models = await _outcome(as_json), await _outcome(as_models)
    assert own == models
    assert isinstance(own, str) or isinstance(own[-1], Finish), own


@pytest.mark.parametrize(("cassette", "index"), OPENAI)
async def test_openai_models_map_like_the_json(cassette: str, index: int) -> None:
    interaction = load(cassette)[index]
    path = interaction.path
    api = "chat" if path.endswith("/chat/completions") else "responses"
    suffix = "/chat/completions" if api == "chat" else "/responses"
    base_url = "https://replay.invalid" + path.removesuffix(suffix)

    def real(transport: ReplayTransport) -> AsyncOpenAI:
        return AsyncOpenAI(
            api_key="k", base_url=base_url, http_client=httpx2.AsyncClient(transport=transport), max_retries=0
        )

    async def as_json() -> list[ModelEvent]:
        client = real(_transport(cassette, index))
        return await _collect(OpenAIModel(model_id="gpt-test", api=api, client=client))

    async def as_models() -> list[ModelEvent]:
        client = real(_transport(cassette, index))

        async def chat_create(**body: Any) -> StandIn:
            return StandIn(await client.chat.completions.create(**body))

        async def responses_create(**body: Any) -> StandIn:
            return StandIn(await client.responses.create(**body))

        stand_in = cast(
            AsyncOpenAI,
            SimpleNamespace(
                chat=SimpleNamespace(completions=SimpleNamespace(create=chat_create)),
                responses=SimpleNamespace(create=responses_create),
            ),
        )
        return await _collect(OpenAIModel(model_id="gpt-test", api=api, client=stand_in))

    own, models = await _outcome(as_json), await _outcome(as_models)
    assert own == models
    assert isinstance(own, str) or isinstance(own[-1], Finish), own
