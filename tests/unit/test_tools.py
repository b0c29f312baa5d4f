"""`@tool`: schemas from signatures and docstrings, invocation, serialization, and misuse."""

import asyncio
import dataclasses
import json
import socket
import threading
from datetime import datetime
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationInfo, field_validator

from helikon import (
    FunctionTool,
    ImagePart,
    InvalidArgs,
    JsonValue,
    RunContext,
    TextPart,
    Tool,
    ToolContext,
    ToolEffect,
    ToolError,
    ToolOutput,
    UrlSource,
    UserError,
    tool,
)

# --- helpers ---------------------------------------------------------------------------------


def _tree(value: object) -> Any:
    """A JSON value the test reads into freely (its shape is what the test asserts)."""
    return value


def make_ctx(user_ctx: Any = None) -> ToolContext[Any]:
    return ToolContext(RunContext.ephemeral(user_ctx), call_id="call_1", tool_name="t", max_agent_depth=8)


def all_keys(node: Any) -> list[str]:
    """Every dict key anywhere in a JSON value."""
    if isinstance(node, dict):
        return [k for k, v in node.items() for k in (k, *all_keys(v))]
    if isinstance(node, list):
        return [k for v in node for k in all_keys(v)]
    return []


class Address(BaseModel):
    street: str
    zip_code: int = 0


class Person(BaseModel):
    name: str
    address: Address


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class NoSchema:
    """A plain class: pydantic cannot derive a JSON Schema from it."""


# --- schema from signature and docstring -----------------------------------------------------


@tool
async def get_forecast(city: str, days: int = 3, units: Literal["c", "f"] = "c") -> str:
    """Get the weather forecast for a city.

    Uses the national weather service.

    Args:
        city: The city name, e.g. "Paris".
        days: How many days ahead.
    """
    return f"{city}:{days}:{units}"


def test_name_description_and_parameters_come_from_the_function() -> None:
    assert isinstance(get_forecast, FunctionTool)
    assert get_forecast.name == "get_forecast"
    assert get_forecast.description == (
        "Get the weather forecast for a city.\n\nUses the national weather service."
    )
    assert get_forecast.schema == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "city": {"type": "string", "description": 'The city name, e.g. "Paris".'},
            "days": {"type": "integer", "default": 3, "description": "How many days ahead."},
            "units": {"type": "string", "enum": ["c", "f"], "default": "c"},
        },
        "required": ["city"],
    }
    # the Args section is not repeated in the description
    assert "Args" not in get_forecast.description


def test_a_function_tool_satisfies_the_tool_protocol() -> None:
    assert isinstance(get_forecast, Tool)
    assert repr(get_forecast) == "FunctionTool('get_forecast')"


def test_parameter_order_is_kept_in_properties_and_required() -> None:
    @tool
    def ordered(zeta: int, alpha: int, mid: int = 1, beta: int = 2) -> int:
        return 0

    assert list(_tree(ordered.schema)["properties"]) == ["zeta", "alpha", "mid", "beta"]
    assert ordered.schema["required"] == ["zeta", "alpha"]


def test_annotated_field_description() -> None:
    @tool
    def budget(category: Annotated[str, Field(description='Spending category, e.g. "Dining".')]) -> str:
        """Look up a budget."""
        return category

    assert _tree(budget.schema)["properties"]["category"] == {
        "type": "string",
        "description": 'Spending category, e.g. "Dining".',
    }
    assert budget.description == "Look up a budget."


def test_the_docstring_args_section_wins_over_an_annotated_description() -> None:
    @tool
    def both(x: Annotated[int, Field(description="from Field")]) -> int:
        """Do it.

        Args:
            x: from the docstring
        """
        return x

    assert _tree(both.schema)["properties"]["x"]["description"] == "from the docstring"


