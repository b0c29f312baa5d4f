"""`AnthropicModel`: the Anthropic Messages API through the official `anthropic` SDK.

Needs the `anthropic` extra (`paigasus-helikon[anthropic]`). Every call streams
(`messages.create(stream=True)`); see `docs/providers-anthropic.md` for the request/event
mapping, `ExtendedThinking`, `CacheStrategy` and the caveats.

Example:
    ```python replay=anthropic
    from helikon import LlmAgent
    from helikon.providers.anthropic import AnthropicModel, ExtendedThinking

    model = AnthropicModel.messages("claude-haiku-4-5", thinking=ExtendedThinking(budget_tokens=1024))
    agent = LlmAgent(name="assistant", model=model, instructions="Be brief.")
    print(agent.run_sync("Two names for a pet pelican").final_output)
    ```
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, cast

from helikon.core._internal.extras import missing_extra

try:
    import anthropic
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("helikon.providers.anthropic needs the Anthropic SDK", "anthropic") from exc

from helikon.core.exceptions import (
    ContextLengthExceeded,
    ModelError,
    OtherModelError,
    RateLimited,
    Transport,
    Unavailable,
    UserError,
)
from helikon.core.model import (
    Finish,
    FinishReason,
    Model,
    ModelCapabilities,
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    TokenDelta,
    ToolCallDelta,
    Usage,
)

from ._anthropic_request import CacheStrategy, ExtendedThinking, build_params
from ._sdk_json import as_json

if TYPE_CHECKING:
    from helikon.core.cancel import CancellationToken

_CAPABILITIES = ModelCapabilities(
    streaming=True,
    tools=True,
    parallel_tool_calls=True,
    structured_output=True,
    reasoning=True,
    vision=True,
    prompt_caching=True,
)

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "refusal",
}


_EXTRA_BODY = ("temperature", "top_p")
_NONE: dict[str, Any] = {}  # an absent object in an event (read only)

# The per-delta events, built without the keyword `__init__` (every field given, already checked).


class AnthropicModel(Model):
    """An Anthropic model (Messages API), streamed. Build it with `AnthropicModel.messages`.

    The client is built with `max_retries=0`: retries belong to `RetryingModel`.
    """

    def __init__(
        self,
        model_id: str,
        *,
        client: anthropic.AsyncAnthropic,
        max_tokens: int = 4096,
        thinking: ExtendedThinking | None = None,
        cache: CacheStrategy | None = None,
    ) -> None:
        if not model_id:
            raise UserError(
                "AnthropicModel: `model_id` must be a non-empty model name, e.g. `claude-opus-4-6`"
            )
        size = cast(object, max_tokens)
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise UserError(f"AnthropicModel(max_tokens={size!r}): must be a positive integer")
        if thinking is not None and thinking.budget_tokens >= max_tokens:
            raise UserError(
                f"AnthropicModel: ExtendedThinking(budget_tokens={thinking.budget_tokens}) must be below "
                f"max_tokens={max_tokens}"
            )
        self._model_id = model_id
        self._client = client
        self._max_tokens = max_tokens
        self._thinking = thinking
        self._cache = cache

    @classmethod
    def messages(
        cls,
        model_id: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: anthropic.AsyncAnthropic | None = None,
        max_tokens: int = 4096,
        thinking: ExtendedThinking | None = None,
        cache: CacheStrategy | None = None,
    ) -> AnthropicModel:
        """A model on the Messages API.

        Args:
            model_id: The model, e.g. `claude-opus-4-6`.
            api_key: The API key; defaults to the `ANTHROPIC_API_KEY` environment variable.
            base_url: Another endpoint (a proxy, a gateway).
            client: A ready `anthropic.AsyncAnthropic` (then `api_key`/`base_url` are unused);
                it is used as `client.with_options(max_retries=0)`.
            max_tokens: `max_tokens` when the request's `max_output_tokens` is not set.
            thinking: Enable extended thinking with this budget.
            cache: Where to place prompt-cache breakpoints.
        """
        if client is None:
            key = api_key or os.environ.get("ANTHROPIC_API_KEY")
            if not key:
                raise UserError(
                    "AnthropicModel: no API key; set the ANTHROPIC_API_KEY environment variable "
                    "or pass api_key=... (or client=...)"
                )
            client = anthropic.AsyncAnthropic(api_key=key, base_url=base_url, max_retries=0)
        else:
            client = client.with_options(max_retries=0)
        return cls(model_id, client=client, max_tokens=max_tokens, thinking=thinking, cache=cache)

    @property
    def provider(self) -> str:
        """`anthropic`."""
        return "anthropic"

    @property
    def model_name(self) -> str:
        """The model id."""
        return self._model_id

    def capabilities(self) -> ModelCapabilities:
        """Streaming, tools (parallel), structured output, reasoning, vision, prompt caching."""
        return _CAPABILITIES

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The `messages.create` arguments `invoke` sends for `request` (without `stream`)."""
        return build_params(
            request,
            model_id=self._model_id,
            max_tokens=self._max_tokens,
            thinking=self._thinking,
            cache=self._cache,
        )

    async def invoke(self, request: ModelRequest, cancel: CancellationToken) -> AsyncIterator[ModelEvent]:
        """Stream the answer to `request` as `ModelEvent`s; failures raise `ModelError`s."""
        params = self.request_params(request)
        # Sampling knobs are not typed arguments of `messages.create` in the SDK versions
        # this targets; they still go in the body the API receives.
        extra = {key: params.pop(key) for key in _EXTRA_BODY if key in params}
        try:
            stream = await self._client.messages.create(**params, stream=True, extra_body=extra or None)
        except anthropic.APIError as exc:
            raise _model_error(exc) from exc
        # The events are read as the SDK's decoded JSON (its own `AsyncStream` over the same
        # response, with `cast_to=object`): the SDK still decodes the SSE, skips pings and
        # raises in-stream `error` events, but does not build a pydantic model per event, which
        # is most of the per-event cost and which helikon would only map to its own events.
        # Dispatch on the `type` strings: block types this SDK version does not know
        # (e.g. `mcp_tool_use`) arrive like any other.
        events = self._json_events(stream)
        calls: dict[int, str] = {}  # tool_use block index -> its id
        tokens = _TokenCounts()
        finished = False
        is_cancelled = cancel.is_cancelled
        try:
            async for event in events:
                if is_cancelled():
                    return
                kind = event["type"]
                if kind == "content_block_delta":
                    delta = _block_delta(event, calls)
                    if delta is not None:
                        yield delta
                elif kind == "content_block_start":
                    for started in _block_started(event["content_block"]):
                        if isinstance(started, ToolCallDelta):
                            calls[event["index"]] = started.call_id
                        yield started
                elif kind == "message_start":
                    tokens.started(event["message"].get("usage") or _NONE)
                elif kind == "message_delta":
                    yield tokens.updated(event.get("usage") or _NONE)
                    reason: str | None = (event.get("delta") or _NONE).get("stop_reason")
                    yield Finish(reason=_FINISH.get(reason, "other") if reason else "other")
                    finished = True
        except anthropic.APIError as exc:
            raise _model_error(exc) from exc
        finally:
            await stream.close()
        if not finished and not cancel.is_cancelled():
            raise Transport("the Anthropic stream ended before its message_delta event")

    def _json_events(self, stream: Any) -> AsyncIterator[dict[str, Any]]:
        """The stream's events as the SDK's decoded JSON (see `invoke`)."""
        returned = cast(object, stream)
        if isinstance(returned, anthropic.AsyncStream):
            return cast(
                "AsyncIterator[dict[str, Any]]",
                anthropic.AsyncStream(cast_to=object, response=stream.response, client=self._client),
            )
        # Not the SDK's stream (a test double, a wrapper): its events' models as JSON.
        return as_json(stream)


