"""`GeminiModel`: Google's Gemini models through the official `google-genai` SDK.

Needs the `gemini` extra (`paigasus-helikon[gemini]`). Every call streams
(`client.aio.models.generate_content_stream`), on the Gemini Developer API (an API key)
or on Vertex AI (a bearer token or Application Default Credentials). See
`docs/providers-gemini.md` for the request/event mapping and the caveats.

Example:
    ```python replay=gemini
    from helikon import LlmAgent
    from helikon.providers.gemini import GeminiModel

    model = GeminiModel.from_env("gemini-2.5-flash")  # GEMINI_API_KEY or GOOGLE_API_KEY
    agent = LlmAgent(name="assistant", model=model, instructions="You are a helpful chatbot.")
    print(agent.run_sync("What is the capital of France?").final_output)
    ```
"""

from __future__ import annotations

import base64
import json
import os
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, cast

from helikon.core._internal.extras import missing_extra

try:
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types as genai_types
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("helikon.providers.gemini needs the Google GenAI SDK", "gemini") from exc

from helikon.core.exceptions import (
    ContextLengthExceeded,
    ModelError,
    OtherModelError,
    RateLimited,
    Refused,
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

from ._gemini_request import build_config, build_contents, check_conflict
from ._gemini_schema import sanitize

if TYPE_CHECKING:
    from helikon.core.cancel import CancellationToken

_CAPABILITIES = ModelCapabilities(
    streaming=True,
    tools=True,
    parallel_tool_calls=True,
    structured_output=True,
    reasoning=True,
    vision=True,
    audio=True,
    prompt_caching=True,
)

_FINISH: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
}

_PROVIDER = "gemini"