def test_field_constraints_reach_the_schema() -> None:
    @tool
    def bounded(n: Annotated[int, Field(ge=1, le=10, description="1-10")] = 5) -> int:
        return n

    assert _tree(bounded.schema)["properties"]["n"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 10,
        "default": 5,
        "description": "1-10",
    }
    assert "required" not in bounded.schema


def test_a_function_without_docstring_has_an_empty_description() -> None:
    @tool
    def bare(x: int) -> int:
        return x

    assert bare.description == ""


def test_explicit_name_and_description_override_the_function() -> None:
    @tool(name="lookup-v2", description="Look things up.")
    def lookup(q: str) -> str:
        """Not this."""
        return q

    assert lookup.name == "lookup-v2"
    assert lookup.description == "Look things up."


def test_nested_models_go_to_defs_and_the_schema_has_no_auto_titles() -> None:
    @tool
    def register(person: Person, tags: list[str] | None = None) -> None:
        """Register a person."""

    schema = _tree(register.schema)
    assert schema["properties"]["person"] == {"$ref": "#/$defs/Person"}
    assert schema["$defs"]["Person"] == {
        "type": "object",
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/Address"}},
        "required": ["name", "address"],
    }
    assert schema["$defs"]["Address"]["properties"]["zip_code"] == {"type": "integer", "default": 0}
    assert schema["properties"]["tags"] == {
        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
        "default": None,
    }
    assert "title" not in all_keys(schema)


def test_a_parameter_named_title_is_kept_while_auto_titles_go() -> None:
    @tool
    def rename(title: str, subtitle: str = "") -> str:
        return title

    assert list(_tree(rename.schema)["properties"]) == ["title", "subtitle"]
    assert _tree(rename.schema)["properties"]["title"] == {"type": "string"}
    assert rename.schema["required"] == ["title"]


def test_parameters_named_like_schema_keywords_are_schemas_too() -> None:
    @tool
    def keywords(default: Address, enum: str, const: int = 1) -> None:
        return None

    assert _tree(keywords.schema)["properties"] == {
        "default": {"$ref": "#/$defs/Address"},
        "enum": {"type": "string"},
        "const": {"type": "integer", "default": 1},
    }
    assert "title" not in all_keys(keywords.schema)


def test_a_default_value_holding_a_title_key_is_left_whole() -> None:
    @tool
    def tag(meta: dict[str, str] = {"title": "Dr"}) -> str:  # noqa: B006 - read-only default
        return meta["title"]

    assert _tree(tag.schema)["properties"]["meta"]["default"] == {"title": "Dr"}


@pytest.mark.parametrize("name", ["schema", "json", "copy", "dict", "model_config", "model_name", "_id"])
async def test_parameter_names_that_clash_with_pydantic_still_work(name: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"def echo({name}: int) -> int:\n    return {name} * 2", namespace)
    echo = tool(namespace["echo"])

    assert _tree(echo.schema)["properties"] == {name: {"type": "integer"}}
    assert echo.schema["required"] == [name]
    out = await echo.invoke(make_ctx(), {name: 21})
    assert out.value == 42


def test_output_schema_from_the_return_annotation() -> None:
    @tool
    def whois(name: str) -> Person:
        raise NotImplementedError

    assert whois.output_schema == {
        "type": "object",
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/Address"}},
        "required": ["name", "address"],
        "$defs": {
            "Address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "zip_code": {"type": "integer", "default": 0}},
                "required": ["street"],
            }
        },
    }

    @tool
    def totals(month: str) -> dict[str, float]:
        raise NotImplementedError

    assert totals.output_schema == {"type": "object", "additionalProperties": {"type": "number"}}


def test_no_output_schema_without_a_meaningful_return_annotation() -> None:
    @tool
    def unannotated(x: int):  # type: ignore[no-untyped-def]
        return x

    @tool
    def returns_none(x: int) -> None:
        return None

    @tool
    def returns_any(x: int) -> Any:
        return x

    assert unannotated.output_schema is None
    assert returns_none.output_schema is None
    assert returns_any.output_schema is None


