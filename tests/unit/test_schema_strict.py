"""Tests for `helikon.core.schema.strict`, the OpenAI strict-mode schema normalizer."""

from __future__ import annotations

import copy
import enum
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

import helikon.core.schema as schema_module
from helikon.core.schema import strict

# --------------------------------------------------------------------------- helpers

_REJECTED = {
    "default",
    "title",
    "examples",
    "$schema",
    "discriminator",
    "oneOf",
    "allOf",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "patternProperties",
    "propertyNames",
    "unevaluatedProperties",
    "contentEncoding",
    "contentMediaType",
    "readOnly",
    "writeOnly",
    "deprecated",
}

NULL = {"type": "null"}


def _subschemas(schema: Any, path: str = "#"):
    """Yield `(path, subschema)` for every schema in `schema`, walking schema positions only."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _subschemas(sub, f"{path}/properties/{name}")
    items = schema.get("items")
    if isinstance(items, list):
        for index, sub in enumerate(items):
            yield from _subschemas(sub, f"{path}/items/{index}")
    else:
        yield from _subschemas(items, f"{path}/items")
    for keyword in ("anyOf", "prefixItems"):
        for index, sub in enumerate(schema.get(keyword, [])):
            yield from _subschemas(sub, f"{path}/{keyword}/{index}")
    for name, sub in schema.get("$defs", {}).items():
        yield from _subschemas(sub, f"{path}/$defs/{name}")


def _is_object(schema: dict[str, Any]) -> bool:
    type_ = schema.get("type")
    return type_ == "object" or (isinstance(type_, list) and "object" in type_) or "properties" in schema


def _refs(schema: Any) -> list[str]:
    return [sub["$ref"] for _, sub in _subschemas(schema) if "$ref" in sub]


def assert_strict(result: dict[str, Any]) -> None:
    """Check the invariants every `strict` result must satisfy."""
    json.dumps(result)  # plain JSON, nothing exotic left behind
    assert _is_object(result)
    for path, sub in _subschemas(result):
        assert not (_REJECTED & sub.keys()), (path, sorted(_REJECTED & sub.keys()))
        if "$defs" in sub:
            assert path == "#", path
        if "$ref" in sub:
            assert set(sub) == {"$ref"}, path  # OpenAI rejects siblings next to $ref
            ref = sub["$ref"]
            assert ref == "#" or ref.removeprefix("#/$defs/") in result.get("$defs", {}), (path, ref)
        if _is_object(sub):
            assert sub["additionalProperties"] is False, path
            assert sub["required"] == list(sub["properties"]), path
            assert "type" in sub, path


def check(schema: dict[str, Any]) -> dict[str, Any]:
    """Run `strict` and check invariants, purity and idempotence; return the result."""
    before = copy.deepcopy(schema)
    result = strict(schema)
    assert schema == before, "strict mutated its input"
    assert_strict(result)
    assert strict(result) == result, "strict is not idempotent"
    assert strict(copy.deepcopy(schema)) == result, "strict is not deterministic"
    return result


# --------------------------------------------------------------------------- models


class Flat(BaseModel):
    name: str
    age: int | None = None
    nickname: str = "n"
    score: float = Field(default=0.0, ge=0, le=1, description="Score.")
    tags: list[str] = Field(default_factory=list, max_length=3)


class Address(BaseModel):
    """A postal address."""

    street: str
    city: str = "Springfield"


class Person(BaseModel):
    name: str
    address: Address


class Route(BaseModel):
    start: Address
    end: Address = Field(description="Where it ends.")


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Paint(BaseModel):
    color: Color
    finish: Literal["matte", "gloss"] = "matte"
    brand: Literal["acme"] = "acme"
    backup: Color = Color.GREEN


class Node(BaseModel):
    value: int
    children: list[Node] = Field(default_factory=list)


class Folder(BaseModel):
    name: str
    files: list[File]


class File(BaseModel):
    name: str
    parent: Folder | None = None


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool = True


class Owner(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]


class Book(BaseModel):
    title: str
    default: int = 0
    subtitle: str | None = None


class Inventory(BaseModel):
    counts: dict[str, int]


class Nested(BaseModel):
    inventory: Inventory


class Loose(BaseModel):
    meta: dict[str, Any]


class Maybe(BaseModel):
    home: Optional[Address] = None  # noqa: UP045 (the spelling is the point)
    work: Address | None


class Forest(BaseModel):
    trees: list[Node]
    best: Node | None = None


class Stamp(BaseModel):
    at: str = Field(json_schema_extra={"format": "date-time"})
    site: str = Field(pattern=r"^https://", json_schema_extra={"format": "uri"})


ALL_MODELS = [Flat, Person, Route, Paint, Node, Folder, Owner, Book, Maybe, Forest, Stamp]

ADDRESS = {
    "type": "object",
    "description": "A postal address.",
    "properties": {"street": {"type": "string"}, "city": {"type": ["string", "null"]}},
    "required": ["street", "city"],
    "additionalProperties": False,
}

NODE = {
    "type": "object",
    "properties": {
        "value": {"type": "integer"},
        "children": {"type": ["array", "null"], "items": {"$ref": "#/$defs/Node"}},
    },
    "required": ["value", "children"],
    "additionalProperties": False,
}


# --------------------------------------------------------------------------- pydantic schemas


@pytest.mark.parametrize("model", ALL_MODELS, ids=lambda model: model.__name__)
def test_invariants_hold_for_pydantic_models(model: type[BaseModel]) -> None:
    check(model.model_json_schema())


def test_flat_model_with_optional_fields_and_defaults() -> None:
    assert check(Flat.model_json_schema()) == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"anyOf": [{"type": "integer"}, NULL]},
            "nickname": {"type": ["string", "null"]},
            "score": {"type": ["number", "null"], "description": "Score."},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}},
        },
        "required": ["name", "age", "nickname", "score", "tags"],
        "additionalProperties": False,
    }


def test_nested_models_are_inlined() -> None:
    result = check(Person.model_json_schema())
    assert result == {
        "type": "object",
        "properties": {"name": {"type": "string"}, "address": ADDRESS},
        "required": ["name", "address"],
        "additionalProperties": False,
    }
    assert _refs(result) == []


def test_repeated_submodel_is_inlined_at_each_use_with_sibling_description() -> None:
    result = check(Route.model_json_schema())
    assert "$defs" not in result
    assert _refs(result) == []
    assert result["properties"]["start"] == ADDRESS
    # The field's own description wins over the model docstring; the field was required.
    assert result["properties"]["end"] == {**ADDRESS, "description": "Where it ends."}
    assert result["properties"]["start"] is not result["properties"]["end"]


def test_enum_and_literal_fields() -> None:
    assert check(Paint.model_json_schema()) == {
        "type": "object",
        "properties": {
            "color": {"type": "string", "enum": ["red", "green"]},
            "finish": {"type": ["string", "null"], "enum": ["matte", "gloss", None]},
            "brand": {"anyOf": [{"type": "string", "const": "acme"}, NULL]},
            "backup": {"type": ["string", "null"], "enum": ["red", "green", None]},
        },
        "required": ["color", "finish", "brand", "backup"],
        "additionalProperties": False,
    }


def test_recursive_model_keeps_defs() -> None:
    raw = Node.model_json_schema()
    assert raw["$ref"] == "#/$defs/Node"  # pydantic's root is a bare $ref here
    result = check(raw)
    assert result == {**NODE, "$defs": {"Node": NODE}}
    assert result["$defs"]["Node"]["additionalProperties"] is False


def test_recursive_model_used_as_field() -> None:
    result = check(Forest.model_json_schema())
    assert result == {
        "type": "object",
        "properties": {
            "trees": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
            "best": {"anyOf": [{"$ref": "#/$defs/Node"}, NULL]},
        },
        "required": ["trees", "best"],
        "additionalProperties": False,
        "$defs": {"Node": NODE},
    }


def test_mutually_recursive_models() -> None:
    result = check(Folder.model_json_schema())
    folder = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "files": {"type": "array", "items": {"$ref": "#/$defs/File"}},
        },
        "required": ["name", "files"],
        "additionalProperties": False,
    }
    file = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "parent": {"anyOf": [{"$ref": "#/$defs/Folder"}, NULL]},
        },
        "required": ["name", "parent"],
        "additionalProperties": False,
    }
    assert result == {**folder, "$defs": {"File": file, "Folder": folder}}
    for definition in result["$defs"].values():
        assert definition["additionalProperties"] is False


def test_discriminated_union_becomes_any_of() -> None:
    result = check(Owner.model_json_schema())
    assert result == {
        "type": "object",
        "properties": {
            "pet": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {
                            "kind": {"type": "string", "const": "cat"},
                            "lives": {"type": ["integer", "null"]},
                        },
                        "required": ["kind", "lives"],
                        "additionalProperties": False,
                    },
                    {
                        "type": "object",
                        "properties": {
                            "kind": {"type": "string", "const": "dog"},
                            "good": {"type": ["boolean", "null"]},
                        },
                        "required": ["kind", "good"],
                        "additionalProperties": False,
                    },
                ]
            }
        },
        "required": ["pet"],
        "additionalProperties": False,
    }


def test_properties_named_like_dropped_keywords_are_kept() -> None:
    assert check(Book.model_json_schema()) == {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "default": {"type": ["integer", "null"]},
            "subtitle": {"anyOf": [{"type": "string"}, NULL]},
        },
        "required": ["title", "default", "subtitle"],
        "additionalProperties": False,
    }


def test_optional_submodel_fields() -> None:
    result = check(Maybe.model_json_schema())
    assert result == {
        "type": "object",
        "properties": {
            "home": {"anyOf": [ADDRESS, NULL]},
            "work": {"anyOf": [ADDRESS, NULL]},
        },
        "required": ["home", "work"],
        "additionalProperties": False,
    }


def test_supported_formats_are_kept_and_others_dropped() -> None:
    result = check(Stamp.model_json_schema())
    assert result["properties"] == {
        "at": {"type": "string", "format": "date-time"},
        "site": {"type": "string"},
    }


def test_dict_field_raises_with_path() -> None:
    with pytest.raises(ValueError, match=r"free-form mapping at #/properties/counts \(additionalProperties"):
        strict(Inventory.model_json_schema())


def test_dict_field_in_inlined_submodel_names_the_use_site() -> None:
    with pytest.raises(ValueError, match=re.escape("at #/properties/inventory/properties/counts")):
        strict(Nested.model_json_schema())


def test_free_form_object_raises_with_path() -> None:
    with pytest.raises(ValueError, match=r"free-form object at #/properties/meta "):
        strict(Loose.model_json_schema())
    with pytest.raises(ValueError, match=r"free-form object at #/items "):
        strict({"type": "object", "properties": {}, "items": {"type": "object"}})
    with pytest.raises(ValueError, match=r"free-form object at # "):
        strict({"type": "object"})


# --------------------------------------------------------------------------- hand-written schemas


def test_objects_get_required_and_additional_properties() -> None:
    schema = {
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "required": ["b"],
        "additionalProperties": True,
    }
    assert check(schema) == {
        "type": "object",
        "properties": {"a": {"type": ["integer", "null"]}, "b": {"type": "string"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }


def test_empty_closed_object_is_allowed() -> None:
    assert check({"type": "object", "additionalProperties": False}) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("optional", "expected"),
    [
        ({"type": "string"}, {"type": ["string", "null"]}),
        ({"type": ["string", "integer"]}, {"type": ["string", "integer", "null"]}),
        ({"type": ["string", "null"]}, {"type": ["string", "null"]}),
        ({"type": "null"}, {"type": "null"}),
        ({"type": "string", "enum": ["a"]}, {"type": ["string", "null"], "enum": ["a", None]}),
        ({"enum": ["a", 1]}, {"enum": ["a", 1, None]}),
        ({"enum": ["a", None]}, {"enum": ["a", None]}),
        ({"type": "string", "enum": ["a", None]}, {"type": ["string", "null"], "enum": ["a", None]}),
        (
            {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            {"anyOf": [{"type": "string"}, {"type": "integer"}, NULL]},
        ),
        ({"anyOf": [{"type": "string"}, NULL]}, {"anyOf": [{"type": "string"}, NULL]}),
        ({"anyOf": [{"type": ["string", "null"]}]}, {"anyOf": [{"type": ["string", "null"]}]}),
        (
            {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            {"anyOf": [{"type": "string"}, {"type": "integer"}, NULL]},
        ),
        ({"const": 3, "description": "Three."}, {"anyOf": [{"const": 3}, NULL], "description": "Three."}),
        ({"const": None}, {"const": None}),
        ({"$ref": "#"}, {"anyOf": [{"$ref": "#"}, NULL]}),
        ({}, {}),
    ],
)
def test_optional_property_becomes_nullable(optional: dict[str, Any], expected: dict[str, Any]) -> None:
    schema = {"type": "object", "properties": {"p": optional, "q": {"type": "string"}}, "required": ["q"]}
    result = check(schema)
    assert result["properties"]["p"] == expected
    assert result["properties"]["q"] == {"type": "string"}


def test_required_property_is_not_made_nullable() -> None:
    schema = {"type": "object", "properties": {"p": {"type": "string", "enum": ["x"]}}, "required": ["p"]}
    assert check(schema)["properties"]["p"] == {"type": "string", "enum": ["x"]}


def test_optional_inline_object_becomes_nullable_object() -> None:
    schema = {
        "type": "object",
        "properties": {"o": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }
    assert check(schema)["properties"]["o"] == {
        "type": ["object", "null"],
        "properties": {"x": {"type": ["integer", "null"]}},
        "required": ["x"],
        "additionalProperties": False,
    }


def test_dropped_keywords() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Root",
        "type": "object",
        "description": "Kept.",
        "examples": [{}],
        "minProperties": 1,
        "maxProperties": 9,
        "properties": {
            "s": {
                "type": "string",
                "minLength": 1,
                "maxLength": 2,
                "pattern": "x",
                "format": "email",
                "contentEncoding": "base64",
                "contentMediaType": "text/plain",
                "readOnly": True,
                "writeOnly": False,
                "deprecated": True,
            },
            "n": {"type": "number", "minimum": 0, "maximum": 1, "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "i": {"type": "integer", "multipleOf": 2, "default": 4},
            "a": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": 3,
                "uniqueItems": True,
            },
        },
        "required": ["s", "n", "i", "a"],
    }
    assert check(schema) == {
        "type": "object",
        "description": "Kept.",
        "properties": {
            "s": {"type": "string", "format": "email"},
            "n": {"type": "number"},
            "i": {"type": "integer"},
            "a": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["s", "n", "i", "a"],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    "fmt", ["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"]
)
def test_supported_format_kept(fmt: str) -> None:
    schema = {"type": "object", "properties": {"f": {"type": "string", "format": fmt}}, "required": ["f"]}
    assert check(schema)["properties"]["f"] == {"type": "string", "format": fmt}


@pytest.mark.parametrize("fmt", ["uri", "binary", "password", "int32", "regex"])
def test_unsupported_format_dropped(fmt: str) -> None:
    schema = {"type": "object", "properties": {"f": {"type": "string", "format": fmt}}, "required": ["f"]}
    assert check(schema)["properties"]["f"] == {"type": "string"}


def test_ref_siblings_merge_over_definition() -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/X", "description": "Field.", "default": {"v": 1}}},
        "required": ["x"],
        "$defs": {
            "X": {
                "type": "object",
                "title": "X",
                "description": "Model.",
                "properties": {"v": {"type": "integer"}},
                "required": ["v"],
            }
        },
    }
    assert check(schema) == {
        "type": "object",
        "properties": {
            "x": {
                "type": "object",
                "description": "Field.",
                "properties": {"v": {"type": "integer"}},
                "required": ["v"],
                "additionalProperties": False,
            }
        },
        "required": ["x"],
        "additionalProperties": False,
    }


def test_kept_recursive_ref_drops_siblings() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/N", "description": "Dropped."}},
        "required": ["n"],
        "$defs": {
            "N": {
                "type": "object",
                "properties": {"next": {"$ref": "#/$defs/N", "description": "Also dropped."}},
                "required": ["next"],
            }
        },
    }
    n = {
        "type": "object",
        "properties": {"next": {"$ref": "#/$defs/N"}},
        "required": ["next"],
        "additionalProperties": False,
    }
    assert check(schema) == {
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/N"}},
        "required": ["n"],
        "additionalProperties": False,
        "$defs": {"N": n},
    }


def test_root_recursion_ref_is_left_alone() -> None:
    schema = {
        "type": "object",
        "properties": {
            "value": {"type": "integer"},
            "kids": {"type": "array", "items": {"$ref": "#", "description": "A subtree."}},
        },
        "required": ["value", "kids"],
    }
    result = check(schema)
    assert result["properties"]["kids"] == {"type": "array", "items": {"$ref": "#"}}
    assert "$defs" not in result


def test_legacy_definitions_are_resolved() -> None:
    schema = {
        "type": "object",
        "properties": {
            "leaf": {"$ref": "#/definitions/Leaf"},
            "tree": {"$ref": "#/definitions/Tree"},
        },
        "required": ["leaf", "tree"],
        "definitions": {
            "Leaf": {"type": "string"},
            "Tree": {
                "type": "object",
                "properties": {"sub": {"type": "array", "items": {"$ref": "#/definitions/Tree"}}},
                "required": ["sub"],
            },
        },
    }
    tree = {
        "type": "object",
        "properties": {"sub": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
        "required": ["sub"],
        "additionalProperties": False,
    }
    assert check(schema) == {
        "type": "object",
        "properties": {"leaf": {"type": "string"}, "tree": {"$ref": "#/$defs/Tree"}},
        "required": ["leaf", "tree"],
        "additionalProperties": False,
        "$defs": {"Tree": tree},
    }


def test_definitions_name_clash_with_defs_is_renamed() -> None:
    recursive = {
        "type": "object",
        "properties": {"self": {"anyOf": [{"$ref": "#/definitions/T"}, NULL]}},
        "required": ["self"],
    }
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/T"}, "b": {"$ref": "#/definitions/T"}},
        "required": ["a", "b"],
        "$defs": {"T": {"type": "integer"}},
        "definitions": {"T": recursive},
    }
    result = check(schema)
    assert result["properties"] == {"a": {"type": "integer"}, "b": {"$ref": "#/$defs/T_1"}}
    assert result["$defs"]["T_1"]["properties"]["self"] == {"anyOf": [{"$ref": "#/$defs/T_1"}, NULL]}


def test_unreferenced_and_inlined_definitions_are_dropped() -> None:
    node = {"type": "object", "properties": {"n": {"$ref": "#/$defs/Node"}}, "required": []}
    schema = {
        "type": "object",
        "properties": {"w": {"$ref": "#/$defs/Wrapper"}},
        "required": ["w"],
        "$defs": {
            "Unused": {"type": "object", "properties": {"u": {"$ref": "#/$defs/Unused"}}},
            "Wrapper": {
                "type": "object",
                "properties": {"node": {"$ref": "#/$defs/Node"}},
                "required": ["node"],
            },
            "Node": node,
        },
    }
    result = check(schema)
    assert list(result["$defs"]) == ["Node"]
    assert result["properties"]["w"]["properties"]["node"] == {"$ref": "#/$defs/Node"}
    assert result["$defs"]["Node"]["properties"]["n"] == {"anyOf": [{"$ref": "#/$defs/Node"}, NULL]}


def test_alias_chain_of_definitions_is_inlined() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A", "description": "Outer."}},
        "required": ["a"],
        "$defs": {"A": {"$ref": "#/$defs/B", "description": "Inner."}, "B": {"type": "string", "title": "B"}},
    }
    assert check(schema)["properties"]["a"] == {"type": "string", "description": "Outer."}


def test_single_all_of_is_merged_with_siblings() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"allOf": [{"$ref": "#/$defs/A"}], "description": "Field."},
            "b": {"allOf": [{"type": "integer", "description": "Inner."}], "description": "Outer."},
        },
        "required": ["a", "b"],
        "$defs": {"A": {"type": "string", "enum": ["x", "y"], "title": "A"}},
    }
    assert check(schema)["properties"] == {
        "a": {"type": "string", "enum": ["x", "y"], "description": "Field."},
        "b": {"type": "integer", "description": "Outer."},
    }


def test_multiple_all_of_raises() -> None:
    schema = {"type": "object", "properties": {"a": {"allOf": [{"type": "string"}, {"maxLength": 3}]}}}
    with pytest.raises(ValueError, match=r"allOf with several branches at #/properties/a"):
        strict(schema)


def test_unresolvable_ref_raises() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}}
    with pytest.raises(ValueError, match=r"cannot resolve \$ref '#/\$defs/Missing' at #/properties/a"):
        strict(schema)


def test_any_of_and_one_of_together_raise() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"anyOf": [{"type": "string"}], "oneOf": [{"type": "integer"}]}},
    }
    with pytest.raises(ValueError, match=r"both anyOf and oneOf at #/properties/a"):
        strict(schema)


def test_additional_properties_schema_raises_even_with_properties() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {}}
    with pytest.raises(ValueError, match=r"free-form mapping at # \(additionalProperties is a schema\)"):
        strict(schema)


def test_path_escapes_property_names() -> None:
    schema = {"type": "object", "properties": {"a/b~c": {"type": "object"}}}
    with pytest.raises(ValueError, match=re.escape("at #/properties/a~1b~0c ")):
        strict(schema)


def test_prefix_items_and_nested_arrays_are_normalized() -> None:
    point = {"type": "object", "title": "P", "properties": {"x": {"type": "number", "minimum": 0}}}
    schema = {
        "type": "object",
        "properties": {
            "pair": {
                "type": "array",
                "prefixItems": [point, {"type": "string", "title": "S"}],
                "items": False,
            },
            "grid": {"type": "array", "items": {"type": "array", "items": point}},
        },
        "required": ["pair", "grid"],
    }
    strict_point = {
        "type": "object",
        "properties": {"x": {"type": ["number", "null"]}},
        "required": ["x"],
        "additionalProperties": False,
    }
    assert check(schema)["properties"] == {
        "pair": {"type": "array", "prefixItems": [strict_point, {"type": "string"}], "items": False},
        "grid": {"type": "array", "items": {"type": "array", "items": strict_point}},
    }


def test_result_shares_no_containers_with_input() -> None:
    schema = {
        "type": "object",
        "properties": {"e": {"type": "string", "enum": ["a"]}, "c": {"const": {"k": [1]}}},
        "required": ["e", "c"],
    }
    before = copy.deepcopy(schema)
    result = strict(schema)
    result["properties"]["e"]["enum"].append("b")
    result["properties"]["c"]["const"]["k"].append(2)
    result["required"].append("zzz")
    assert schema == before


def test_docstring_example_runs() -> None:
    doc = strict.__doc__ or ""
    blocks = re.findall(r"```python\n(.*?)```", doc, flags=re.DOTALL)
    assert len(blocks) == 1
    lines = blocks[0].splitlines()
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    exec("\n".join(line[indent:] for line in lines), {})


def test_public_surface_and_cheap_import() -> None:
    assert schema_module.__all__ == ["strict"]
    # Import the module file on its own, so the package `__init__`s do not interfere.
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('schema_under_test', {schema_module.__file__!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "assert 'pydantic' not in sys.modules, 'pydantic imported'\n"
        "assert 'typing' not in sys.modules, 'typing imported'\n"
    )
    subprocess.run([sys.executable, "-S", "-c", code], check=True, cwd=Path(schema_module.__file__).parent)


# --------------------------------------------------------------------------- property test

_NAMES = st.one_of(
    st.sampled_from(["title", "default", "type", "properties", "required", "$ref", "enum", "items"]),
    st.text(alphabet="ab_/~", min_size=1, max_size=4),
)

_DECORATION = st.fixed_dictionaries(
    {},
    optional={
        "title": st.text(max_size=3),
        "description": st.text(max_size=3),
        "default": st.none(),
        "examples": st.just([]),
    },
)


def _decorated(base: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda schema, extra: {**extra, **schema}, base, _DECORATION)


_LEAVES = _decorated(
    st.one_of(
        st.just({"type": "string"}),
        st.builds(lambda fmt: {"type": "string", "format": fmt}, st.sampled_from(["date", "uri", "uuid"])),
        st.just({"type": "string", "maxLength": 5, "pattern": "a"}),
        st.just({"type": "integer", "minimum": 0}),
        st.just({"type": "number"}),
        st.just({"type": "boolean"}),
        st.just({"type": ["string", "null"]}),
        st.builds(
            lambda values: {"type": "string", "enum": values},
            st.lists(st.text(max_size=2), min_size=1, max_size=3),
        ),
        st.builds(lambda value: {"const": value}, st.integers(0, 3)),
    )
)


def _object(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    def build(fields: dict[str, tuple[dict[str, Any], bool]], closed: bool) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {name: sub for name, (sub, _) in fields.items()},
            "required": [name for name, (_, required) in fields.items() if required],
        }
        if closed:
            schema["additionalProperties"] = False
        return schema

    fields = st.dictionaries(_NAMES, st.tuples(children, st.booleans()), max_size=4)
    return _decorated(st.builds(build, fields, st.booleans()))


def _extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        _object(children),
        _decorated(st.builds(lambda items: {"type": "array", "items": items, "minItems": 1}, children)),
        st.builds(
            lambda branches, key: {key: branches},
            st.lists(children, min_size=1, max_size=3),
            st.sampled_from(["anyOf", "oneOf"]),
        ),
    )


_SCHEMAS = st.recursive(_LEAVES, _extend, max_leaves=12)


@st.composite
def _root_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """An object schema, with some subschemas moved into (non-recursive) `$defs`."""
    defs = draw(st.lists(_SCHEMAS, max_size=3))
    names = [f"D{index}" for index in range(len(defs))]
    children = _SCHEMAS
    if names:
        refs = st.builds(
            lambda name, extra: {"$ref": f"#/$defs/{name}", **extra},
            st.sampled_from(names),
            st.fixed_dictionaries({}, optional={"description": st.just("Use site."), "default": st.none()}),
        )
        children = st.recursive(st.one_of(_LEAVES, refs), _extend, max_leaves=12)
    root = draw(_object(children))
    if defs:
        root["$defs"] = dict(zip(names, defs, strict=True))
    return root


@settings(max_examples=200, deadline=None)
@given(_root_schemas())
def test_property_random_schemas(schema: dict[str, Any]) -> None:
    result = check(schema)
    assert _refs(result) == []
    assert "$defs" not in result
    # Every property that was optional at the root now accepts null.
    for name in schema["properties"]:
        if name not in schema["required"]:
            assert _accepts_null(result["properties"][name]), (name, result["properties"][name])


def _accepts_null(schema: dict[str, Any]) -> bool:
    if schema == {}:
        return True
    type_ = schema.get("type")
    if type_ is not None and type_ != "null" and not (isinstance(type_, list) and "null" in type_):
        return False
    if "enum" in schema and None not in schema["enum"]:
        return False
    if "const" in schema and schema["const"] is not None:
        return False
    if "anyOf" in schema:
        return any(_accepts_null(branch) for branch in schema["anyOf"])
    return True
