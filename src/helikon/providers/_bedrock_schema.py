"""Rewrite a tool's JSON Schema into the subset Bedrock's Converse validator accepts.

Pure functions over plain dicts: no AWS SDK import.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, cast

from helikon.core._internal.json_value import JsonObject

Schema = dict[str, Any]

_MAX_DEPTH = 24
"""Deeper than this, a sub-schema becomes a permissive object (recursive models stay finite)."""

_PERMISSIVE: Schema = {"type": "object"}

# Keywords Bedrock rejects or that mean nothing once the schema is inlined and flattened.
_STRIPPED = frozenset(
    {
        "$schema",
        "$id",
        "$anchor",
        "$comment",
        "$defs",
        "definitions",
        "$dynamicRef",
        "$dynamicAnchor",
        "format",
        "examples",
        "example",
        "discriminator",
        "readOnly",
        "writeOnly",
        "deprecated",
        "contentEncoding",
        "contentMediaType",
        "if",
        "then",
        "else",
        "not",
        "dependentSchemas",
        "dependentRequired",
        "unevaluatedProperties",
        "unevaluatedItems",
        "patternProperties",
        "propertyNames",
        "contains",
        "minContains",
        "maxContains",
    }
)
_COMBINATORS = ("allOf", "oneOf", "anyOf")


class Ruleset(enum.Enum):
    """Which rewrite rules `rewrite_tool_schema` applies."""

    STRICT = "strict"
    """Bedrock Converse: no `$ref`/`$defs`, no `oneOf`/`anyOf`/`allOf`, no meta-keywords."""


def rewrite_tool_schema(schema: JsonObject, ruleset: Ruleset = Ruleset.STRICT) -> JsonObject:
    """`schema` rewritten so that Bedrock's Converse validator accepts it.

    * `$ref`s are inlined recursively; a cycle or excessive depth becomes `{"type": "object"}`.
    * `oneOf`/`anyOf`/`allOf` collapse into one object whose properties are the union of the
      variants' properties; a tag key that every variant pins to one value (`const`) becomes
      an `enum` of those values. `Optional[X]` (`anyOf: [X, {"type": "null"}]`) becomes `X`.
    * `$schema`, `format`, `examples`, `discriminator` and other unsupported keywords are
      removed; `const` becomes a one-value `enum`.

    Example:
        ```python
        from helikon.providers.bedrock import Ruleset, rewrite_tool_schema

        schema = {
            "$defs": {"City": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "type": "object",
            "properties": {"city": {"$ref": "#/$defs/City"}},
        }
        out = rewrite_tool_schema(schema, Ruleset.STRICT)
        assert out["properties"]["city"]["properties"]["name"] == {"type": "string"}
        assert "$defs" not in out
        ```
    """
    del ruleset  # one ruleset today; the parameter keeps room for looser ones
    root = cast(Schema, dict(schema))
    defs: dict[str, Any] = {}
    for key in ("definitions", "$defs"):
        found = root.get(key)
        if isinstance(found, dict):
            defs.update(cast(dict[str, Any], found))
    return _Rewriter(root, defs).node(root, (), 0)


class _Rewriter:
    def __init__(self, root: Schema, defs: dict[str, Any]) -> None:
        self._root = root
        self._defs = defs

    def _resolve(self, ref: str) -> Schema | None:
        if ref == "#":
            return self._root
        for prefix in ("#/$defs/", "#/definitions/"):
            if ref.startswith(prefix):
                target = self._defs.get(ref[len(prefix) :].replace("~1", "/").replace("~0", "~"))
                return cast(Schema, target) if isinstance(target, dict) else None
        return None

    def node(self, raw: Any, refs: tuple[str, ...], depth: int) -> Schema:
        if not isinstance(raw, dict):
            # `true` accepts anything; `false` has no Bedrock equivalent: both become permissive.
            return {}
        schema = cast(Schema, raw)
        if depth > _MAX_DEPTH:
            return dict(_PERMISSIVE)
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self._resolve(ref)
            if target is None or ref in refs:
                inlined = dict(_PERMISSIVE)
            else:
                inlined = self.node(target, (*refs, ref), depth + 1)
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            if not siblings:
                return inlined
            return _merge(inlined, self.node(siblings, refs, depth))
        out: Schema = {}
        combined: list[tuple[str, list[Schema]]] = []
        for key, value in schema.items():
            if key in _STRIPPED:
                continue
            if key in _COMBINATORS and isinstance(value, list):
                variants = [self.node(v, refs, depth + 1) for v in cast(list[Any], value)]
                combined.append((key, variants))
            elif key == "const":
                out["enum"] = [value]
            elif key == "properties" and isinstance(value, dict):
                props = cast(dict[str, Any], value)
                out[key] = {name: self.node(sub, refs, depth + 1) for name, sub in props.items()}
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                out[key] = self.node(value, refs, depth + 1)
            elif key == "prefixItems" and isinstance(value, list):
                out[key] = [self.node(v, refs, depth + 1) for v in cast(list[Any], value)]
            else:
                out[key] = value
        for key, variants in combined:
            out = _merge(_collapse(key, variants), out)
        return out


def _is_null(schema: Schema) -> bool:
    return schema.get("type") == "null" or schema.get("enum") == [None]


def _is_object(schema: Schema) -> bool:
    return schema.get("type") == "object" or "properties" in schema


def _pinned(schema: Schema) -> list[Any] | None:
    enum_values = schema.get("enum")
    if isinstance(enum_values, list):
        return cast(list[Any], enum_values)
    return None


def _collapse(kind: str, variants: list[Schema]) -> Schema:
    """One schema standing for `kind` (`allOf`/`oneOf`/`anyOf`) over already-rewritten variants."""
    present = [v for v in variants if not _is_null(v)]
    if not present:
        return {"type": "null"}
    if len(present) == 1:
        return present[0]
    if kind == "allOf":
        merged: Schema = {}
        for variant in present:
            merged = _merge(merged, variant)
        return merged
    objects = [v for v in present if _is_object(v)]
    if len(objects) == len(present):
        return _union_objects(objects)
    types: list[Any] = []
    for variant in present:
        kind_of = variant.get("type")
        if isinstance(kind_of, str) and kind_of not in types:
            types.append(kind_of)
    if (
        types
        and len(types) == len(present)
        and all(set(v) <= {"type", "title", "description"} for v in present)
    ):
        return {"type": types[0] if len(types) == 1 else types}
    if objects:
        return _union_objects(objects)
    return present[0]


def _union_objects(variants: list[Schema]) -> Schema:
    """Properties unioned; required where every variant requires; a shared tag key as an enum."""
    properties: dict[str, Schema] = {}
    tags: dict[str, list[Any]] = {}
    required: set[str] | None = None
    for variant in variants:
        props = cast(dict[str, Schema], variant.get("properties") or {})
        for name, sub in props.items():
            properties.setdefault(name, sub)
        names = set(cast(list[str], variant.get("required") or []))
        required = names if required is None else required & names
    for name in properties:
        values: list[Any] = []
        for variant in variants:
            sub = cast(dict[str, Schema], variant.get("properties") or {}).get(name)
            pinned = _pinned(sub) if sub is not None else None
            if pinned is None:
                break
            values.extend(v for v in pinned if v not in values)
        else:
            tags[name] = values
    for name, values in tags.items():
        tag = dict(properties[name])
        tag["enum"] = values
        properties[name] = tag
    out: Schema = {"type": "object", "properties": properties}
    ordered = [name for name in properties if required and name in required]
    if ordered:
        out["required"] = ordered
    return out


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> Schema:
    """`base` with `over` laid on top; `properties` merged key by key, `required` unioned."""
    out: Schema = dict(base)
    for key, value in over.items():
        if key == "properties" and isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**cast(dict[str, Any], out[key]), **cast(dict[str, Any], value)}
        elif key == "required" and isinstance(value, list) and isinstance(out.get(key), list):
            merged = list(cast(list[Any], out[key]))
            merged.extend(v for v in cast(list[Any], value) if v not in merged)
            out[key] = merged
        else:
            out[key] = value
    return out