def test_an_unannotated_parameter_accepts_any_json() -> None:
    @tool
    def loose(x, y=2):  # type: ignore[no-untyped-def]
        return x

    assert _tree(loose.schema)["properties"] == {"x": {}, "y": {"default": 2}}
    assert loose.schema["required"] == ["x"]


def test_effect_defaults_to_side_effect_and_strict_to_false() -> None:
    assert get_forecast.effect is ToolEffect.SIDE_EFFECT
    assert get_forecast.strict is False


@pytest.mark.parametrize("effect", list(ToolEffect))
def test_explicit_effect(effect: ToolEffect) -> None:
    @tool(effect=effect)
    def act(x: int) -> int:
        return x

    assert act.effect is effect


def test_strict_flag() -> None:
    @tool(strict=True)
    def precise(x: int) -> int:
        return x

    assert precise.strict is True


def test_effect_values_are_the_book_names() -> None:
    assert [e.value for e in ToolEffect] == ["read_only", "write", "side_effect"]


def test_a_non_effect_is_a_user_error() -> None:
    with pytest.raises(UserError, match="effect='read_only'"):
        tool(name="act", effect="read_only")(lambda x: x)  # type: ignore[arg-type]


# --- the ToolContext parameter ----------------------------------------------------------------


async def test_tool_context_first_parameter_is_passed_and_left_out_of_the_schema() -> None:
    seen: list[Any] = []

    @tool
    async def whoami(ctx: ToolContext[dict[str, int]], greeting: str) -> str:
        seen.append(ctx)
        return f"{greeting} {ctx.user_ctx['user_id']}"

    assert list(_tree(whoami.schema)["properties"]) == ["greeting"]
    ctx = make_ctx({"user_id": 42})
    out = await whoami.invoke(ctx, {"greeting": "hello"})
    assert out.value == "hello 42"
    assert seen == [ctx]


async def test_a_bare_tool_context_annotation_is_recognised() -> None:
    @tool
    def bare_ctx(ctx: ToolContext, n: int) -> int:  # type: ignore[type-arg]
        ctx.state.set("n", n)
        return n

    assert list(_tree(bare_ctx.schema)["properties"]) == ["n"]
    ctx = make_ctx()
    await bare_ctx.invoke(ctx, {"n": 7})
    assert ctx.state.get("n") == 7


async def test_sync_tool_with_context_runs_in_a_worker_thread() -> None:
    threads: list[int] = []

    @tool
    def record(ctx: ToolContext[None], n: int) -> int:
        threads.append(threading.get_ident())
        return n + 1

    out = await record.invoke(make_ctx(), {"n": 1})
    assert out.value == 2
    assert threads and threads[0] != threading.get_ident()


def test_tool_context_elsewhere_is_a_user_error() -> None:
    def late(x: int, ctx: ToolContext[None]) -> int:
        return x

    with pytest.raises(UserError) as info:
        tool(late)
    message = str(info.value)
    assert "'late'" in message
    assert "'ctx'" in message
    assert "first parameter" in message


# --- invoking ---------------------------------------------------------------------------------


async def test_async_tool_runs_on_the_event_loop_thread() -> None:
    threads: list[int] = []

    @tool
    async def where(n: int) -> int:
        threads.append(threading.get_ident())
        return n

    await where.invoke(make_ctx(), {"n": 1})
    assert threads == [threading.get_ident()]


async def test_sync_tool_runs_off_the_event_loop_thread() -> None:
    loop_thread = threading.get_ident()
    seen: list[tuple[int, bool]] = []

    @tool
    def blocking(n: int) -> int:
        try:
            asyncio.get_running_loop()
            on_loop = True
        except RuntimeError:
            on_loop = False
        seen.append((threading.get_ident(), on_loop))
        return n * 3

    out = await blocking.invoke(make_ctx(), {"n": 2})
    assert out.value == 6
    [(thread, on_loop)] = seen
    assert thread != loop_thread
    assert on_loop is False


