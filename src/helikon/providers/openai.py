"""`OpenAIModel`: the OpenAI Chat Completions and Responses APIs, and OpenAI-compatible servers.

Needs the `openai` extra (`paigasus-helikon[openai]`). Every call streams; chunks become
`ModelEvent`s as they arrive, and SDK exceptions are translated into `ModelError` variants
at this boundary. See `docs/providers-openai.md`.

Example:
    ```python replay=openai
    from helikon import LlmAgent
    from helikon.providers.openai import OpenAIModel

    model = OpenAIModel.chat("gpt-5")              # reads OPENAI_API_KEY
    responses = OpenAIModel.responses("gpt-5.5")   # the Responses API
    local = OpenAIModel.chat("llama3.2", base_url="http://localhost:11434/v1")  # no key needed
    print(LlmAgent(name="geo", model=model).run_sync("What is the capital of France?").final_output)
    ```
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import AsyncIterator
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from helikon.core._internal.extras import missing_extra

try:
    import openai
    from openai import AsyncOpenAI, AsyncStream
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("helikon.providers.openai needs the OpenAI SDK", "openai") from exc

from helikon.core._internal.carrier import carrier
from helikon.core.cancel import CancellationToken
from helikon.core.exceptions import ModelError, Transport, UserError
from helikon.core.model import Model, ModelCapabilities, ModelEvent, ModelRequest

from ._openai_chat import ChatStreamState, chat_body
from ._openai_common import MAPPED_ERRORS, map_error
from ._openai_responses import ResponsesStreamState, responses_body
from ._sdk_json import as_json

__all__ = ["OpenAIModel", "OpenAISettings"]

Api = Literal["chat", "responses"]

_REASONING = re.compile(r"^(o\d|gpt-5)")
_NO_VISION = re.compile(r"^(gpt-3\.5|o1-mini|o3-mini|o1-preview)")


@carrier
class OpenAISettings:
    """What only OpenAI's APIs take, beside the neutral `ModelSettings` of each request.

    `previous_response_id` (Responses API): continue the server-side state of that response;
    only the items after the model's last turn are sent as `input`, as the server holds the
    rest. The Chat Completions API has no server-side state and ignores it.

    Example:
        ```python
        from helikon.core.items import AssistantMessage, UserMessage
        from helikon.core.model import ModelRequest
        from helikon.providers.openai import OpenAIModel, OpenAISettings

        model = OpenAIModel.responses("gpt-5-mini", api_key="unused")
        follow_up = model.with_settings(OpenAISettings(previous_response_id="resp_1"))
        history = [UserMessage.from_text("Hi"), AssistantMessage.from_text("Hello!")]
        body = follow_up.build_body(ModelRequest(messages=[*history, UserMessage.from_text("More")]))
        assert body["previous_response_id"] == "resp_1"
        assert body["input"] == [{"role": "user", "content": "More"}]
        ```
    """

    previous_response_id: str | None = None

    def __post_init__(self) -> None:
        value: object = self.previous_response_id
        if value is not None and (not isinstance(value, str) or not value):
            raise UserError(
                f"OpenAISettings(previous_response_id={value!r}): must be a non-empty response id"
            )


class OpenAIModel(Model):
    """An OpenAI model over Chat Completions (`chat`) or the Responses API (`responses`).

    Build one with `OpenAIModel.chat(...)` or `OpenAIModel.responses(...)`. Pass
    `base_url` (or your own `AsyncOpenAI` as `client`) to talk to an OpenAI-compatible
    server; a server on this machine (`localhost`, `127.0.0.1`, `::1`) needs no API key.
    Connection failures are `Transport` errors that name the endpoint. Clients built here
    have the SDK's own retries off (`max_retries=0`): wrap the model in `RetryingModel`
    for retries. `settings` holds what only OpenAI takes (`OpenAISettings`);
    `with_settings` makes a copy with others.
    """

    def __init__(
        self, model_id: str, *, api: Api, client: AsyncOpenAI, settings: OpenAISettings | None = None
    ) -> None:
        if not model_id:
            raise UserError("OpenAIModel: `model_id` must be a non-empty model name")
        self._model_id = model_id
        self._api: Api = api
        self._client = client
        self._settings = settings if settings is not None else OpenAISettings()

    @classmethod
    def chat(
        cls,
        model_id: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: AsyncOpenAI | None = None,
        organization: str | None = None,
    ) -> OpenAIModel:
        """A model over Chat Completions (`POST /chat/completions`).

        Args:
            model_id: The model name, e.g. `gpt-4o`.
            api_key: The API key; defaults to the `OPENAI_API_KEY` environment variable, and
                is not needed when `base_url` is on this machine (Ollama, vLLM, llama.cpp).
            base_url: Another OpenAI-compatible endpoint, e.g. `http://localhost:11434/v1`.
            client: A ready `AsyncOpenAI` (the other connection arguments are then ignored).
            organization: The OpenAI organization id, if any.

        Raises:
            UserError: If no client is given and no API key is found for a remote endpoint.
        """
        return cls(model_id, api="chat", client=client or _build_client(api_key, base_url, organization))

    @classmethod
    def responses(
        cls,
        model_id: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: AsyncOpenAI | None = None,
        organization: str | None = None,
        settings: OpenAISettings | None = None,
    ) -> OpenAIModel:
        """A model over the Responses API (`POST /responses`); arguments as for `chat`, and `settings`."""
        return cls(
            model_id,
            api="responses",
            client=client or _build_client(api_key, base_url, organization),
            settings=settings,
        )

    def with_settings(self, settings: OpenAISettings) -> OpenAIModel:
        """This model (same API and client) with other OpenAI-only `settings`."""
        return OpenAIModel(self._model_id, api=self._api, client=self._client, settings=settings)

    @property
    def settings(self) -> OpenAISettings:
        """The OpenAI-only settings every request of this model carries."""
        return self._settings

    @property
    def provider(self) -> str:
        """`openai`."""
        return "openai"

    @property
    def model_name(self) -> str:
        """The model id this instance calls."""
        return self._model_id

    @property
    def api(self) -> Api:
        """Which OpenAI API this model calls: `chat` or `responses`."""
        return self._api

    def capabilities(self) -> ModelCapabilities:
        """What the model can do, from its family (a best guess on compatible servers)."""
        caps = (
            ModelCapabilities.empty()
            .with_streaming()
            .with_tools()
            .with_parallel_tool_calls()
            .with_structured_output()
            .with_prompt_caching()
        )
        name = self._model_id.rsplit("/", 1)[-1]
        if _REASONING.match(name):
            caps = caps.with_reasoning()
        if not _NO_VISION.match(name):
            caps = caps.with_vision()
        if self._api == "responses":
            caps = caps.with_server_managed_state()
        return caps

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body `invoke` sends for `request` (for inspection and tests)."""
        if self._api == "chat":
            return chat_body(self._model_id, request)
        return responses_body(
            self._model_id,
            request,
            reasoning=self.capabilities().reasoning,
            previous_response_id=self._settings.previous_response_id,
        )

    async def invoke(self, request: ModelRequest, cancel: CancellationToken) -> AsyncIterator[ModelEvent]:
        """Stream the answer to `request`; raises a `ModelError` variant on failure.

        Stops reading, and closes the HTTP stream, as soon as `cancel` is cancelled.
        """
        body = self.build_body(request)
        if cancel.is_cancelled():
            return
        state: ChatStreamState | ResponsesStreamState
        try:
            if self._api == "chat":
                stream = cast("AsyncStream[Any]", await self._client.chat.completions.create(**body))
                state = ChatStreamState()
            else:
                stream = cast("AsyncStream[Any]", await self._client.responses.create(**body))
                state = ResponsesStreamState()
        except MAPPED_ERRORS as exc:
            raise self._error(exc) from exc
        # The chunks are read as the SDK's decoded JSON: the SDK's own `AsyncStream` over the
        # same response, with `cast_to=object`. The SDK still decodes the SSE, stops at
        # `[DONE]` and raises in-stream errors, but does not build a pydantic model per chunk,
        # which is most of the per-chunk cost and which helikon would only map to its events.
        returned = cast(object, stream)
        chunks: AsyncIterator[dict[str, Any]]
        if isinstance(returned, AsyncStream):
            chunks = cast(
                "AsyncIterator[dict[str, Any]]",
                AsyncStream(cast_to=object, response=stream.response, client=self._client),
            )
        else:  # not the SDK's stream (a test double, a wrapper): its chunks' models as JSON
            chunks = as_json(stream)
        feed = state.feed
        is_cancelled = cancel.is_cancelled
        try:
            iterator = aiter(chunks)
            while not is_cancelled():
                try:
                    chunk = await anext(iterator)
                except StopAsyncIteration:
                    break
                except MAPPED_ERRORS as exc:
                    raise self._error(exc) from exc
                for event in feed(chunk):
                    yield event
            else:
                return  # cancelled: no closing events
            for event in state.finish():
                yield event
        finally:
            await stream.close()

    def _error(self, exc: Exception) -> ModelError:
        """The `ModelError` for `exc`; a connection failure says which endpoint it could not reach."""
        error = map_error(exc)
        if not isinstance(error, Transport):
            return error
        if isinstance(exc, openai.APIConnectionError):  # the request never got an answer
            return Transport(f"could not reach {self._client.base_url}: {error}")
        return Transport(f"the connection to {self._client.base_url} failed: {error}")


_LOCAL_KEY = "no-key-local-server"
"""The key sent to a server on this machine when none is given: the SDK refuses to run without one."""


def _is_local(base_url: str | None) -> bool:
    """Whether `base_url` points at this machine (`localhost`, `*.localhost` or a loopback address)."""
    host = urlsplit(base_url).hostname if base_url else None
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _build_client(api_key: str | None, base_url: str | None, organization: str | None) -> AsyncOpenAI:
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        if not _is_local(base_url or os.environ.get("OPENAI_BASE_URL")):
            raise UserError(
                "OpenAIModel: no API key; pass `api_key=...` or set the OPENAI_API_KEY environment variable "
                "(a server on this machine, base_url=http://localhost:.../v1, needs none)"
            )
        key = _LOCAL_KEY
    return AsyncOpenAI(api_key=key, base_url=base_url, organization=organization, max_retries=0)