def _block_delta(event: dict[str, Any], calls: dict[int, str]) -> ModelEvent | None:
    """The event a `content_block_delta` carries (`calls`: the open tool calls' ids by block index)."""
    delta = event["delta"]
    delta_type = delta["type"]
    if delta_type == "input_json_delta":
        call_id = calls.get(event["index"])
        return None if call_id is None else ToolCallDelta(call_id=call_id, args_delta=delta["partial_json"])
    if delta_type == "text_delta":
        return TokenDelta(text=delta["text"])
    if delta_type == "thinking_delta":
        return ReasoningDelta(text=delta["thinking"])
    if delta_type == "signature_delta":
        return ReasoningDelta(text="", signature=delta["signature"])
    # citations_delta and the deltas of skipped (server/MCP) blocks carry nothing helikon models.
    return None


def _block_started(block: dict[str, Any]) -> Iterator[ModelEvent]:
    """What a `content_block_start` carries: a tool call's opening, or the block's initial text."""
    block_type: str = block["type"]
    if block_type == "tool_use":
        yield ToolCallDelta(call_id=block["id"], name=block["name"], args_delta="")
    elif block_type == "redacted_thinking":
        # Encrypted reasoning: no text, the data travels as the signature so it round-trips
        # as a `redacted_thinking` block on the next turn.
        yield ReasoningDelta(text="", signature=block["data"])
    elif block_type in ("text", "thinking"):
        initial = block.get(block_type)
        if initial:
            yield TokenDelta(text=initial) if block_type == "text" else ReasoningDelta(text=initial)
    # Other blocks (server_tool_use, mcp_tool_use, *_tool_result, container_upload, ...) ran at
    # the provider; helikon skips them and their deltas.