async def test_sync_tools_do_not_block_the_loop() -> None:
    started = threading.Event()
    release = threading.Event()

    @tool
    def wait_for_release(n: int) -> int:
        started.set()
        assert release.wait(timeout=5)
        return n

    task = asyncio.ensure_future(wait_for_release.invoke(make_ctx(), {"n": 9}))
    assert await asyncio.to_thread(started.wait, 5)
    # the loop is still free while the tool blocks its thread
    assert not task.done()
    release.set()
    assert (await task).value == 9


async def test_invoke_with_dict_args() -> None:
    out = await get_forecast.invoke(make_ctx(), {"city": "Paris", "days": 5})
    assert out == ToolOutput("Paris:5:c")


async def test_invoke_with_json_string_args() -> None:
    out = await get_forecast.invoke(make_ctx(), '{"city": "Oslo", "units": "f"}')
    assert out.value == "Oslo:3:f"


async def test_invoke_without_args_for_a_tool_without_parameters() -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert ping.schema == {"type": "object", "additionalProperties": False, "properties": {}}
    for args in ({}, None, "", "  "):
        assert (await ping.invoke(make_ctx(), args)).value == "pong"


async def test_invalid_json_is_invalid_args() -> None:
    with pytest.raises(InvalidArgs) as info:
        await get_forecast.invoke(make_ctx(), '{"city": "Par')
    assert isinstance(info.value, ToolError)
    assert len(info.value.schema_errors) == 1
    assert "not valid JSON" in info.value.schema_errors[0]


async def test_schema_mismatch_names_the_field() -> None:
    with pytest.raises(InvalidArgs) as info:
        await get_forecast.invoke(make_ctx(), {"city": "Paris", "days": "soon"})
    [error] = info.value.schema_errors
    assert error.startswith("days: ")
    assert "integer" in error
    assert "days" in str(info.value)


async def test_a_missing_required_argument_names_the_field() -> None:
    with pytest.raises(InvalidArgs) as info:
        await get_forecast.invoke(make_ctx(), {"days": 1})
    assert info.value.schema_errors == ("city: Field required",)


async def test_an_enum_mismatch_names_the_field() -> None:
    with pytest.raises(InvalidArgs) as info:
        await get_forecast.invoke(make_ctx(), {"city": "x", "units": "k"})
    [error] = info.value.schema_errors
    assert error.startswith("units: ")


async def test_nested_model_errors_name_the_path() -> None:
    @tool
    def register(person: Person, note: str = "") -> str:
        return person.name

    with pytest.raises(InvalidArgs) as info:
        await register.invoke(make_ctx(), {"person": {"name": "A", "address": {"zip_code": 1}}})
    assert info.value.schema_errors == ("person.address.street: Field required",)
    out = await register.invoke(make_ctx(), {"person": {"name": "A", "address": {"street": "Main"}}})
    assert out.value == "A"


async def test_extra_arguments_are_rejected() -> None:
    with pytest.raises(InvalidArgs) as info:
        await get_forecast.invoke(make_ctx(), {"city": "Paris", "country": "FR"})
    [error] = info.value.schema_errors
    assert error.startswith("country: ")
    assert "Extra inputs are not permitted" in error


async def test_non_object_arguments_are_invalid() -> None:
    cases: list[JsonValue] = [[1, 2], '"Paris"', "42"]
    for args in cases:
        with pytest.raises(InvalidArgs) as info:
            await get_forecast.invoke(make_ctx(), args)
        assert info.value.schema_errors[0].startswith("(arguments): ")


async def _outcome(a_tool: FunctionTool[Any], args: JsonValue) -> object:
    try:
        return await a_tool.invoke(make_ctx(), args)
    except InvalidArgs as exc:
        return ("InvalidArgs", exc.schema_errors)


