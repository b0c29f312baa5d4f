"""A server's `sampling/createMessage` answered by a helikon `Model`, and elicitation callbacks.

Both are off unless configured on the handle: the client then does not advertise the
capability, and the SDK refuses such a request.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

from helikon.core.cancel import CancellationToken
from helikon.core.items import (
    AssistantMessage,
    ContentPart,
    Item,
    SystemMessage,
    UserMessage,
)
from helikon.core.model import Finish, Model, ModelRequest, ModelSettings, TokenDelta

from ._results import content_part

__all__ = ["ElicitationHandler", "elicitation_callback", "sampling_callback"]

ElicitationHandler: TypeAlias = Callable[[Any], "Awaitable[Any] | Any"]
"""Gets the request's `mcp_types.ElicitRequestParams` (`.message`, and `.requested_schema` in form
mode or `.url` in URL mode); returns the answer: a dict (accepted, with that content), `None`
(declined) or an `mcp_types.ElicitResult`. May be sync or async."""

_STOP = {"stop": "endTurn", "length": "maxTokens"}


def _parts(blocks: list[Any]) -> tuple[ContentPart, ...]:
    return tuple(part for part in map(content_part, blocks) if part is not None)


def sampling_request(params: Any) -> ModelRequest:
    """A `mcp_types.CreateMessageRequestParams` as the `ModelRequest` a helikon model answers."""
    messages: list[Item] = []
    if params.system_prompt:
        messages.append(SystemMessage(text=params.system_prompt))
    for message in params.messages:
        parts = _parts(message.content_as_list)
        messages.append(
            UserMessage(content=parts) if message.role == "user" else AssistantMessage(content=parts)
        )
    settings = ModelSettings(temperature=params.temperature, max_output_tokens=params.max_tokens)
    return ModelRequest(messages=messages, model_settings=settings)


def sampling_callback(model: Model) -> Callable[..., Awaitable[Any]]:
    """The SDK's sampling callback, answered by `model` (text only)."""

    async def answer(context: Any, params: Any) -> Any:
        import mcp_types

        text: list[str] = []
        reason = "stop"
        try:
            async for event in model.invoke(sampling_request(params), CancellationToken()):
                if isinstance(event, TokenDelta):
                    text.append(event.text)
                elif isinstance(event, Finish):
                    reason = event.reason
        except Exception as exc:  # the server reads why; the connection stays up
            return mcp_types.ErrorData(
                code=mcp_types.INTERNAL_ERROR, message=f"the sampling model failed: {exc}"
            )
        return mcp_types.CreateMessageResult(
            role="assistant",
            content=mcp_types.TextContent(text="".join(text)),
            model=model.model_name or type(model).__name__,
            stop_reason=_STOP.get(reason, reason),
        )

    return answer


def elicitation_callback(handler: ElicitationHandler) -> Callable[..., Awaitable[Any]]:
    """The SDK's elicitation callback, answered by `handler`."""

    async def answer(context: Any, params: Any) -> Any:
        import mcp_types

        try:
            reply = handler(params)
            if inspect.isawaitable(reply):
                reply = await reply
        except Exception as exc:
            return mcp_types.ErrorData(
                code=mcp_types.INTERNAL_ERROR, message=f"the elicitation handler failed: {exc}"
            )
        if reply is None:
            return mcp_types.ElicitResult(action="decline")
        if isinstance(reply, dict):
            content: dict[str, Any] = reply  # pyright: ignore[reportUnknownVariableType]
            return mcp_types.ElicitResult(action="accept", content=content)
        return reply

    return answer
