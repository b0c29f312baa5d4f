"""`OutputType`: schemas for structured output, the wrapper for non-objects, and validation."""

import dataclasses
import socket
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, RootModel
from typing_extensions import TypedDict

from helikon import OutputType, ResponseFormat, UserError


def _tree(value: object) -> Any:
    """A JSON value the test reads into freely (its shape is what the test asserts)."""
    return value


class Inner(BaseModel):
    v: int


class Category(BaseModel):
    category: str = Field(description='Spending category, e.g. "Dining".')
    confidence: float
    recurring: bool = False


class Basket(BaseModel):
    owner: str
    items: list[Inner]


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class Movie(TypedDict):
    title: str
    year: int


class Node(BaseModel):
    name: str
    children: list["Node"] = []


class Titled(BaseModel):
    model_config = ConfigDict(title="Transaction Category")

    label: str


class Numbers(RootModel[list[int]]):
    pass


# --- object types: sent as they are -----------------------------------------------------------


def test_a_pydantic_model() -> None:
    out = OutputType(Category)
    assert out.type is Category
    assert out.name == "Category"
    assert out.schema["type"] == "object"
    assert out.schema["required"] == ["category", "confidence"]
    assert _tree(out.schema)["properties"]["category"]["description"] == 'Spending category, e.g. "Dining".'
    assert "response" not in _tree(out.schema)["properties"]

    value, errors = out.validate_text('{"category": "Streaming", "confidence": 0.9}')
    assert errors == ()
    assert value == Category(category="Streaming", confidence=0.9)


def test_a_nested_model_keeps_its_defs_at_the_top() -> None:
    out = OutputType(Basket)
    assert _tree(out.schema)["properties"]["items"] == {
        "type": "array",
        "items": {"$ref": "#/$defs/Inner"},
        "title": "Items",
    }
    assert set(_tree(out.schema)["$defs"]) == {"Inner"}
    value, errors = out.validate_text('{"owner": "me", "items": [{"v": 1}, {"v": 2}]}')
    assert errors == ()
    assert value == Basket(owner="me", items=[Inner(v=1), Inner(v=2)])


def test_a_dataclass() -> None:
    out = OutputType(Point)
    assert out.name == "Point"
    assert out.schema["type"] == "object"
    assert out.schema["required"] == ["x"]
    value, errors = out.validate_text('{"x": 3}')
    assert errors == ()
    assert value == Point(x=3, y=0)


def test_a_typed_dict() -> None:
    out = OutputType(Movie)
    assert out.name == "Movie"
    assert out.schema["type"] == "object"
    assert sorted(_tree(out.schema)["required"]) == ["title", "year"]
    value, errors = out.validate_text('{"title": "Heat", "year": 1995}')
    assert errors == ()
    assert value == {"title": "Heat", "year": 1995}


# --- non-object types: wrapped as {"response": ...} -------------------------------------------


def test_a_list_is_wrapped_on_the_wire_and_unwrapped_on_validation() -> None:
    out = OutputType(list[int])
    assert out.schema == {
        "type": "object",
        "properties": {"response": {"type": "array", "items": {"type": "integer"}}},
        "required": ["response"],
    }
    value, errors = out.validate_text('{"response": [1, 2, 3]}')
    assert errors == ()
    assert value == [1, 2, 3]


def test_a_scalar_is_wrapped() -> None:
    out = OutputType(int)
    assert out.schema == {
        "type": "object",
        "properties": {"response": {"type": "integer"}},
        "required": ["response"],
    }
    assert out.validate_text('{"response": 7}') == (7, ())


