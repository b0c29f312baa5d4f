"""The JSON-Schema sanitizer: turn any JSON Schema into the OpenAPI subset Gemini takes.

Gemini's `Schema` (function `parameters`, `responseSchema`) rejects most of JSON Schema.
`sanitize` rewrites a schema so it passes: `$ref` inlined, `[T, "null"]` as
`nullable: true`, `const` as a one-item `enum`, `oneOf` as `anyOf`, unsupported keywords
dropped, `format` kept only where Gemini knows it. Pure, no SDK import.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

STRIPPED = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "additionalProperties",
        "unevaluatedProperties",
        "patternProperties",
        "examples",
        "default",
        "$defs",
        "definitions",
    }
)
"""Keywords removed wherever they appear (the spec's list, plus `$id`/`$comment`)."""

# What Gemini's `Schema` accepts; anything else (e.g. `not`, `if`, `dependentRequired`,
# `prefixItems`, `exclusiveMinimum`) is dropped too, since the SDK's Schema forbids extras.
_KEPT = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "items",
        "properties",
        "required",
        "anyOf",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "minProperties",
        "maxProperties",
        "minimum",
        "maximum",
        "pattern",
        "propertyOrdering",
    }
)

_FORMATS: dict[str, frozenset[str]] = {
    "string": frozenset({"enum", "date-time"}),
    "integer": frozenset({"int32", "int64"}),
    "number": frozenset({"float", "double"}),
}

_RECURSION_STUB: dict[str, Any] = {"type": "object"}


def sanitize(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `schema` that Gemini accepts (see the module docstring)."""
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        found = schema.get(key)
        if isinstance(found, Mapping):
            for name, value in cast(Mapping[str, Any], found).items():
                defs[f"#/{key}/{name}"] = value
    return _walk(schema, defs, ())


def _walk(node: Mapping[str, Any], defs: dict[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref)
        if target is None or ref in seen:
            # A recursive (or unresolvable) reference cannot be inlined forever: the
            # recursion point becomes an open object.
            resolved = dict(_RECURSION_STUB)
        else:
            resolved = _walk(cast(Mapping[str, Any], target), defs, (*seen, ref))
        # Siblings of `$ref` (a description, `nullable`) apply on top of the target.
        rest = {k: v for k, v in node.items() if k != "$ref"}
        if rest:
            resolved.update(_walk(rest, defs, seen))
        return resolved

    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in STRIPPED:
            continue
        if key == "const":
            out["enum"] = [value]
        elif key in ("oneOf", "anyOf"):
            options = [_walk(cast(Mapping[str, Any], o), defs, seen) for o in _schemas(value)]
            out["anyOf"] = [*out.get("anyOf", []), *options]
        elif key == "allOf":
            # Gemini has no allOf; pydantic emits it only to wrap one `$ref`, so merge the parts.
            for part in _schemas(value):
                out.update(_walk(cast(Mapping[str, Any], part), defs, seen))
        elif key == "properties" and isinstance(value, Mapping):
            out["properties"] = {
                name: _walk(cast(Mapping[str, Any], sub), defs, seen)
                for name, sub in cast(Mapping[str, Any], value).items()
                if isinstance(sub, Mapping)
            }
        elif key == "items" and isinstance(value, Mapping):
            out["items"] = _walk(cast(Mapping[str, Any], value), defs, seen)
        elif key in _KEPT:
            out[key] = value
    _fix_type(out)
    _fix_any_of(out)
    return out


def _schemas(value: Any) -> list[Any]:
    if not isinstance(value, list):
        return []
    return [v for v in cast(list[Any], value) if isinstance(v, Mapping)]


def _fix_type(out: dict[str, Any]) -> None:
    kind = out.get("type")
    if isinstance(kind, list):
        kinds = [str(k) for k in cast(list[Any], kind)]
        if "null" in kinds:
            out["nullable"] = True
            kinds = [k for k in kinds if k != "null"]
        if len(kinds) == 1:
            out["type"] = kinds[0]
        elif not kinds:
            del out["type"]
        else:
            # Several non-null types: Gemini takes one type per schema, so spell it as anyOf.
            del out["type"]
            out["anyOf"] = [*out.get("anyOf", []), *({"type": k} for k in kinds)]
        kind = out.get("type")
    if kind == "null":
        del out["type"]
        out["nullable"] = True
    fmt = out.get("format")
    if fmt is not None and fmt not in _FORMATS.get(str(out.get("type")), frozenset()):
        del out["format"]
    enum = out.get("enum")
    if isinstance(enum, list) and "type" not in out and "anyOf" not in out:
        # Gemini only takes string enums; a `const`/`enum` without a type is a string one.
        out["type"] = "string"
    if isinstance(enum, list):
        if out.get("type") == "string":
            out["enum"] = [str(v) for v in cast(list[Any], enum) if v is not None]
        elif "type" in out:
            # Gemini's enum is string-only: an integer/number/boolean enum cannot be said.
            del out["enum"]


def _fix_any_of(out: dict[str, Any]) -> None:
    options = out.get("anyOf")
    if not isinstance(options, list):
        return
    kept: list[dict[str, Any]] = []
    for option in cast(list[dict[str, Any]], options):
        if option == {"nullable": True}:  # the `null` branch of Optional[...]
            out["nullable"] = True
        else:
            kept.append(option)
    if len(kept) == 1 and not (set(kept[0]) & set(out) - {"nullable"}):
        del out["anyOf"]
        nullable = out.pop("nullable", None)
        out.update(kept[0])
        if nullable:
            out["nullable"] = True
    elif not kept:
        del out["anyOf"]
    else:
        out["anyOf"] = kept