@pytest.mark.parametrize(
    "text",
    [
        '{"city": "Paris", "days": "soon"}',
        '{"days": 1}',
        '{"city": "Paris", "country": "FR"}',
        '{"city": "x", "units": "k"}',
        '{"city": 3}',
        "[1, 2]",
        "42",
        '{"city": "Paris", "city": "Oslo"}',
        '{"city": "\\ud800"}',  # a lone surrogate: Python's JSON reads it, pydantic's does not
        '  {"city": "Paris"}  ',
    ],
)
async def test_json_text_arguments_get_what_their_parsed_form_gets(text: str) -> None:
    assert await _outcome(get_forecast, text) == await _outcome(get_forecast, json.loads(text))


@pytest.mark.parametrize("text", ['{"city": "Par', '{"city": "Paris"} x', "{bad", "nul"])
async def test_text_that_is_not_json_is_refused_with_the_json_modules_words(text: str) -> None:
    with pytest.raises(ValueError) as parsing:
        json.loads(text)
    words = f"the arguments are not valid JSON: {parsing.value}"
    assert await _outcome(get_forecast, text) == ("InvalidArgs", (words,))


async def test_deeply_nested_json_text_is_read_as_its_parsed_form() -> None:
    @tool
    def depth(value: Any) -> int:
        levels = 0
        while isinstance(value, list) and value:
            value, levels = value[0], levels + 1  # pyright: ignore[reportUnknownVariableType]
        return levels

    deep = '{"value": ' + "[" * 300 + "]" * 300 + "}"  # deeper than pydantic's JSON parser goes
    assert await _outcome(depth, deep) == await _outcome(depth, json.loads(deep)) == ToolOutput(299)


class Reading(BaseModel):
    unit: str

    @field_validator("unit")
    @classmethod
    def _seen(cls, value: str, info: ValidationInfo) -> str:
        return f"{value} ({info.mode})"


async def test_json_text_arguments_are_validated_as_json() -> None:
    @tool
    def read(reading: Reading) -> str:
        return reading.unit

    assert (await read.invoke(make_ctx(), '{"unit": "C"}')).value == "C (json)"
    assert (await read.invoke(make_ctx(), {"unit": "C"})).value == "C (python)"


class StrictReading(BaseModel):
    model_config = ConfigDict(strict=True)
    at: datetime


async def test_arguments_json_mode_reads_otherwise_are_validated_in_their_parsed_form() -> None:
    # pydantic's JSON mode would take these strict values; validated parsed, as before, it does not.
    @tool
    def when(at: Annotated[datetime, Strict()]) -> str:
        return at.isoformat()

    @tool
    def reading(value: StrictReading) -> str:
        return value.at.isoformat()

    @tool
    def pair(xy: Annotated[tuple[int, int], Strict()]) -> int:
        return xy[0]

    for a_tool, text in [
        (when, '{"at": "2024-01-01T00:00:00"}'),
        (reading, '{"at": "2024-01-01T00:00:00"}'),
        (pair, '{"xy": [1, 2]}'),
    ]:
        outcome = await _outcome(a_tool, text)
        assert outcome == await _outcome(a_tool, json.loads(text))
        assert isinstance(outcome, tuple) and outcome[0] == "InvalidArgs", a_tool.name


async def test_the_tool_receives_validated_python_values() -> None:
    received: list[Any] = []

    @tool
    def take(person: Person, point: Point, ratio: float = 0.5) -> None:
        received.extend([person, point, ratio])

    await take.invoke(
        make_ctx(), {"person": {"name": "A", "address": {"street": "S"}}, "point": {"x": 1}, "ratio": 2}
    )
    assert received == [Person(name="A", address=Address(street="S")), Point(x=1), 2.0]
    assert isinstance(received[2], float)


async def test_an_exception_from_the_tool_propagates() -> None:
    @tool
    async def broken(x: int) -> int:
        raise RuntimeError(f"boom {x}")

    with pytest.raises(RuntimeError, match="boom 3"):
        await broken.invoke(make_ctx(), {"x": 3})


