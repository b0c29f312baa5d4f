"""BedrockModel decodes ConverseStream payloads itself: the same events as botocore's parser.

`invoke` reads aiobotocore's framed event-stream messages and `json.loads` the payloads of
the modeled event types instead of running botocore's shape parser on each one (most of the
per-event cost). These tests replay every streamed recording twice, once that way and once
through the SDK's parsed events (the fallback for a stream without those internals), and
require the very same `ModelEvent`s; plus what only the SDK's parser may decide: exceptions
and event types the service model does not know.
"""

from __future__ import annotations

from typing import Any

import pytest

from helikon.core.exceptions import ModelError, RateLimited
from helikon.core.items import UserMessage
from helikon.core.model import Finish, ModelEvent, ModelRequest, ModelSettings, TokenDelta, Usage
from helikon.providers import bedrock

from .cassettes import FIXTURES, Interaction
from .test_bedrock import (  # aws_env: the autouse fixture with test credentials and no IMDS
    Replay,
    aws_env,  # noqa: F401  # pyright: ignore[reportUnusedImport]
    collect,
    drain,
    event_frame,
    exception_frame,
    frame,
    replay,
)

STREAMED = sorted(
    path.stem
    for path in (FIXTURES / "bedrock").glob("*.yaml")
    if "converse-stream" in path.read_text(encoding="utf-8")
)

_EVENT_STREAM = {"content-type": "application/vnd.amazon.eventstream"}


def _sdk_parsed(stream: Any) -> tuple[Any, Any, frozenset[str]]:
    return stream, None, frozenset()


async def _both(
    monkeypatch: pytest.MonkeyPatch, interactions: list[Interaction], model_id: str, request: ModelRequest
) -> tuple[list[ModelEvent] | type[ModelError], list[ModelEvent] | type[ModelError]]:
    async def once() -> list[ModelEvent] | type[ModelError]:
        rec = Replay([Interaction(**vars(i)) for i in interactions])
        try:
            return await collect(rec.model(model_id), request)
        except ModelError as exc:
            return type(exc)

    own = await once()
    with monkeypatch.context() as patch:
        patch.setattr(bedrock, "_raw_messages", _sdk_parsed)
        sdk = await once()
    return own, sdk


def test_the_streamed_recordings_are_found() -> None:
    assert len(STREAMED) >= 5, STREAMED


@pytest.mark.parametrize("cassette", STREAMED)
async def test_same_events_as_the_sdk_parser(cassette: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rec, model_id = replay(cassette)
    request = ModelRequest(messages=[UserMessage.from_text("hi")], model_settings=ModelSettings())
    own, sdk = await _both(monkeypatch, rec.interactions[:1], model_id, request)
    assert own == sdk
    if "error" in cassette:
        assert own is not None and not isinstance(own, list), own  # the recorded failure, mapped
    else:
        assert isinstance(own, list) and isinstance(own[-1], Finish), own


async def test_unmodeled_event_types_are_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    body = event_frame("messageStart", {"role": "assistant"})
    body += event_frame("someFutureEvent", {"text": "not a delta"})
    body += event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hi"}})
    body += event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"futureDelta": {"x": 1}}})
    body += event_frame("messageStop", {"stopReason": "end_turn"})
    body += event_frame("metadata", {"usage": {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4}})
    interaction = Interaction("POST", "/x", None, 200, dict(_EVENT_STREAM), body)
    request = ModelRequest(messages=[UserMessage.from_text("hi")])
    own, sdk = await _both(monkeypatch, [interaction], "amazon.nova-micro-v1:0", request)
    assert (
        own
        == sdk
        == [
            TokenDelta(text="Hi"),
            Usage(input_tokens=3, output_tokens=1),
            Finish(reason="stop"),
        ]
    )


async def test_exceptions_still_raise_through_the_sdk() -> None:
    body = event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}})
    body += exception_frame("throttlingException", "slow down")
    rec = Replay([Interaction("POST", "/x", None, 200, dict(_EVENT_STREAM), body)])
    model = rec.model("amazon.nova-micro-v1:0")
    seen: list[ModelEvent] = []
    with pytest.raises(RateLimited, match="slow down"):
        await drain(model, ModelRequest(messages=[UserMessage.from_text("hi")]), seen)
    await model.aclose()
    assert seen == [TokenDelta(text="Hel")]


async def test_payloads_that_are_not_json_go_to_the_sdk_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    headers = {":event-type": "contentBlockDelta", ":message-type": "event"}
    body = frame(headers, b"not json")
    body += event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hi"}})
    body += event_frame("messageStop", {"stopReason": "end_turn"})
    interaction = Interaction("POST", "/x", None, 200, dict(_EVENT_STREAM), body)
    request = ModelRequest(messages=[UserMessage.from_text("hi")])
    own, sdk = await _both(monkeypatch, [interaction], "amazon.nova-micro-v1:0", request)
    assert own == sdk == [TokenDelta(text="Hi"), Finish(reason="stop")]