def test_a_union_is_wrapped() -> None:
    out = OutputType(int | str)
    assert _tree(out.schema)["properties"]["response"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert out.validate_text('{"response": "x"}') == ("x", ())
    assert out.validate_text('{"response": 4}') == (4, ())


def test_a_literal_is_wrapped() -> None:
    out = OutputType(Literal["yes", "no"])
    assert _tree(out.schema)["properties"]["response"]["enum"] == ["yes", "no"]
    assert out.validate_text('{"response": "no"}') == ("no", ())
    value, errors = out.validate_text('{"response": "maybe"}')
    assert value is None
    assert len(errors) == 1
    assert errors[0].startswith("response: ")


def test_the_defs_of_a_wrapped_type_are_hoisted_to_the_top() -> None:
    out = OutputType(list[Inner])
    assert _tree(out.schema)["properties"]["response"] == {
        "type": "array",
        "items": {"$ref": "#/$defs/Inner"},
    }
    assert set(_tree(out.schema)["$defs"]) == {"Inner"}
    assert "$defs" not in _tree(out.schema)["properties"]["response"]
    # every $ref resolves against the top-level $defs
    assert _tree(out.schema)["$defs"]["Inner"]["properties"]["v"]["type"] == "integer"
    value, errors = out.validate_text('{"response": [{"v": 1}]}')
    assert errors == ()
    assert value == [Inner(v=1)]


def test_an_optional_model_is_wrapped_with_hoisted_defs() -> None:
    out = OutputType(Inner | None)
    assert _tree(out.schema)["properties"]["response"] == {
        "anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]
    }
    assert "Inner" in _tree(out.schema)["$defs"]
    assert out.validate_text('{"response": null}') == (None, ())
    assert out.validate_text('{"response": {"v": 2}}') == (Inner(v=2), ())


def test_a_root_model_over_a_list_is_wrapped() -> None:
    out = OutputType(Numbers)
    assert _tree(out.schema)["properties"]["response"]["type"] == "array"
    value, errors = out.validate_text('{"response": [4, 5]}')
    assert errors == ()
    assert value == Numbers([4, 5])


def test_a_recursive_model_is_wrapped_since_its_schema_root_is_a_ref() -> None:
    # pydantic puts a recursive model's schema in $defs behind a top-level $ref; providers
    # want an object at the top, so it travels wrapped, with the $defs hoisted.
    out = OutputType(Node)
    assert _tree(out.schema)["properties"]["response"] == {"$ref": "#/$defs/Node"}
    assert _tree(out.schema)["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    value, errors = out.validate_text('{"response": {"name": "a", "children": [{"name": "b"}]}}')
    assert errors == ()
    assert value == Node(name="a", children=[Node(name="b")])


def test_a_wrapped_type_needs_the_response_key() -> None:
    out = OutputType(list[int])
    for text in ("[1, 2]", '{"answer": [1]}', '"x"'):
        value, errors = out.validate_text(text)
        assert value is None
        assert errors == ("expected a JSON object with a 'response' key",)


def test_errors_inside_the_wrapper_name_the_path_from_the_top() -> None:
    out = OutputType(list[Inner])
    value, errors = out.validate_text('{"response": [{"v": 1}, {"v": "many"}]}')
    assert value is None
    assert len(errors) == 1
    assert errors[0].startswith("response.1.v: ")


# --- names ------------------------------------------------------------------------------------


def test_name_comes_from_the_schema_title() -> None:
    assert OutputType(Titled).name == "Transaction_Category"


def test_name_falls_back_to_the_type_name_then_a_default() -> None:
    assert OutputType(list[int]).name == "list"
    assert OutputType(int).name == "int"
    # A union is named after its members.
    assert OutputType(int | str).name == "int_or_str"
    assert OutputType(Inner | None).name == "Inner_or_None"
    assert OutputType([Inner, int]).name == "Inner_or_int"


def test_an_explicit_name_wins_and_is_sanitized() -> None:
    assert OutputType(Category, name="my answer!").name == "my_answer_"
    assert OutputType(Category, name="ok-name_2").name == "ok-name_2"
    assert OutputType(Category, name="é/ü").name == "___"
    long = OutputType(Category, name="x" * 100).name
    assert long == "x" * 64


@pytest.mark.parametrize("name", ["a b", "Transaction Category", "x.y", "émoji☕"])
def test_names_only_hold_provider_safe_characters(name: str) -> None:
    sanitized = OutputType(Category, name=name).name
    assert sanitized
    assert all(c.isascii() and (c.isalnum() or c in "_-") for c in sanitized)
    assert len(sanitized) == len(name)


# --- response_format --------------------------------------------------------------------------


def test_response_format_is_strict_json_schema() -> None:
    out = OutputType(Category)
    fmt = out.response_format()
    assert fmt == ResponseFormat(type="json_schema", name="Category", schema=out.schema, strict=True)
    assert fmt.schema is out.schema


def test_response_format_of_a_wrapped_type_carries_the_wrapper() -> None:
    fmt = OutputType(list[int]).response_format()
    assert fmt.type == "json_schema"
    assert fmt.strict is True
    assert fmt.name == "list"
    assert fmt.schema is not None
    assert fmt.schema["required"] == ["response"]


# --- validate_text ----------------------------------------------------------------------------


def test_schema_errors_name_the_field_path() -> None:
    out = OutputType(Basket)
    value, errors = out.validate_text('{"owner": "me", "items": [{"v": 1}, {"v": "x"}]}')
    assert value is None
    assert len(errors) == 1
    assert errors[0].startswith("items.1.v: ")
    assert "integer" in errors[0]


def test_every_missing_field_is_reported() -> None:
    value, errors = OutputType(Category).validate_text("{}")
    assert value is None
    assert errors == ("category: Field required", "confidence: Field required")


def test_a_root_level_type_mismatch_is_reported_at_the_root() -> None:
    value, errors = OutputType(Category).validate_text("[1, 2]")
    assert value is None
    assert len(errors) == 1
    assert errors[0].startswith("(root): ")


@pytest.mark.parametrize("output_type", [Category, list[int]])
@pytest.mark.parametrize("text", ['{"category": "x"', "Sure! Here it is.", ""])
def test_invalid_json_is_reported_as_such(output_type: Any, text: str) -> None:
    value, errors = OutputType(output_type).validate_text(text)
    assert value is None
    assert len(errors) == 1
    assert errors[0].startswith("not valid JSON: ")


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"category": "Dining", "confidence": 1}\n```',
        '```\n{"category": "Dining", "confidence": 1}\n```',
        '  ```json\n{"category": "Dining",\n "confidence": 1}\n```  \n',
        '```json\n{"category": "Dining", "confidence": 1}```',
    ],
)
def test_fenced_json_blocks_are_accepted(text: str) -> None:
    value, errors = OutputType(Category).validate_text(text)
    assert errors == ()
    assert value == Category(category="Dining", confidence=1.0)


def test_a_fenced_wrapped_value_is_accepted() -> None:
    assert OutputType(list[int]).validate_text('```json\n{"response": [1]}\n```') == ([1], ())


def test_parse_returns_the_value() -> None:
    assert OutputType(Point).parse('{"x": 1, "y": 2}') == Point(x=1, y=2)
    assert OutputType(list[str]).parse('{"response": ["a"]}') == ["a"]


def test_parse_raises_a_user_error_with_the_errors() -> None:
    with pytest.raises(UserError) as info:
        OutputType(Category).parse('{"category": 5}')
    message = str(info.value)
    assert message.startswith("the text does not match Category: ")
    assert "category: " in message
    assert "confidence: Field required" in message


def test_parse_of_invalid_json_raises_a_user_error() -> None:
    with pytest.raises(UserError, match="not valid JSON"):
        OutputType(Category).parse("not json")


# --- types pydantic cannot handle -------------------------------------------------------------


class NotAModel:
    """A plain class without a schema."""


@pytest.mark.parametrize("bad", [socket.socket, NotAModel, list[NotAModel]])
def test_an_unsupported_output_type_is_a_user_error(bad: Any) -> None:
    with pytest.raises(UserError) as info:
        OutputType(bad)
    message = str(info.value)
    assert message.startswith(f"output_type={bad!r}: cannot derive a JSON Schema")
    assert "pydantic model" in message