# --- return values ----------------------------------------------------------------------------


async def test_a_string_travels_raw() -> None:
    @tool
    def quote(x: int) -> str:
        return 'say "hi"\n'

    out = await quote.invoke(make_ctx(), {"x": 1})
    assert out.value == 'say "hi"\n'
    assert out.to_parts() == (TextPart(text='say "hi"\n'),)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (
            Person(name="Ann", address=Address(street="Main")),
            '{"name":"Ann","address":{"street":"Main","zip_code":0}}',
        ),
        (Point(x=1, y=2), '{"x":1,"y":2}'),
        ({"total": 312.4, "count": 18, "ok": True}, '{"total":312.4,"count":18,"ok":true}'),
        ([1, "two", None, 3.5], '[1,"two",null,3.5]'),
        (42, "42"),
        (2.5, "2.5"),
        (False, "false"),
        (None, "null"),
        ({"unicode": "café ☕"}, '{"unicode":"café ☕"}'),
        ((1, 2), "[1,2]"),
    ],
)
async def test_other_values_become_compact_json(value: Any, text: str) -> None:
    @tool
    def produce(x: int):  # type: ignore[no-untyped-def]
        return value

    out = await produce.invoke(make_ctx(), {"x": 1})
    assert out.to_parts() == (TextPart(text=text),)
    assert json.loads(text) == out.value


async def test_the_return_annotation_drives_serialization() -> None:
    @tool
    def whois(name: str) -> Person:
        return Person(name=name, address=Address(street="S", zip_code=5))

    @tool
    async def points(n: int) -> list[Point]:
        return [Point(x=i) for i in range(n)]

    out = await whois.invoke(make_ctx(), {"name": "Bo"})
    assert out.value == {"name": "Bo", "address": {"street": "S", "zip_code": 5}}
    assert out.to_parts()[0] == TextPart(text='{"name":"Bo","address":{"street":"S","zip_code":5}}')
    out = await points.invoke(make_ctx(), {"n": 2})
    assert out.to_parts() == (TextPart(text='[{"x":0,"y":0},{"x":1,"y":0}]'),)


async def test_returning_a_tool_output_passes_it_through() -> None:
    image = ImagePart(source=UrlSource(url="https://example.com/chart.png"))
    explicit = ToolOutput(parts=(TextPart(text="the chart:"), image))

    @tool
    async def chart(month: str) -> ToolOutput:
        return explicit

    out = await chart.invoke(make_ctx(), {"month": "2024-05"})
    assert out is explicit
    assert out.to_parts() == (TextPart(text="the chart:"), image)


async def test_a_non_serializable_return_value_is_a_type_error() -> None:
    @tool
    def leak(x: int):  # type: ignore[no-untyped-def]
        return threading.Lock()

    with pytest.raises(TypeError) as info:
        await leak.invoke(make_ctx(), {"x": 1})
    message = str(info.value)
    assert "'leak'" in message
    assert "cannot be serialized to JSON" in message


async def test_a_non_serializable_value_nested_in_a_dict_is_a_type_error() -> None:
    @tool
    def nested(x: int) -> dict[str, Any]:
        return {"ok": 1, "bad": object()}

    with pytest.raises(TypeError, match=r"tool 'nested' returned a dict, which cannot be serialized to JSON"):
        await nested.invoke(make_ctx(), {"x": 1})


# --- ToolOutput -------------------------------------------------------------------------------


def test_tool_output_to_parts() -> None:
    assert ToolOutput("plain").to_parts() == (TextPart(text="plain"),)
    assert ToolOutput({"a": [1, 2], "b": None}).to_parts() == (TextPart(text='{"a":[1,2],"b":null}'),)
    assert ToolOutput().to_parts() == (TextPart(text="null"),)
    assert ToolOutput({"é": "ü"}).to_parts() == (TextPart(text='{"é":"ü"}'),)


