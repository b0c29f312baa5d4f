"""The model boundary: `Model`, `ModelRequest`, `ModelSettings`, `ModelEvent` and friends.

One protocol covers every provider. A model's `invoke` is an async iterator of
`ModelEvent`s; a failure is raised as a `ModelError` (see `helikon.core.exceptions`).

Example:
    ```python
    from collections.abc import AsyncIterator

    from helikon.core.cancel import CancellationToken
    from helikon.core.model import (
        Finish, Model, ModelCapabilities, ModelEvent, ModelRequest, TokenDelta,
    )


    class EchoModel(Model):
        async def invoke(
            self, request: ModelRequest, cancel: CancellationToken
        ) -> AsyncIterator[ModelEvent]:
            yield TokenDelta(text="echo")
            yield Finish(reason="stop")

        def capabilities(self) -> ModelCapabilities:
            return ModelCapabilities.empty().with_streaming()
    ```
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, TypeGuard, runtime_checkable

from ._internal.adapter import LazyAdapter
from ._internal.carrier import carrier
from ._internal.json_value import JsonObject
from .exceptions import UserError
from .items import Item

if TYPE_CHECKING:
    from .cancel import CancellationToken

# --- request ---------------------------------------------------------------------------------


@carrier
class ToolDef:
    """A tool as the model sees it: name, description and JSON Schema of the arguments."""

    name: str
    description: str
    parameters: JsonObject
    strict: bool = False
    """Ask the provider to enforce the schema exactly (OpenAI strict function calling)."""


@carrier
class NamedToolChoice:
    """Force the model to call this one tool."""

    type: Literal["tool"] = "tool"
    name: str


ToolChoice: TypeAlias = Literal["auto", "none", "required"] | NamedToolChoice
"""Whether and which tools the model may call: `auto`, `none`, `required`, or one named tool."""


@carrier
class ResponseFormat:
    """The shape of the model's text: free `text`, any `json_object`, or a `json_schema`.

    Example:
        ```python
        from helikon.core.model import ResponseFormat

        fmt = ResponseFormat.json_schema(
            name="Answer", schema={"type": "object", "properties": {}}, strict=True
        )
        assert fmt.type == "json_schema"
        ```
    """

    type: Literal["text", "json_object", "json_schema"] = "text"
    name: str | None = None
    schema: JsonObject | None = None
    strict: bool = False

    def __post_init__(self) -> None:
        if self.type == "json_schema" and (not self.name or self.schema is None):
            raise UserError("ResponseFormat(type='json_schema') needs a non-empty `name` and a `schema`")

    @classmethod
    def text(cls) -> ResponseFormat:
        """Free-form text (the default)."""
        return cls(type="text")

    @classmethod
    def json_object(cls) -> ResponseFormat:
        """Any JSON object."""
        return cls(type="json_object")

    @classmethod
    def json_schema(cls, *, name: str, schema: JsonObject, strict: bool = True) -> ResponseFormat:
        """JSON matching `schema`; with `strict`, providers that can enforce it do."""
        return cls(type="json_schema", name=name, schema=schema, strict=strict)


@carrier
class ModelSettings:
    """Provider-tuning knobs; `None` leaves the provider's default."""

    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    tool_choice: ToolChoice | None = None
    response_format: ResponseFormat | None = None

    def __new__(cls, *args: object, **kwargs: object) -> ModelSettings:
        """Refuse the removed `previous_response_id` with where it went.

        It moved to the OpenAI adapter (vendor knobs stay out of neutral settings): its caller
        gets this, not the bare TypeError of an unknown keyword.
        """
        if "previous_response_id" in kwargs:
            raise UserError(
                "ModelSettings(previous_response_id=...) is no more: it is an OpenAI Responses setting; "
                "use OpenAIModel.responses(..., settings=OpenAISettings(previous_response_id=...)) or "
                "model.with_settings(OpenAISettings(previous_response_id=...)) "
                "(from helikon.providers.openai import OpenAISettings)"
            )
        return object.__new__(cls)

    def __post_init__(self) -> None:
        # Checked as `object`: callers pass whatever they have, and a string or a bool here
        # must be a clear UserError, not a TypeError from a comparison.
        temperature, top_p, max_tokens = _untyped(self.temperature, self.top_p, self.max_output_tokens)
        if temperature is not None and not (_is_number(temperature) and 0.0 <= temperature <= 2.0):
            raise UserError(f"ModelSettings(temperature={temperature!r}): must be a number between 0 and 2")
        if top_p is not None and not (_is_number(top_p) and 0.0 <= top_p <= 1.0):
            raise UserError(f"ModelSettings(top_p={top_p!r}): must be a number between 0 and 1")
        if max_tokens is not None and not (
            _is_number(max_tokens) and isinstance(max_tokens, int) and max_tokens > 0
        ):
            raise UserError(f"ModelSettings(max_output_tokens={max_tokens!r}): must be a positive integer")

    def merged(self, other: ModelSettings) -> ModelSettings:
        """These settings with every field that `other` sets laid over them."""
        changes = {f.name: v for f in dataclasses.fields(other) if (v := getattr(other, f.name)) is not None}
        return dataclasses.replace(self, **changes) if changes else self


def _untyped(*values: object) -> tuple[object, ...]:
    return values


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


@carrier
class ModelRequest:
    """Everything one model call needs: the conversation, the callable tools, the settings."""

    messages: Sequence[Item]
    tools: Sequence[ToolDef] = ()
    model_settings: ModelSettings = ModelSettings()


# --- streamed events -------------------------------------------------------------------------