def _transport_errors() -> tuple[type[BaseException], ...]:
    # The SDK talks httpx, httpx2 or aiohttp depending on what is installed and passed in;
    # their connection failures surface raw, so collect whichever of them exist.
    found: list[type[BaseException]] = [ConnectionError, TimeoutError]
    candidates = (("httpx", "TransportError"), ("httpx2", "TransportError"), ("aiohttp", "ClientError"))
    for module, name in candidates:
        try:
            found.append(getattr(__import__(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(found)


_TRANSPORT_ERRORS = _transport_errors()


class GeminiModel(Model):
    """A Gemini model, streamed. Build it with `from_env`, `developer`, `vertex` or `vertex_from_env`.

    Pass `client=` to use a `google.genai.Client` you configured yourself. The SDK's own
    retries stay off (its default): retries belong to `RetryingModel`.
    """

    def __init__(self, model_id: str, *, client: genai.Client) -> None:
        if not model_id:
            raise UserError("GeminiModel: `model_id` must be a non-empty model name, e.g. `gemini-2.5-flash`")
        self._model_id = model_id
        self._client = client

    @classmethod
    def from_env(cls, model_id: str) -> GeminiModel:
        """The Developer API with the key from `GEMINI_API_KEY` (or else `GOOGLE_API_KEY`)."""
        key = os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        if not key:
            raise UserError(
                "GeminiModel: no API key; set the GEMINI_API_KEY (or GOOGLE_API_KEY) environment variable, "
                "or use GeminiModel.developer(model_id, api_key=...)"
            )
        return cls.developer(model_id, api_key=key)

    @classmethod
    def developer(
        cls, model_id: str, *, api_key: str, http_options: genai_types.HttpOptions | None = None
    ) -> GeminiModel:
        """The Gemini Developer API (generativelanguage.googleapis.com) with `api_key`."""
        if not api_key:
            raise UserError("GeminiModel.developer: `api_key` must be a non-empty Gemini API key")
        return cls(model_id, client=genai.Client(api_key=api_key, http_options=http_options))

    @classmethod
    def vertex(
        cls,
        model_id: str,
        project: str,
        location: str = "global",
        *,
        bearer_token: str | None = None,
        http_options: genai_types.HttpOptions | None = None,
    ) -> GeminiModel:
        """Vertex AI in `project`/`location`.

        With `bearer_token` (an OAuth access token, `ya29....`) every call sends it;
        without, the SDK finds Application Default Credentials on the first call (never
        at construction).
        """
        if not project:
            raise UserError("GeminiModel.vertex: `project` must be a Google Cloud project id")
        credentials: Any = None
        if bearer_token is not None:
            if not bearer_token:
                raise UserError("GeminiModel.vertex: `bearer_token` must be a non-empty access token")
            from google.oauth2.credentials import Credentials

            credentials = Credentials(token=bearer_token)  # pyright: ignore[reportUnknownVariableType]
        client = genai.Client(
            vertexai=True,
            project=project,
            location=location,
            credentials=credentials,
            http_options=http_options,
        )
        return cls(model_id, client=client)

    @classmethod
    def vertex_from_env(cls, model_id: str) -> GeminiModel:
        """Vertex AI with Application Default Credentials.

        Reads `GOOGLE_CLOUD_PROJECT` (required) and `GOOGLE_CLOUD_LOCATION` (default `global`).
        """
        project = os.environ.get("GOOGLE_CLOUD_PROJECT")
        if not project:
            raise UserError(
                "GeminiModel.vertex_from_env: set the GOOGLE_CLOUD_PROJECT environment variable "
                "(and optionally GOOGLE_CLOUD_LOCATION, default `global`)"
            )
        return cls.vertex(model_id, project, os.environ.get("GOOGLE_CLOUD_LOCATION") or "global")

    @property
    def provider(self) -> str:
        """`gemini`."""
        return _PROVIDER

    @property
    def model_name(self) -> str:
        """The model id."""
        return self._model_id

    @property
    def client(self) -> genai.Client:
        """The `google.genai.Client` this model calls."""
        return self._client

    def capabilities(self) -> ModelCapabilities:
        """Streaming, tools (parallel), structured output, reasoning, vision, audio, caching."""
        return _CAPABILITIES

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The `generate_content_stream` arguments (`model`, `contents`, `config`) for `request`.

        Raises:
            UserError: structured output combined with tools or a `tool_choice`.
        """
        check_conflict(request)
        return {
            "model": self._model_id,
            "contents": build_contents(request.messages, provider=_PROVIDER),
            "config": build_config(request),
        }

    async def invoke(self, request: ModelRequest, cancel: CancellationToken) -> AsyncIterator[ModelEvent]:
        """Stream the answer to `request` as `ModelEvent`s; failures raise `ModelError`s."""
        stream = await self._open_stream(self.request_params(request))
        usage: genai_types.GenerateContentResponseUsageMetadata | None = None
        finish: str | None = None
        called = False
        is_cancelled = cancel.is_cancelled
        try:
            async for chunk in stream:
                if is_cancelled():
                    return
                _refuse_a_blocked_prompt(chunk.prompt_feedback)
                if chunk.usage_metadata is not None:
                    usage = chunk.usage_metadata
                candidates = chunk.candidates
                if not candidates:
                    continue
                candidate = candidates[0]
                content = candidate.content
                for part in (content.parts if content is not None else None) or ():
                    called = called or part.function_call is not None
                    for event in _part_events(part):
                        yield event
                if candidate.finish_reason is not None:
                    finish = str(candidate.finish_reason.value)
            if is_cancelled():
                return
            if usage is not None:
                yield _usage(usage)
            if finish is None:
                raise Transport("the Gemini stream ended without a finishReason")
            reason = _FINISH.get(finish, "other")
            yield Finish(reason="tool_calls" if reason == "stop" and called else reason)
        except genai_errors.APIError as exc:
            raise _model_error(exc) from exc
        except _TRANSPORT_ERRORS as exc:
            raise Transport(f"Gemini connection failed: {exc}") from exc
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _open_stream(
        self, params: dict[str, Any]
    ) -> AsyncIterator[genai_types.GenerateContentResponse]:
        """The SDK's response stream for the request `params`; failures raise `ModelError`s."""
        try:
            # No config at all when nothing is set: the SDK then skips per-chunk config work.
            config = (
                genai_types.GenerateContentConfig.model_validate(params["config"])
                if params["config"]
                else None
            )
        except ValueError as exc:
            raise UserError(f"GeminiModel: the request does not fit Gemini's schema: {exc}") from exc
        try:
            models: Any = self._client.aio.models
            return cast(
                AsyncIterator[genai_types.GenerateContentResponse],
                await models.generate_content_stream(
                    model=params["model"], contents=params["contents"], config=config
                ),
            )
        except genai_errors.APIError as exc:
            raise _model_error(exc) from exc
        except _TRANSPORT_ERRORS as exc:
            raise Transport(f"Gemini connection failed: {exc}") from exc


def _refuse_a_blocked_prompt(feedback: genai_types.GenerateContentResponsePromptFeedback | None) -> None:
    """Raise `Refused` when Gemini blocked the prompt."""
    if feedback is not None and feedback.block_reason is not None:
        reason = str(feedback.block_reason.value)
        detail = f": {feedback.block_reason_message}" if feedback.block_reason_message else ""
        raise Refused(f"Gemini blocked the prompt ({reason}){detail}")


def _part_events(part: genai_types.Part) -> Iterator[ModelEvent]:
    """The events one part of a candidate's content carries."""
    raw_signature = part.thought_signature
    signature = _signature(raw_signature) if raw_signature else None
    text = part.text
    if part.function_call is not None:
        call = part.function_call
        if signature is not None:
            yield ReasoningDelta(text="", signature=signature)
        yield ToolCallDelta(
            call_id=call.id or f"call_{uuid.uuid4().hex[:24]}",
            name=call.name or "",
            args_delta=json.dumps(call.args or {}),
        )
    elif part.thought:
        yield ReasoningDelta(text=text or "", signature=signature)
    elif text is not None or signature is not None:
        if text:
            yield TokenDelta(text=text)
        if signature is not None:
            yield ReasoningDelta(text="", signature=signature)


def _usage(usage: genai_types.GenerateContentResponseUsageMetadata) -> Usage:
    thoughts = usage.thoughts_token_count or 0
    return Usage(
        input_tokens=usage.prompt_token_count or 0,
        output_tokens=(usage.candidates_token_count or 0) + thoughts,
        cached_input_tokens=usage.cached_content_token_count or 0,
        reasoning_tokens=thoughts,
    )


# The per-delta text event, built without the keyword `__init__` (its one field given).


def _signature(raw: bytes | str) -> str:
    return base64.b64encode(raw).decode() if isinstance(raw, bytes) else raw


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def _retry_after_ms(exc: genai_errors.APIError) -> int | None:
    """The retry hint: google.rpc.RetryInfo's `retryDelay` ("37s"), else a Retry-After header."""
    raw_exc: Any = exc
    body: Any = raw_exc.details
    error: Any = cast(dict[str, Any], body).get("error") if isinstance(body, dict) else None
    details: Any = cast(dict[str, Any], error).get("details") if isinstance(error, dict) else None
    for detail in cast(list[Any], details) if isinstance(details, list) else []:
        entry = cast(dict[str, Any], detail) if isinstance(detail, dict) else {}
        if str(entry.get("@type", "")).endswith("RetryInfo"):
            match = _DURATION.match(str(entry.get("retryDelay", "")))
            if match:
                return int(float(match.group(1)) * 1000)
    headers: Any = getattr(raw_exc.response, "headers", None)
    raw = headers.get("retry-after") if headers is not None else None
    if raw is not None:
        try:
            return int(float(raw) * 1000)
        except ValueError:
            return None
    return None


def _model_error(exc: genai_errors.APIError) -> ModelError:
    """Translate a google-genai `APIError` (HTTP status, or an error inside the stream)."""
    code = exc.code
    message = exc.message or str(exc)
    text = f"Gemini {code} {exc.status or 'error'}: {message}"
    if code == 429:
        return RateLimited(text, retry_after_ms=_retry_after_ms(exc), status_code=429)
    if code >= 500:
        return Unavailable(text, status_code=code)
    lowered = message.lower()
    if code == 400 and "token" in lowered and ("exceeds" in lowered or "too long" in lowered):
        return ContextLengthExceeded(text, status_code=code)
    if code == 408:
        return Transport(text, status_code=code)
    return OtherModelError(text, status_code=code)


__all__ = ["GeminiModel", "sanitize"]