def test_tool_output_explicit_parts_win_over_the_value() -> None:
    parts = (TextPart(text="a"), TextPart(text="b"))
    assert ToolOutput("ignored", parts=parts).to_parts() == parts
    assert ToolOutput(parts=()).to_parts() == ()


def test_tool_output_is_a_frozen_value() -> None:
    out = ToolOutput("x")
    assert out == ToolOutput(value="x")
    assert out != ToolOutput("y")
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.value = "z"  # type: ignore[misc]


# --- misuse at decoration time ----------------------------------------------------------------


def _message(fn: Any, **options: Any) -> str:
    with pytest.raises(UserError) as info:
        tool(**options)(fn) if options else tool(fn)
    assert isinstance(info.value, ValueError)
    return str(info.value)


def test_var_positional_is_a_user_error() -> None:
    def spread(*items: int) -> int:
        return 0

    message = _message(spread)
    assert "'spread'" in message
    assert "'items'" in message
    assert "*args/**kwargs" in message


def test_var_keyword_is_a_user_error() -> None:
    def options(city: str, **extra: str) -> str:
        return city

    message = _message(options)
    assert "'options'" in message
    assert "'extra'" in message


def test_positional_only_is_a_user_error() -> None:
    def pos(x: int, /, y: int) -> int:
        return x

    message = _message(pos)
    assert "'pos'" in message
    assert "'x'" in message
    assert "positional-only" in message


@pytest.mark.parametrize("name", ["has space", "", "x" * 65, "dot.name", "ümlaut", "slash/name"])
def test_an_invalid_name_is_a_user_error(name: str) -> None:
    def fine(x: int) -> int:
        return x

    message = _message(fine, name=name)
    assert repr(name) in message
    assert "1-64 letters, digits, '_' or '-'" in message


def test_a_lambda_needs_an_explicit_name() -> None:
    message = _message(lambda x: x)
    assert "'<lambda>'" in message
    named = tool(name="identity")(lambda x: x)
    assert named.name == "identity"


def test_names_at_the_limits_are_accepted() -> None:
    def fine(x: int) -> int:
        return x

    assert tool(name="a" * 64)(fine).name == "a" * 64
    assert tool(name="A-b_9")(fine).name == "A-b_9"


@pytest.mark.parametrize("bad_type", [socket.socket, NoSchema])
def test_a_parameter_type_without_a_json_schema_is_a_user_error(bad_type: type) -> None:
    def connect(host: str, conn: Any) -> str:
        return host

    connect.__annotations__["conn"] = bad_type
    message = _message(connect)
    assert "'connect'" in message
    assert "'conn'" in message
    assert "JSON Schema" in message
    assert bad_type.__name__ in message


def test_a_return_type_that_cannot_be_serialized_is_a_user_error() -> None:
    def opener(host: str) -> socket.socket:
        raise NotImplementedError

    message = _message(opener)
    assert "'opener'" in message
    assert "return type" in message
    assert "socket" in message
    assert "cannot be serialized to JSON" in message


@pytest.mark.parametrize("value", [42, "not a function", None])
def test_a_non_callable_is_a_user_error(value: Any) -> None:
    with pytest.raises(UserError, match="expected a function") as info:
        FunctionTool(value)
    assert type(value).__name__ in str(info.value)


def test_unresolvable_type_hints_are_a_user_error() -> None:
    def forward(x: "DoesNotExist") -> int:  # type: ignore[name-defined]  # noqa: F821
        return 0

    message = _message(forward)
    assert "'forward'" in message
    assert "DoesNotExist" in message


def test_a_tool_that_returns_its_own_tool_output_has_no_output_schema() -> None:
    from helikon import ToolOutput

    @tool
    async def picture() -> ToolOutput:
        """Return explicit content parts."""
        return ToolOutput(value="x")

    assert picture.output_schema is None