FinishReason: TypeAlias = Literal["stop", "length", "tool_calls", "content_filter", "refusal", "other"]
"""Why the model stopped emitting."""


@carrier
class TokenDelta:
    """A fragment of the model's text, as streamed. Also an `AgentEvent`."""

    type: Literal["token_delta"] = "token_delta"
    text: str


@carrier
class ReasoningDelta:
    """A fragment of the model's reasoning; `signature` arrives when the provider signs it.

    Also an `AgentEvent`.
    """

    type: Literal["reasoning_delta"] = "reasoning_delta"
    text: str
    signature: str | None = None


@carrier
class ToolCallDelta:
    """A fragment of a tool call: `name` comes with the first fragment of `call_id`.

    Also an `AgentEvent`.
    """

    type: Literal["tool_call_delta"] = "tool_call_delta"
    call_id: str
    name: str = ""
    args_delta: str = ""


@carrier
class Usage:
    """Token counts for one model call."""

    type: Literal["usage"] = "usage"
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0


@carrier
class Finish:
    """The model is done with this call."""

    type: Literal["finish"] = "finish"
    reason: FinishReason = "stop"


@carrier
class ModelFallback:
    """A `FallbackModel`'s model failed before it streamed anything; the next one is called.

    Also an `AgentEvent`: the run streams it between `TurnStarted` and the next model's
    first delta, and a runner records it in the session (a `CustomEvent` of kind
    `helikon.model_fallback`). Models are named `provider:model_name`.
    """

    type: Literal["model_fallback"] = "model_fallback"
    from_model: str
    to_model: str
    error_kind: str
    """The failure's `ModelError.kind` (`unavailable`, `rate_limited`, ...)."""
    error: str = ""
    """The failure's message."""


ModelEvent: TypeAlias = TokenDelta | ReasoningDelta | ToolCallDelta | Usage | Finish | ModelFallback
"""One streamed event of a model call."""


def _model_event_type() -> object:
    from typing import Annotated

    from pydantic import Field

    return Annotated[ModelEvent, Field(discriminator="type")]


MODEL_EVENT_ADAPTER: LazyAdapter[ModelEvent] = LazyAdapter(_model_event_type)
"""JSON (de)serialization of any `ModelEvent`."""

# --- capabilities ----------------------------------------------------------------------------


@carrier
class ModelCapabilities:
    """What a model can do; stable per model instance.

    Example:
        ```python
        from helikon.core.model import ModelCapabilities

        caps = ModelCapabilities.empty().with_streaming().with_tools().with_structured_output()
        assert caps.tools and not caps.vision
        ```
    """

    streaming: bool = False
    tools: bool = False
    parallel_tool_calls: bool = False
    structured_output: bool = False
    server_managed_state: bool = False
    reasoning: bool = False
    vision: bool = False
    audio: bool = False
    prompt_caching: bool = False

    @classmethod
    def empty(cls) -> ModelCapabilities:
        """No capabilities."""
        return cls()

    def _with(self, **flag: bool) -> ModelCapabilities:
        return dataclasses.replace(self, **flag)

    def with_streaming(self) -> ModelCapabilities:
        """Add `streaming`."""
        return self._with(streaming=True)

    def with_tools(self) -> ModelCapabilities:
        """Add `tools`."""
        return self._with(tools=True)

    def with_parallel_tool_calls(self) -> ModelCapabilities:
        """Add `parallel_tool_calls`."""
        return self._with(parallel_tool_calls=True)

    def with_structured_output(self) -> ModelCapabilities:
        """Add `structured_output`."""
        return self._with(structured_output=True)

    def with_server_managed_state(self) -> ModelCapabilities:
        """Add `server_managed_state`."""
        return self._with(server_managed_state=True)

    def with_reasoning(self) -> ModelCapabilities:
        """Add `reasoning`."""
        return self._with(reasoning=True)

    def with_vision(self) -> ModelCapabilities:
        """Add `vision`."""
        return self._with(vision=True)

    def with_audio(self) -> ModelCapabilities:
        """Add `audio`."""
        return self._with(audio=True)

    def with_prompt_caching(self) -> ModelCapabilities:
        """Add `prompt_caching`."""
        return self._with(prompt_caching=True)


# --- the protocol ----------------------------------------------------------------------------


@runtime_checkable
class Model(Protocol):
    """The one interface to an LLM provider.

    `invoke` streams `ModelEvent`s and raises `ModelError` (or a variant) on failure.
    Subclass it explicitly to inherit the `provider` / `model_name` defaults.
    """

    def invoke(self, request: ModelRequest, cancel: CancellationToken) -> AsyncIterator[ModelEvent]:
        """Stream the model's answer to `request`."""
        ...

    def capabilities(self) -> ModelCapabilities:
        """What this model can do."""
        ...

    @property
    def provider(self) -> str:
        """GenAI `gen_ai.provider.name`, e.g. `openai`."""
        return "unknown"

    @property
    def model_name(self) -> str:
        """GenAI `gen_ai.request.model`, e.g. `gpt-5-mini`."""
        return ""


__all__ = [
    "MODEL_EVENT_ADAPTER",
    "Finish",
    "FinishReason",
    "Model",
    "ModelCapabilities",
    "ModelEvent",
    "ModelFallback",
    "ModelRequest",
    "ModelSettings",
    "NamedToolChoice",
    "ReasoningDelta",
    "ResponseFormat",
    "TokenDelta",
    "ToolCallDelta",
    "ToolChoice",
    "ToolDef",
    "Usage",
]