class _TokenCounts:
    """A message's token counts: `message_start` reports them, `message_delta` may update them.

    Anthropic counts cache reads and cache writes apart from `input_tokens`; helikon's input
    count includes both.
    """

    def __init__(self) -> None:
        self.input = self.cached = self.output = 0

    def started(self, usage: dict[str, Any]) -> None:
        self.cached = usage.get("cache_read_input_tokens") or 0
        self.input = (
            (usage.get("input_tokens") or 0) + self.cached + (usage.get("cache_creation_input_tokens") or 0)
        )
        self.output = usage.get("output_tokens") or 0

    def updated(self, usage: dict[str, Any]) -> Usage:
        reported = usage.get("input_tokens")
        if reported is not None:
            self.cached = usage.get("cache_read_input_tokens") or 0
            self.input = reported + self.cached + (usage.get("cache_creation_input_tokens") or 0)
        self.output = usage.get("output_tokens") or self.output
        return Usage(input_tokens=self.input, output_tokens=self.output, cached_input_tokens=self.cached)


def _error_body(exc: anthropic.APIStatusError) -> tuple[str, str]:
    """The Anthropic error `(type, message)` from `{"type": "error", "error": {...}}`."""
    body = exc.body
    error = cast(dict[str, Any], body).get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        fields = cast(dict[str, Any], error)
        return (str(fields.get("type") or ""), str(fields.get("message") or exc.message))
    return "", exc.message


def _retry_after_ms(headers: Any) -> int | None:
    raw: Any = headers.get("retry-after-ms")
    if raw is not None:
        try:
            return int(float(raw))
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return int(float(raw) * 1000)
    except ValueError:
        return None


def _model_error(exc: anthropic.APIError) -> ModelError:
    """Translate an SDK error (HTTP status or in-stream `error` event) to a `ModelError`."""
    if isinstance(exc, anthropic.APIConnectionError):
        return Transport(f"Anthropic connection failed: {exc}")
    if not isinstance(exc, anthropic.APIStatusError):
        return OtherModelError(f"Anthropic: {exc}")
    kind, message = _error_body(exc)
    # An `error` event inside a 200 stream carries the real status only in its type.
    status = exc.status_code if exc.status_code >= 400 else None
    text = f"Anthropic {kind or 'error'}: {message}"
    if status == 429 or kind == "rate_limit_error":
        return RateLimited(
            text, retry_after_ms=_retry_after_ms(exc.response.headers), status_code=status or 429
        )
    if kind in ("overloaded_error", "api_error") or (status is not None and status >= 500):
        return Unavailable(text, status_code=status or (529 if kind == "overloaded_error" else 500))
    if "prompt is too long" in message.lower():
        return ContextLengthExceeded(text, status_code=status or 400)
    if status == 408 or kind == "timeout_error":
        return Transport(text, status_code=status)
    return OtherModelError(text, status_code=status)


__all__ = ["AnthropicModel", "CacheStrategy", "ExtendedThinking"]
