"""Map a helikon `ModelRequest` to the keyword arguments of Bedrock's `converse_stream`.

Pure functions over plain dicts: no AWS SDK import, so they are cheap to test.
"""

from __future__ import annotations

import base64
import enum
from collections.abc import Sequence
from typing import Any

from helikon.core.exceptions import UserError
from helikon.core.items import (
    AudioPart,
    ContentPart,
    ImagePart,
    Item,
    ReasoningPart,
    TextPart,
    ToolResult,
    ToolUsePart,
    UrlSource,
)
from helikon.core.model import ModelCapabilities, ModelRequest, NamedToolChoice, ToolChoice

from ._bedrock_schema import Ruleset, rewrite_tool_schema
from ._turns import fold_turns

Block = dict[str, Any]

STRUCTURED_TOOL = "helikon_structured_output"
"""The reserved tool that carries `ResponseFormat.json_schema` on forced-tool families."""

PROVIDER = "aws.bedrock"

# Cross-region inference profiles prefix the model id with a geography.
_REGION_PREFIXES = ("us-gov.", "us.", "eu.", "apac.", "ap.", "jp.", "au.", "ca.", "global.")


class ModelFamily(enum.Enum):
    """The model family behind a Bedrock model id; decides what the Converse API accepts."""

    ANTHROPIC = "anthropic"
    AMAZON_NOVA = "amazon_nova"
    AMAZON_TITAN = "amazon_titan"
    LLAMA = "llama"
    MISTRAL = "mistral"
    COHERE = "cohere"
    UNKNOWN = "unknown"

    @classmethod
    def detect(cls, model_id: str) -> ModelFamily:
        """The family of `model_id` (an id, an inference-profile id or an ARN).

        Example:
            ```python
            from helikon.providers.bedrock import ModelFamily

            assert ModelFamily.detect("us.anthropic.claude-3-7-sonnet-20250219-v1:0") is ModelFamily.ANTHROPIC
            assert ModelFamily.detect("amazon.nova-pro-v1:0") is ModelFamily.AMAZON_NOVA
            assert ModelFamily.detect("meta.llama3-70b-instruct-v1:0") is ModelFamily.LLAMA
            ```
        """
        name = model_id.rsplit("/", 1)[-1].lower()
        for prefix in _REGION_PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix) :]
                break
        for start, family in _FAMILY_PREFIXES:
            if name.startswith(start):
                return family
        return cls.UNKNOWN

    @property
    def forced_tool_output(self) -> bool:
        """Whether `ResponseFormat.json_schema` is synthesized as a forced tool call."""
        return self in (ModelFamily.ANTHROPIC, ModelFamily.AMAZON_NOVA, ModelFamily.MISTRAL)


_FAMILY_PREFIXES = (
    ("anthropic.", ModelFamily.ANTHROPIC),
    ("amazon.nova", ModelFamily.AMAZON_NOVA),
    ("amazon.titan", ModelFamily.AMAZON_TITAN),
    ("meta.llama", ModelFamily.LLAMA),
    ("mistral.", ModelFamily.MISTRAL),
    ("cohere.", ModelFamily.COHERE),
)

_BASE = ModelCapabilities(streaming=True, tools=True)
CAPABILITIES: dict[ModelFamily, ModelCapabilities] = {
    ModelFamily.ANTHROPIC: ModelCapabilities(
        streaming=True,
        tools=True,
        parallel_tool_calls=True,
        structured_output=True,
        reasoning=True,
        vision=True,
    ),
    ModelFamily.AMAZON_NOVA: ModelCapabilities(
        streaming=True, tools=True, structured_output=True, vision=True
    ),
    ModelFamily.MISTRAL: ModelCapabilities(streaming=True, tools=True, structured_output=True),
    ModelFamily.AMAZON_TITAN: ModelCapabilities(streaming=True),
    ModelFamily.LLAMA: _BASE,
    ModelFamily.COHERE: _BASE,
    ModelFamily.UNKNOWN: _BASE,
}


