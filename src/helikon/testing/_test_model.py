"""`TestModel`: a model that calls every tool once with generated arguments, then answers."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

from helikon.core._internal.json_value import JsonObject
from helikon.core.cancel import CancellationToken
from helikon.core.exceptions import UserError
from helikon.core.items import Item, ToolCall, ToolResult, UserMessage
from helikon.core.model import (
    Finish,
    Model,
    ModelCapabilities,
    ModelEvent,
    ModelRequest,
    ResponseFormat,
    TokenDelta,
    ToolCallDelta,
    Usage,
)

from ._mock_model import _CAPABILITIES  # pyright: ignore[reportPrivateUsage]

_WORDS = re.compile(r"[\s\",.:{}\[\]]+")
_WRAP_KEY = "response"  # how OutputType wraps a non-object output type


class TestModel(Model):
    """A model that calls every tool of the request once, then answers; no script needed.

    The first call of a turn (nothing since the last user message has called these tools)
    calls each tool in `call_tools` at once, with arguments generated from its JSON Schema
    (valid for it, the smallest that fit: see `example`). The next call answers
    `custom_output_text`, or by default a JSON object of each tool's result
    (`"success (no tool calls)"` when none ran). A call that asks for structured output
    (a `json_schema` response format) answers `custom_output_args`, or a value generated from
    the schema. Each call reports an estimated `Usage` (50 + the words it was sent, the words
    it answers). Every request is kept in `requests`; one instance can serve concurrent runs.

    Args:
        call_tools: `"all"` (the default), or the names of the tools to call (`[]`: none).
        custom_output_text: The text of the final answer.
        custom_output_args: The structured answer: a pydantic model, a dict of its fields,
            or for a non-object output type the value itself.
        seed: Vary the generated values (0 gives `"a"`, `0` or the lower bound, `False`,
            the first enum member).
        provider: Reported as the model's provider (default `"test"`).
        model_name: Reported as the model's name (default `"test"`).

    Example:
        ```python
        from pydantic import BaseModel

        from helikon import LlmAgent, tool
        from helikon.testing import TestModel

        @tool
        def forecast(city: str, days: int) -> str:
            \"\"\"The weather ahead.\"\"\"
            return f"{days} sunny days in {city}"

        agent = LlmAgent(name="weather", model=TestModel(), tools=[forecast])
        assert agent.run_sync("Weather?").final_output == '{"forecast": "0 sunny days in a"}'

        class Report(BaseModel):
            city: str
            sunny: bool

        typed = LlmAgent(name="typed", model=TestModel(seed=1), tools=[forecast], output_type=Report)
        result = typed.run_sync("Report?")
        assert result.final_output == Report(city="b", sunny=True)
        ```
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        *,
        call_tools: Sequence[str] | Literal["all"] = "all",
        custom_output_text: str | None = None,
        custom_output_args: Any = None,
        seed: int = 0,
        capabilities: ModelCapabilities = _CAPABILITIES,
        provider: str = "test",
        model_name: str = "test",
    ) -> None:
        if isinstance(call_tools, str):
            if call_tools != "all":
                raise UserError(f"TestModel(call_tools={call_tools!r}): give 'all' or a list of tool names")
        elif not all(isinstance(name, str) for name in call_tools):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"TestModel(call_tools={call_tools!r}): give 'all' or a list of tool names")
        if custom_output_text is not None and not isinstance(custom_output_text, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"TestModel(custom_output_text={custom_output_text!r}): expected a string")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"TestModel(seed={seed!r}): expected a non-negative integer")
        self.call_tools: tuple[str, ...] | Literal["all"] = (
            "all" if isinstance(call_tools, str) else tuple(call_tools)
        )
        self.custom_output_text = custom_output_text
        self.custom_output_args = custom_output_args
        self.seed = seed
        self._capabilities = capabilities
        self._provider = provider
        self._model_name = model_name
        self.requests: list[ModelRequest] = []

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model_name(self) -> str:
        return self._model_name

    def capabilities(self) -> ModelCapabilities:
        return self._capabilities

    def example(self, schema: Any) -> Any:
        """The value this model generates for the JSON Schema `schema` (tool arguments, outputs).

        Raises `UserError` naming the place when no value fits (a pattern it cannot match,
        bounds that exclude every number).
        """
        from ._schema_example import schema_example  # ~2 ms (uuid, the regex parser): when a call needs it

        return schema_example(schema, seed=self.seed)

    def invoke(self, request: ModelRequest, cancel: CancellationToken) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        return self._answer(request)

    async def _answer(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        # Inside the stream, so that a schema it cannot serve fails the call, as a request would.
        sent = 50 + sum(_words(_text(item)) for item in request.messages)
        fmt = request.model_settings.response_format
        if fmt is not None and fmt.type != "text":
            events = _text_events(self._structured(fmt))
        else:
            tail = _since_user(request.messages)
            calls = self._calls(request, tail)
            events = calls if calls else _text_events(self._text(tail, {t.name for t in request.tools}))
        answered = 0
        for event in events:
            if isinstance(event, TokenDelta):
                answered += _words(event.text)
            elif isinstance(event, ToolCallDelta):
                answered += _words(event.args_delta)
            yield event
        yield Usage(input_tokens=sent, output_tokens=answered)
        yield Finish(reason="tool_calls" if events and isinstance(events[0], ToolCallDelta) else "stop")

    def _calls(self, request: ModelRequest, tail: Sequence[Item]) -> list[ModelEvent]:
        offered = {t.name: t for t in request.tools}
        if self.call_tools == "all":
            names = list(offered)
        else:
            names = list(self.call_tools)
            for name in names:
                if name not in offered:
                    raise UserError(
                        f"TestModel(call_tools=[...]) names {name!r}, which this request does not offer "
                        f"(its tools: {sorted(offered)})"
                    )
        if not names or any(isinstance(i, ToolCall) and i.name in names for i in tail):
            return []
        earlier = sum(isinstance(item, ToolCall) for item in request.messages)
        events: list[ModelEvent] = []
        for index, name in enumerate(names):
            try:
                args = self.example(offered[name].parameters)
            except UserError as exc:
                raise UserError(f"TestModel, the arguments of tool {name!r}: {exc}") from None
            call_id = f"test_call_{earlier + index + 1}_{name}"
            events.append(ToolCallDelta(call_id=call_id, name=name, args_delta=json.dumps(args)))
        return events

    def _text(self, tail: Sequence[Item], offered: set[str]) -> str:
        """The answer: the custom text, or the results of this turn's calls of the request's tools."""
        if self.custom_output_text is not None:
            return self.custom_output_text
        names = {i.call_id: i.name for i in tail if isinstance(i, ToolCall) and i.name in offered}
        results: dict[str, Any] = {}
        for item in tail:
            name = names.get(item.call_id) if isinstance(item, ToolResult) else None
            if isinstance(item, ToolResult) and name is not None:
                try:
                    results[name] = json.loads(item.text)
                except ValueError:
                    results[name] = item.text
        return json.dumps(results) if results else "success (no tool calls)"

    def _structured(self, fmt: ResponseFormat) -> str:
        schema = fmt.schema
        if self.custom_output_args is None:
            if schema is None:
                return "{}"
            try:
                return json.dumps(self.example(schema))
            except UserError as exc:
                raise UserError(f"TestModel, the structured output {fmt.name!r}: {exc}") from None
        from pydantic_core import to_jsonable_python

        value: Any = to_jsonable_python(self.custom_output_args)
        if _is_wrapper(schema) and not (isinstance(value, dict) and list(value) == [_WRAP_KEY]):  # pyright: ignore[reportUnknownArgumentType]
            return json.dumps({_WRAP_KEY: value})
        return json.dumps(value)


def _is_wrapper(schema: JsonObject | None) -> bool:
    """Whether `schema` is the `{"response": ...}` object OutputType wraps a non-object type in."""
    if schema is None or schema.get("required") != [_WRAP_KEY]:
        return False
    properties = schema.get("properties")
    return isinstance(properties, dict) and list(properties) == [_WRAP_KEY]


def _since_user(messages: Sequence[Item]) -> Sequence[Item]:
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], UserMessage):
            return messages[index + 1 :]
    return messages


def _text(item: Item) -> str:
    if isinstance(item, ToolCall):
        return json.dumps(item.args)
    return getattr(item, "text", "") or ""


def _words(text: str) -> int:
    return len([w for w in _WORDS.split(text) if w])


def _text_events(text: str) -> list[ModelEvent]:
    """`text` streamed a word at a time, as a provider would."""
    words = re.findall(r"\S+\s*|\s+", text) or [""]
    return [TokenDelta(text=w) for w in words]
