"""Map a helikon `ModelRequest` to `generate_content_stream`'s `contents` and `config`.

Pure functions over plain dicts in the `google-genai` SDK's field names (snake_case):
no SDK import, so they are cheap to test.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Any, cast

from helikon.core.exceptions import UserError
from helikon.core.items import (
    AssistantMessage,
    AudioPart,
    ContentPart,
    ImagePart,
    Item,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResult,
    ToolUsePart,
    UrlSource,
    UserMessage,
)
from helikon.core.model import ModelRequest, NamedToolChoice, ToolChoice

from ._gemini_schema import sanitize

Part = dict[str, Any]
Content = dict[str, Any]


def check_conflict(request: ModelRequest) -> None:
    """Raise `UserError` when structured output is combined with function calling.

    Gemini rejects `responseMimeType: application/json` together with active tools; the
    request is wrong before it is sent, so this is developer misuse, not a model failure.
    """
    settings = request.model_settings
    fmt = settings.response_format
    if fmt is None or fmt.type == "text":
        return
    if request.tools or settings.tool_choice is not None:
        raise UserError(
            f"GeminiModel: Gemini rejects structured output (response_format={fmt.type!r}) combined with "
            "function calling; drop the tools and tool_choice from this request, or drop response_format "
            "(e.g. use a final-result tool instead)"
        )


def build_config(request: ModelRequest) -> dict[str, Any]:
    """The `GenerateContentConfig` fields for `request`."""
    settings = request.model_settings
    config: dict[str, Any] = {}
    system = [item.text for item in request.messages if isinstance(item, SystemMessage) and item.text]
    if system:
        config["system_instruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    if settings.temperature is not None:
        config["temperature"] = settings.temperature
    if settings.top_p is not None:
        config["top_p"] = settings.top_p
    if settings.max_output_tokens is not None:
        config["max_output_tokens"] = settings.max_output_tokens
    if request.tools:
        config["tools"] = [
            {
                "function_declarations": [
                    {"name": t.name, "description": t.description, "parameters": sanitize(t.parameters)}
                    for t in request.tools
                ]
            }
        ]
    if settings.tool_choice is not None:
        config["tool_config"] = {"function_calling_config": _tool_choice(settings.tool_choice)}
    fmt = settings.response_format
    if fmt is not None and fmt.type != "text":
        config["response_mime_type"] = "application/json"
        if fmt.type == "json_schema" and fmt.schema is not None:
            config["response_schema"] = sanitize(fmt.schema)
    if request.tools:
        # Function calling is done by helikon's loop, never by the SDK behind its back.
        config["automatic_function_calling"] = {"disable": True}
    return config


def _tool_choice(choice: ToolChoice) -> dict[str, Any]:
    if isinstance(choice, NamedToolChoice):
        return {"mode": "ANY", "allowed_function_names": [choice.name]}
    return {"mode": {"auto": "AUTO", "required": "ANY", "none": "NONE"}[choice]}


def signature_bytes(signature: str) -> bytes:
    """A `thoughtSignature` as the SDK holds it: the base64 text helikon carries, decoded."""
    try:
        return base64.b64decode(signature, altchars=b"-_" if ("-" in signature or "_" in signature) else None)
    except (binascii.Error, ValueError):
        return signature.encode()


def build_contents(items: Sequence[Item], *, provider: str = "gemini") -> list[Content]:
    """The alternating `user`/`model` contents; system messages go to `system_instruction`."""
    contents: list[Content] = []
    pending_signature: str | None = None  # from a ReasoningPart, for the turn's first functionCall
    # Gemini needs the function's name next to its response; older results may not carry it.
    names = {i.call_id: i.name for i in items if isinstance(i, ToolCall)}

    def append(role: str, parts: list[Part]) -> None:
        if not parts:
            return
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})

    def flush_signature() -> None:
        # A signed model turn without a function call: the signature rides on its last part.
        nonlocal pending_signature
        if pending_signature is not None and contents and contents[-1]["role"] == "model":
            contents[-1]["parts"][-1]["thought_signature"] = signature_bytes(pending_signature)
        pending_signature = None

    for item in items:
        if isinstance(item, SystemMessage):
            continue
        if isinstance(item, ToolCall):
            call = _function_call(item.call_id, item.name, item.args)
            if pending_signature is not None:
                call["thought_signature"] = signature_bytes(pending_signature)
                pending_signature = None
            append("model", [call])
            continue
        flush_signature()
        if isinstance(item, UserMessage):
            append("user", [p for part in item.content if (p := _user_part(part)) is not None])
        elif isinstance(item, AssistantMessage):
            parts, pending_signature = _model_parts(item, provider)
            append("model", parts)
        else:
            append("user", [_function_response(item, item.name or names.get(item.call_id, ""))])
    flush_signature()
    if not contents:
        # Instructions only: Gemini requires some contents, and an empty user turn is accepted.
        contents.append({"role": "user", "parts": [{"text": ""}]})
    return contents


def _model_parts(message: AssistantMessage, provider: str) -> tuple[list[Part], str | None]:
    """A model turn's parts, and the signature of its last reasoning signed by `provider` (or None)."""
    parts: list[Part] = []
    signature: str | None = None
    for part in message.content:
        if isinstance(part, ReasoningPart):
            if part.signature and part.provider in (None, provider):
                signature = part.signature
        elif isinstance(part, ToolUsePart):
            parts.append(_function_call(part.call_id, part.name, part.args))
        elif (converted := _user_part(part)) is not None:
            parts.append(converted)
    return parts, signature


def _function_call(call_id: str, name: str, args: Any) -> Part:
    # Arguments that did not parse are kept as the raw string by the driver; Gemini takes
    # only an object, so such a call goes back as `{}`.
    arguments = cast(dict[str, Any], args) if isinstance(args, dict) else {}
    return {"function_call": {"id": call_id, "name": name, "args": arguments}}


def _function_response(result: ToolResult, name: str) -> Part:
    text = result.text
    value: Any
    try:
        value = json.loads(text) if text else ""
    except ValueError:
        value = text
    response: dict[str, Any]
    if isinstance(value, dict):
        response = cast(dict[str, Any], value)
    elif result.is_error:
        response = {"error": value}
    else:
        response = {"result": value}
    body: dict[str, Any] = {"id": result.call_id, "name": name, "response": response}
    return {"function_response": body}


def _user_part(part: ContentPart) -> Part | None:
    if isinstance(part, TextPart):
        return {"text": part.text} if part.text else None
    if isinstance(part, ImagePart | AudioPart):
        source = part.source
        default = "image/*" if isinstance(part, ImagePart) else "audio/*"
        if isinstance(source, UrlSource):
            return {"file_data": {"file_uri": source.url, "mime_type": _guess_mime(source.url, default)}}
        return {"inline_data": {"mime_type": source.media_type, "data": base64.b64decode(source.data)}}
    if isinstance(part, ToolUsePart):
        raise UserError("GeminiModel: a tool_use part belongs in an assistant message, not a user message")
    return None  # reasoning in a user turn has no Gemini form


_MIME = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".pdf": "application/pdf",
}


def _guess_mime(url: str, default: str) -> str:
    path = url.split("?", 1)[0].lower()
    for suffix, mime in _MIME.items():
        if path.endswith(suffix):
            return mime
    return default