def build_params(request: ModelRequest, *, model_id: str, family: ModelFamily) -> dict[str, Any]:
    """The `converse_stream` keyword arguments for `request`."""
    system, messages = _conversation(request.messages)
    settings = request.model_settings
    params: dict[str, Any] = {"modelId": model_id, "messages": messages}
    if system:
        params["system"] = [{"text": text} for text in system]
    inference: dict[str, Any] = {}
    if settings.temperature is not None:
        inference["temperature"] = settings.temperature
    if settings.top_p is not None:
        inference["topP"] = settings.top_p
    if settings.max_output_tokens is not None:
        inference["maxTokens"] = settings.max_output_tokens
    if inference:
        params["inferenceConfig"] = inference

    tools: list[Block] = [
        {
            "toolSpec": {
                "name": tool.name,
                "description": tool.description or tool.name,
                "inputSchema": {"json": rewrite_tool_schema(tool.parameters, Ruleset.STRICT)},
            }
        }
        for tool in request.tools
    ]
    choice: Block | None = None
    if request.tools and settings.tool_choice is not None and settings.tool_choice != "none":
        choice = _tool_choice(settings.tool_choice)
    if settings.tool_choice == "none" and not _has_tool_blocks(messages):
        # Converse has no "none" choice: leave the tools out. A history with tool blocks
        # must still carry a toolConfig, so then the tools go (without a choice).
        tools = []
    fmt = settings.response_format
    if fmt is not None and fmt.schema is not None and structured_output(request, family):
        tools.append(
            {
                "toolSpec": {
                    "name": STRUCTURED_TOOL,
                    "description": f"Give the final answer ({fmt.name}) as this tool's input.",
                    "inputSchema": {"json": rewrite_tool_schema(fmt.schema, Ruleset.STRICT)},
                }
            }
        )
        # Alone, the output tool is forced; next to the caller's tools the model must call
        # one of them, so a tool loop can still run before the final answer.
        choice = {"tool": {"name": STRUCTURED_TOOL}} if len(tools) == 1 else {"any": {}}
    if tools:
        config: Block = {"tools": tools}
        if choice is not None:
            config["toolChoice"] = choice
        params["toolConfig"] = config
    return params


def structured_output(request: ModelRequest, family: ModelFamily) -> bool:
    """Whether this request's answer comes through the reserved structured-output tool."""
    fmt = request.model_settings.response_format
    return (
        family.forced_tool_output and fmt is not None and fmt.type == "json_schema" and fmt.schema is not None
    )


def _has_tool_blocks(messages: list[Block]) -> bool:
    return any("toolUse" in b or "toolResult" in b for m in messages for b in m["content"])


def _tool_choice(choice: ToolChoice) -> Block:
    if isinstance(choice, NamedToolChoice):
        return {"tool": {"name": choice.name}}
    return {"auto": {}} if choice == "auto" else {"any": {}}


def _conversation(items: Sequence[Item]) -> tuple[list[str], list[Block]]:
    """System texts (hoisted, in order) and the alternating user/assistant messages."""
    return fold_turns(
        items,
        user_block=_user_block,
        assistant_block=_assistant_block,
        tool_use=_tool_use,
        tool_result=_tool_result,
    )


def _tool_use(call_id: str, name: str, args: Any) -> Block:
    # Arguments that did not parse as JSON are kept as the raw string by the driver;
    # Converse only accepts an object here, so such a call goes back with `{}`.
    return {"toolUse": {"toolUseId": call_id, "name": name, "input": args if isinstance(args, dict) else {}}}


def _image(part: ImagePart) -> Block:
    source = part.source
    if isinstance(source, UrlSource):
        if source.url.startswith("s3://"):
            return {
                "image": {
                    "format": _format(source.url.rsplit(".", 1)[-1]),
                    "source": {"s3Location": {"uri": source.url}},
                }
            }
        raise UserError(
            "BedrockModel: Converse takes images inline or from s3:// only; download the URL and "
            "pass a Base64Source"
        )
    fmt = _format(source.media_type.rsplit("/", 1)[-1])
    return {"image": {"format": fmt, "source": {"bytes": base64.b64decode(source.data)}}}


def _format(kind: str) -> str:
    kind = kind.lower()
    return "jpeg" if kind == "jpg" else kind


def _user_block(part: ContentPart) -> Block | None:
    if isinstance(part, TextPart):
        return {"text": part.text} if part.text else None
    if isinstance(part, ImagePart):
        return _image(part)
    if isinstance(part, AudioPart):
        raise UserError("BedrockModel: Converse does not accept audio input; remove the AudioPart")
    return None  # reasoning / tool_use parts have no place in a user turn


def _assistant_block(part: ContentPart) -> Block | None:
    if isinstance(part, TextPart):
        return {"text": part.text} if part.text else None
    if isinstance(part, ReasoningPart):
        # Only reasoning Bedrock produced (and signed) can go back; another provider's is dropped.
        if part.provider not in (None, PROVIDER) or not part.text:
            return None
        text: Block = {"text": part.text}
        if part.signature:
            text["signature"] = part.signature
        return {"reasoningContent": {"reasoningText": text}}
    if isinstance(part, ToolUsePart):
        return _tool_use(part.call_id, part.name, part.args)
    if isinstance(part, ImagePart):
        return _image(part)
    return None


def _tool_result(result: ToolResult) -> Block:
    content: list[Block] = []
    for part in result.content:
        if isinstance(part, TextPart):
            content.append({"text": part.text})
        elif isinstance(part, ImagePart):
            content.append(_image(part))
    if not content:
        content.append({"text": ""})
    status = "error" if result.is_error else "success"
    return {"toolResult": {"toolUseId": result.call_id, "content": content, "status": status}}
