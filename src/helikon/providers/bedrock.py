"""`BedrockModel`: the AWS Bedrock Converse streaming API through `aiobotocore`.

Needs the `bedrock` extra (`paigasus-helikon[bedrock]`). Every call streams
(`converse_stream`); see `docs/providers-bedrock.md` for the request/event mapping, the
model families, structured output and the tool-schema rewriter.

Example:
    ```python replay=bedrock
    import asyncio

    from helikon import LlmAgent
    from helikon.providers.bedrock import BedrockModel


    async def main() -> None:
        async with await BedrockModel.from_env("us.amazon.nova-micro-v1:0") as model:
            agent = LlmAgent(name="assistant", model=model, instructions="You are a helpful chatbot.")
            print((await agent.run("What is the capital of France?")).final_output)


    asyncio.run(main())
    ```
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, cast

# aiobotocore ships no type information: its modules are held as `Any` rather than
# letting every use of them leak unknown types into the adapter.
from helikon.core._internal.extras import missing_extra

try:
    _exceptions: Any = importlib.import_module("botocore.exceptions")
    _config: Any = importlib.import_module("aiobotocore.config")
    _aio_session: Any = importlib.import_module("aiobotocore.session")
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("helikon.providers.bedrock needs aiobotocore", "bedrock") from exc

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

from ._bedrock_request import (
    CAPABILITIES,
    PROVIDER,
    STRUCTURED_TOOL,
    ModelFamily,
    build_params,
    structured_output,
)
from ._bedrock_schema import Ruleset, rewrite_tool_schema

if TYPE_CHECKING:
    from types import TracebackType

    from helikon.core.cancel import CancellationToken

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}

# Retries belong to `RetryingModel`: the client botocore builds here makes one attempt.
_CLIENT_CONFIG: Any = _config.AioConfig(retries={"total_max_attempts": 1, "mode": "standard"})


class BedrockModel(Model):
    """A model on AWS Bedrock (Converse API), streamed.

    Build it with `await BedrockModel.from_env(model_id)` (the standard AWS credential
    chain) or `BedrockModel.converse(model_id, client=..., session=..., region=...)`.
    Without `client=`, the `bedrock-runtime` client is created on the first call and
    released by `aclose()` (or `async with model:`).
    """

    def __init__(
        self,
        model_id: str,
        *,
        client: Any | None = None,
        session: Any | None = None,
        region: str | None = None,
    ) -> None:
        if not model_id:
            raise UserError(
                "BedrockModel: `model_id` must be a non-empty Bedrock model id, e.g. `amazon.nova-pro-v1:0`"
            )
        self._model_id = model_id
        self._family = ModelFamily.detect(model_id)
        self._client: Any = client
        self._session = session
        self._region = region
        self._owned: Any = None  # the client context this model created and must close
        self._lock = asyncio.Lock()

    @classmethod
    def converse(
        cls,
        model_id: str,
        *,
        client: Any | None = None,
        session: Any | None = None,
        region: str | None = None,
    ) -> BedrockModel:
        """A model on the Converse API.

        Args:
            model_id: The model or inference-profile id, e.g. `us.anthropic.claude-3-7-sonnet-20250219-v1:0`.
            client: A ready aiobotocore `bedrock-runtime` client (then `session`/`region` are unused).
                Its retry settings are kept; prefer `retries={"total_max_attempts": 1}` and
                `RetryingModel`.
            session: The aiobotocore session to create the client from (default: a new one,
                which reads the standard AWS credential chain lazily).
            region: The AWS region (default: the session's, e.g. `AWS_REGION`).
        """
        return cls(model_id, client=client, session=session, region=region)

    @classmethod
    async def from_env(cls, model_id: str, *, region: str | None = None) -> BedrockModel:
        """A model configured from the environment: the standard AWS credential chain and region.

        Credentials are resolved on the first call, so auth failures surface at `invoke`.
        A missing region is a `UserError` here, naming `AWS_REGION`.
        """
        session: Any = _aio_session.get_session()
        region = region or _env_region()
        if region is None:
            # Reading the shared config file is blocking IO: keep it off the event loop.
            found: Any = await asyncio.to_thread(session.get_config_variable, "region")
            region = found if isinstance(found, str) and found else None
        if not region:
            raise UserError(
                "BedrockModel.from_env: no AWS region; set the AWS_REGION environment variable, "
                "`region` in ~/.aws/config, or pass region=..."
            )
        return cls(model_id, session=session, region=region)

    @property
    def provider(self) -> str:
        """`aws.bedrock`."""
        return PROVIDER

    @property
    def model_name(self) -> str:
        """The model id."""
        return self._model_id

    @property
    def family(self) -> ModelFamily:
        """The model family detected from the model id."""
        return self._family

    def capabilities(self) -> ModelCapabilities:
        """What the model's family supports through Converse."""
        return CAPABILITIES[self._family]

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The `converse_stream` keyword arguments `invoke` sends for `request`."""
        return build_params(request, model_id=self._model_id, family=self._family)

    async def _get_client(self) -> Any:
        if self._client is not None:
            return self._client
        async with self._lock:
            if self._client is None:
                session = self._session if self._session is not None else _aio_session.get_session()
                context: Any = session.create_client(
                    "bedrock-runtime", region_name=self._region or _env_region(), config=_CLIENT_CONFIG
                )
                self._client = await context.__aenter__()
                self._owned = context
        return self._client

    async def aclose(self) -> None:
        """Close the client this model created (a client passed in is left to its owner)."""
        owned, self._owned = self._owned, None
        if owned is not None:
            self._client = None
            await owned.__aexit__(None, None, None)

    async def __aenter__(self) -> BedrockModel:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def invoke(self, request: ModelRequest, cancel: CancellationToken) -> AsyncIterator[ModelEvent]:
        """Stream the answer to `request` as `ModelEvent`s; failures raise `ModelError`s."""
        params = self.request_params(request)
        structured = structured_output(request, self._family)
        if cancel.is_cancelled():
            return
        try:
            client = await self._get_client()
            response: Any = await client.converse_stream(**params)
        except Exception as exc:
            raise _translate(exc) from exc
        stream: Any = response["stream"]
        # Closing the HTTP stream on cancellation also wakes a read that is waiting for bytes.
        remove = cancel.add_callback(stream.close)
        messages, parse, known = _raw_messages(stream)
        state = _ConverseStreamState(structured)
        is_cancelled = cancel.is_cancelled
        try:
            async for message in messages:
                if is_cancelled():
                    return
                kind: str | None
                body: dict[str, Any]
                if parse is None:  # the SDK's parsed events (`{event type: members}`)
                    kind, body = next(iter(cast(dict[str, Any], message).items()), (None, _NONE))
                else:
                    kind, decoded = _decoded(message, known)
                    if decoded is not None:
                        body = decoded
                    else:  # exceptions (raised here), events the SDK does not model, odd payloads
                        parsed: dict[str, Any] = await parse(message)
                        if not parsed:
                            continue
                        kind, body = next(iter(parsed.items()))
                for event in state.feed(kind, body):
                    yield event
            if is_cancelled():
                return
            for event in state.finish():
                yield event
        except ModelError:
            raise
        except Exception as exc:
            if is_cancelled():
                return  # the read failed because cancellation closed the stream
            raise _translate(exc) from exc
        finally:
            remove()
            stream.close()


def _decoded(message: Any, known: frozenset[str]) -> tuple[str | None, dict[str, Any] | None]:
    """A framed message's event type and its JSON payload; the body is None when botocore must parse it."""
    headers: dict[str, Any] = message.headers
    kind: str | None = headers.get(":event-type")
    if kind not in known or headers.get(":message-type") in _NOT_EVENTS:
        return kind, None
    payload: bytes = message.payload
    try:
        decoded: object = json.loads(payload) if payload else {}
    except ValueError:  # not JSON: left to the SDK's parser, as any odd message
        return kind, None
    return kind, cast(dict[str, Any], decoded) if decoded.__class__ is dict else None


class _ConverseStreamState:
    """Turns ConverseStream events into `ModelEvent`s.

    With `structured` (a structured answer through the reserved output tool), plain text is
    held back: it is the answer only if the tool is never called.
    """

    def __init__(self, structured: bool) -> None:
        self._structured = structured
        self._kinds: dict[int, str] = {}  # block index -> "tool" | "output" | "skip"
        self._calls: dict[int, str] = {}  # block index -> toolUseId
        self._held: list[str] = []  # text held back while a structured answer may still come as the tool
        self._called = self._output = False
        self._stop_reason: str | None = None
        self._usage: Usage | None = None

    def feed(self, kind: str | None, body: dict[str, Any]) -> Iterator[ModelEvent]:
        """The events one stream event carries."""
        if kind == "contentBlockDelta":
            yield from self._delta(body.get("contentBlockIndex", 0), body.get("delta") or _NONE)
        elif kind == "contentBlockStart":
            yield from self._block_started(body.get("contentBlockIndex", 0), body.get("start") or _NONE)
        elif kind == "messageStop":
            self._stop_reason = body.get("stopReason") or ""
        elif kind == "metadata":
            counts: dict[str, Any] = body.get("usage") or _NONE
            self._usage = Usage(
                input_tokens=counts.get("inputTokens", 0) or 0,
                output_tokens=counts.get("outputTokens", 0) or 0,
                cached_input_tokens=counts.get("cacheReadInputTokens", 0) or 0,
            )

    def _delta(self, index: int, delta: dict[str, Any]) -> Iterator[ModelEvent]:
        text: str | None = delta.get("text")
        if text is not None:
            if self._structured:
                self._held.append(text)
            elif text:
                yield TokenDelta(text=text)
        elif "toolUse" in delta:
            block_kind = self._kinds.get(index)
            if block_kind == "tool":
                yield ToolCallDelta(
                    call_id=self._calls[index], args_delta=delta["toolUse"].get("input") or ""
                )
            elif block_kind == "output":
                fragment: str = delta["toolUse"].get("input") or ""
                if fragment:
                    yield TokenDelta(text=fragment)
        elif "reasoningContent" in delta:
            reasoning: dict[str, Any] = delta["reasoningContent"]
            if reasoning.get("text"):
                yield ReasoningDelta(text=reasoning["text"])
            if reasoning.get("signature"):
                yield ReasoningDelta(text="", signature=reasoning["signature"])
        # toolResult deltas (server-side tools) and skipped blocks carry nothing helikon models.

    def _block_started(self, index: int, start: dict[str, Any]) -> Iterator[ModelEvent]:
        tool_use: dict[str, Any] | None = start.get("toolUse")
        if tool_use is None or tool_use.get("type") == "server_tool_use":
            self._kinds[index] = "skip"  # a server-side tool ran by the provider, or its result
        elif self._structured and tool_use.get("name") == STRUCTURED_TOOL:
            self._kinds[index] = "output"
            self._output = True
        else:
            self._kinds[index] = "tool"
            self._calls[index] = tool_use["toolUseId"]
            self._called = True
            yield ToolCallDelta(call_id=tool_use["toolUseId"], name=tool_use["name"], args_delta="")

    def finish(self) -> Iterator[ModelEvent]:
        """The events after the last one: held text, usage and `Finish`; raises if the stream was cut."""
        if self._stop_reason is None:
            raise Transport("the Bedrock stream ended before its messageStop event")
        if self._held and not self._output:
            # No structured answer came through the tool: the text is the answer after all.
            yield TokenDelta(text="".join(self._held))
        if self._usage is not None:
            yield self._usage
        reason = _FINISH.get(self._stop_reason, "other")
        if reason == "tool_calls" and not self._called:
            reason = "stop"  # only the reserved output tool was called: that is the final answer
        yield Finish(reason=reason)


_NONE: dict[str, Any] = {}  # an absent object in an event (read only)
_NOT_EVENTS = frozenset({"error", "exception"})  # the message types botocore raises for

# The per-delta events, built without the keyword `__init__` (every field given, already checked).


def _raw_messages(stream: Any) -> tuple[Any, Any, frozenset[str]]:
    """Where `invoke` reads the stream's events from: `(messages, parse, known event types)`.

    aiobotocore's `EventStream` frames the binary messages (checking their CRCs), then runs
    each through botocore's shape parser to build `{event type: members}`. For the event types
    of the ConverseStream shape, whose members this adapter reads are all JSON strings, numbers
    and objects, that parse is the `json.loads` of the payload with extra steps, and it is most
    of the per-event cost: helikon reads the framed messages (`_event_generator`) and decodes
    those payloads itself. Any other message (exceptions, event types the shape does not model)
    still goes through the SDK's `_parse_event`, which raises `EventStreamError` for exceptions
    and skips unmodeled events. A stream without these internals (another aiobotocore) is read
    as the SDK's parsed events: `(stream, None, ...)`.
    """
    messages: Any = getattr(stream, "_event_generator", None)
    parse: Any = getattr(stream, "_parse_event", None)
    shape: Any = getattr(stream, "_output_shape", None)
    members: Any = getattr(shape, "members", None)
    if messages is None or parse is None or not hasattr(members, "keys"):
        return stream, None, frozenset()
    return messages, parse, frozenset(cast(dict[str, Any], members).keys())


_THROTTLED = {"throttling", "toomanyrequests"}
_UNAVAILABLE = {
    "serviceunavailable",
    "internalserver",
    "internalfailure",
    "modelnotready",
    "modelstreamerror",
}
_TRANSPORT_ERRORS = (
    _exceptions.HTTPClientError,
    _exceptions.EndpointConnectionError,
    _exceptions.ConnectionError,
)


def _env_region() -> str | None:
    """`AWS_REGION`, which botocore does not read (it reads `AWS_DEFAULT_REGION` and the config file).

    The AWS CLI and the other AWS SDKs read it first, and the errors here name it.
    """
    return os.environ.get("AWS_REGION") or None


def _translate(exc: Exception) -> ModelError:
    """Translate a botocore error (HTTP response or in-stream exception event) to a `ModelError`."""
    if isinstance(exc, _TRANSPORT_ERRORS):
        return Transport(f"Bedrock connection failed: {exc}")
    if isinstance(exc, _exceptions.NoCredentialsError):
        return OtherModelError(
            "Bedrock: no AWS credentials; set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, "
            "or run where an instance/task role is available"
        )
    if isinstance(exc, _exceptions.NoRegionError):
        return OtherModelError("Bedrock: no AWS region; set AWS_REGION or pass region=...")
    if not isinstance(exc, _exceptions.ClientError):
        return OtherModelError(f"Bedrock: {type(exc).__name__}: {exc}")
    response = cast(dict[str, Any], cast(Any, exc).response)
    error: dict[str, Any] = response.get("Error") or {}
    code = str(error.get("Code") or "")
    message = str(error.get("Message") or exc)
    meta: dict[str, Any] = response.get("ResponseMetadata") or {}
    raw_status: Any = meta.get("HTTPStatusCode")
    status = raw_status if isinstance(raw_status, int) and raw_status >= 400 else None
    key = code.lower().removesuffix("exception")
    text = f"Bedrock {code or 'error'}: {message}"
    # The error code decides first: Bedrock answers ModelNotReadyException with a 429.
    if key in _UNAVAILABLE:
        return Unavailable(text, status_code=status)
    if key in _THROTTLED or status == 429:
        return RateLimited(text, status_code=status or 429)
    if status is not None and status >= 500:
        return Unavailable(text, status_code=status)
    if key == "modeltimeout":
        return Transport(text, status_code=status)
    lowered = message.lower()
    if key == "validation" and ("too long" in lowered or "context" in lowered):
        return ContextLengthExceeded(text, status_code=status or 400)
    return OtherModelError(text, status_code=status)


__all__ = ["BedrockModel", "ModelFamily", "Ruleset", "rewrite_tool_schema"]
