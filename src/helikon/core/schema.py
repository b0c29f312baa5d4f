"""Normalize JSON Schemas for OpenAI's strict structured-output and function-calling mode.

Strict mode accepts only a subset of JSON Schema: every object must list all of its
properties as required and forbid additional ones, optional values are spelled as
nullable, `$ref` may only point at recursive definitions, and most validation keywords
are rejected. `strict` rewrites an ordinary schema (typically pydantic's
`model_json_schema()`) into that subset, or raises `ValueError` naming the first
construct the subset cannot express.

The module is pure and stdlib-only, so importing it costs next to nothing.
"""

from __future__ import annotations

# `typing` is imported for the type checker only, so importing this module stays cheap.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    _Schema: TypeAlias = dict[str, Any]
    _Json: TypeAlias = dict[str, Any] | list[Any] | str | int | float | bool | None

__all__ = ["strict"]

_NULL_TYPE = "null"

_SUPPORTED_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)

# Keywords strict mode rejects or ignores; they are dropped wherever they appear as a
# schema keyword (never as a property *name*: `properties` is walked as a map).
_DROPPED = frozenset(
    {
        "default",
        "title",
        "examples",
        "$schema",
        "discriminator",
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
        # Definitions are only honoured at the root (see `strict`); nested ones can never
        # be referenced by a root-relative `$ref`, so they carry nothing.
        "$defs",
        "definitions",
    }
)

# Keywords whose values are data, not subschemas: skipped when collecting `$ref`s.
_DATA_KEYWORDS = frozenset(
    {"enum", "const", "default", "examples", "discriminator", "required", "$defs", "definitions"}
)

# Keywords whose values map names to subschemas.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas"})


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of `schema` that OpenAI's strict mode accepts.

    The rewrite, applied to every subschema:

    * objects get `additionalProperties: false` and `required` listing every property;
      a property that was optional becomes nullable (its absence is sent as `null`);
    * `$ref`s to non-recursive definitions are inlined (sibling keywords such as
      `description` win over the definition's); recursive definitions stay in the
      root `$defs` and are referenced as `#/$defs/Name`; `$ref: "#"` is kept;
    * `oneOf` becomes `anyOf`, `discriminator` is dropped, and a one-element `allOf`
      is merged with its siblings;
    * keywords strict mode rejects (`default`, `title`, `examples`, `pattern`,
      `minimum`, unsupported `format`s, ...) are dropped; unknown keywords pass through.

    The input is never mutated.

    Args:
        schema: A JSON Schema, e.g. from pydantic's `model_json_schema()`.

    Returns:
        A new, strict-mode-compatible schema. Applying `strict` again changes nothing.

    Raises:
        ValueError: If the schema holds something strict mode cannot express: a
            free-form mapping (`additionalProperties` is a schema, or an object has no
            `properties` and does not forbid additional ones), an `allOf` with several
            branches, or a `$ref` that does not resolve to a root definition.
            The message names the offending location as a JSON pointer.

    Example:
        ```python
        from helikon.core.schema import strict

        schema = {
            "title": "Pet",
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 20},
                "age": {"type": "integer", "default": 1},
            },
            "required": ["name"],
        }
        assert strict(schema) == {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "age": {"type": ["integer", "null"]},
            },
            "required": ["name", "age"],
            "additionalProperties": False,
        }
        ```
    """
    ctx = _Context(schema)
    root = {key: value for key, value in schema.items() if key not in ("$defs", "definitions")}
    # The root must be a real schema, so a root `$ref` (pydantic emits one for a
    # recursive model) is expanded even when its definition is recursive.
    out: _Schema = _normalize(ctx.flatten(root, "#", expand_recursive=True), "#", ctx)
    # Normalizing a kept definition may reference further ones: iterate to a fixpoint.
    defs: dict[str, Any] = {}
    while pending := [ref for ref in ctx.used if ref not in defs]:
        for ref in pending:
            name = ctx.names[ref]
            defs[ref] = _normalize(ctx.defs[ref], f"#/$defs/{_escape(name)}", ctx)
    if defs:
        out["$defs"] = {ctx.names[ref]: defs[ref] for ref in ctx.defs if ref in defs}
    return out


class _Context:
    """The root definitions of one `strict` call and what the rewrite has learnt of them."""

    def __init__(self, schema: _Schema) -> None:
        self.defs: dict[str, Any] = {}
        """Raw definition bodies, keyed by the `$ref` string that points at them."""
        self.names: dict[str, str] = {}
        """The name each definition gets in the output `$defs`."""
        self.used: dict[str, None] = {}
        """Recursive definitions referenced from the output (an ordered set)."""
        taken: set[str] = set()
        for keyword in ("$defs", "definitions"):
            table = _as_schema(schema.get(keyword))
            for name, body in (table or {}).items():
                ref = f"#/{keyword}/{_escape(name)}"
                out_name, suffix = name, 1
                while out_name in taken:  # `definitions/X` next to `$defs/X`
                    out_name, suffix = f"{name}_{suffix}", suffix + 1
                taken.add(out_name)
                self.defs[ref] = body
                self.names[ref] = out_name
        self.recursive = self._find_recursive()
        """Definitions that reach themselves through `$ref`s (directly or mutually)."""

    def _find_recursive(self) -> frozenset[str]:
        edges: dict[str, set[str]] = {}
        for ref, body in self.defs.items():
            found: set[str] = set()
            _collect_refs(body, found)
            edges[ref] = found & self.defs.keys()
        recursive: set[str] = set()
        for start in self.defs:
            seen: set[str] = set()
            stack = list(edges[start])
            while stack:
                ref = stack.pop()
                if ref == start:
                    recursive.add(start)
                    break
                if ref not in seen:
                    seen.add(ref)
                    stack.extend(edges[ref])
        return frozenset(recursive)

    def flatten(self, node: _Schema, path: str, *, expand_recursive: bool = False) -> _Schema:
        """Merge one-element `allOf`s and inline `$ref`s at the top of `node`.

        What is left is either a schema without `allOf`/`$ref`, or a kept reference
        (`#` or a recursive definition) possibly still carrying siblings. With
        `expand_recursive` (used for the root, which must be a real schema) even a
        recursive definition is expanded once.
        """
        expanded: set[str] = set()
        while True:
            if "allOf" in node:
                items = _as_array(node["allOf"])
                rest = {key: value for key, value in node.items() if key != "allOf"}
                if items is None or len(items) > 1:
                    raise ValueError(
                        f"strict mode cannot express allOf with several branches at {path}; "
                        "merge them into one schema"
                    )
                first = _as_schema(items[0]) if items else {}
                node = {**(first or {}), **rest}
                continue
            ref = node.get("$ref")
            if ref is None or ref == "#":
                return node
            if not isinstance(ref, str) or ref not in self.defs:
                raise ValueError(f"strict mode cannot resolve $ref {ref!r} at {path}")
            if ref in self.recursive and (not expand_recursive or ref in expanded):
                return node
            expanded.add(ref)
            body = _as_schema(self.defs[ref])
            if body is None:
                raise ValueError(f"definition {ref!r} used at {path} is not an object schema")
            siblings = {key: value for key, value in node.items() if key != "$ref"}
            # Siblings win: pydantic puts a field's own `description` next to the `$ref`.
            node = {**body, **siblings}


def _normalize(node: Any, path: str, ctx: _Context) -> Any:
    """Return the strict form of the (sub)schema `node` found at JSON pointer `path`."""
    raw = _as_schema(node)
    if raw is None:  # boolean schemas (`items: false`) and other non-objects pass through
        return _clone(node)
    raw = ctx.flatten(raw, path)
    ref = raw.get("$ref")
    if isinstance(ref, str):
        # A kept reference: `#` or a recursive definition. OpenAI rejects any keyword
        # next to `$ref`, so siblings (including a `description`) are dropped rather than
        # moved somewhere they would change meaning.
        if ref == "#":
            return {"$ref": "#"}
        ctx.used[ref] = None
        return {"$ref": f"#/$defs/{_escape(ctx.names[ref])}"}

    if "anyOf" in raw and "oneOf" in raw:
        raise ValueError(f"strict mode cannot express both anyOf and oneOf at {path}")
    is_object = _is_object(raw)
    out: _Schema = {}
    if is_object and "type" not in raw:
        out["type"] = "object"
    for key, value in raw.items():
        if key in _DROPPED or key in ("properties", "required", "additionalProperties"):
            continue
        if key == "format":
            if isinstance(value, str) and value in _SUPPORTED_FORMATS:
                out[key] = value
        elif key in ("anyOf", "oneOf"):
            out["anyOf"] = [
                _normalize(branch, f"{path}/anyOf/{index}", ctx)
                for index, branch in enumerate(_as_list(value, key, path))
            ]
        elif key == "prefixItems" or (key == "items" and _as_array(value) is not None):
            out[key] = [
                _normalize(item, f"{path}/{key}/{index}", ctx)
                for index, item in enumerate(_as_list(value, key, path))
            ]
        elif key == "items":
            out[key] = _normalize(value, f"{path}/items", ctx)
        else:
            out[key] = _clone(value)
    if is_object:
        _strict_object(raw, out, path, ctx)
    return out


def _strict_object(raw: _Schema, out: _Schema, path: str, ctx: _Context) -> None:
    """Fill `properties`, `required` and `additionalProperties` of an object schema."""
    extra = raw.get("additionalProperties")
    if isinstance(extra, dict):
        raise ValueError(
            f"strict mode cannot express a free-form mapping at {path} (additionalProperties is a "
            "schema); use a list of key/value objects instead"
        )
    properties = _as_schema(raw.get("properties"))
    if properties is None:
        if extra is not False:
            raise ValueError(
                f"strict mode cannot express a free-form object at {path} (it has no properties and "
                "does not set additionalProperties to false); declare its properties or use a list "
                "of key/value objects instead"
            )
        properties = {}
    required = _as_array(raw.get("required")) or []
    strict_properties: _Schema = {}
    for name, sub in properties.items():
        value = _normalize(sub, f"{path}/properties/{_escape(name)}", ctx)
        strict_properties[name] = value if name in required else _nullable(value)
    out["properties"] = strict_properties
    out["required"] = list(strict_properties)
    out["additionalProperties"] = False


def _nullable(node: Any) -> Any:
    """Return the strict schema `node` widened to also accept `null`."""
    schema = _as_schema(node)
    if schema is None:
        return node
    null: _Schema = {"type": _NULL_TYPE}
    if "$ref" in schema:
        return {"anyOf": [schema, null]}
    if "anyOf" in schema:
        branches = _as_array(schema["anyOf"]) or []
        if any(_accepts_null(branch) for branch in branches):
            return schema
        return {**schema, "anyOf": [*branches, null]}
    if "const" in schema:
        if schema["const"] is None:
            return schema
        inner = {key: value for key, value in schema.items() if key != "description"}
        wrapped: _Schema = {"anyOf": [inner, null]}
        if "description" in schema:
            wrapped["description"] = schema["description"]
        return wrapped
    out = dict(schema)
    if "enum" in schema:
        values = _as_array(schema["enum"]) or []
        if None not in values:
            out["enum"] = [*values, None]
    if "type" in schema:
        out["type"] = _with_null_type(schema["type"])
    return out


def _with_null_type(type_: Any) -> Any:
    types = _as_array(type_)
    if types is not None:
        return types if _NULL_TYPE in types else [*types, _NULL_TYPE]
    return type_ if type_ == _NULL_TYPE else [type_, _NULL_TYPE]


def _accepts_null(node: Any) -> bool:
    schema = _as_schema(node)
    if schema is None:
        return node is True
    if not schema:
        return True
    type_ = schema.get("type")
    if type_ == _NULL_TYPE or (isinstance(type_, list) and _NULL_TYPE in type_):
        return True
    if "const" in schema:
        return schema["const"] is None
    enum = schema.get("enum")
    return isinstance(enum, list) and None in enum and type_ is None


def _is_object(schema: _Schema) -> bool:
    type_ = schema.get("type")
    return (
        type_ == "object"
        or (isinstance(type_, list) and "object" in type_)
        or "properties" in schema
        or "additionalProperties" in schema
    )


def _collect_refs(node: Any, found: set[str]) -> None:
    """Add every `$ref` string reachable through subschema positions of `node` to `found`."""
    items = _as_array(node)
    if items is not None:
        for item in items:
            _collect_refs(item, found)
        return
    schema = _as_schema(node)
    if schema is None:
        return
    for key, value in schema.items():
        if key == "$ref":
            if isinstance(value, str):
                found.add(value)
        elif key in _SCHEMA_MAPS:
            for sub in (_as_schema(value) or {}).values():
                _collect_refs(sub, found)
        elif key not in _DATA_KEYWORDS:
            _collect_refs(value, found)


def _as_schema(value: _Json) -> _Schema | None:
    return value if isinstance(value, dict) else None


def _as_array(value: _Json) -> list[Any] | None:
    return value if isinstance(value, list) else None


def _as_list(value: _Json, key: str, path: str) -> list[Any]:
    items = _as_array(value)
    if items is None:
        raise ValueError(f"{key} must be a list at {path}")
    return items


def _clone(value: Any) -> Any:
    """Deep-copy a JSON value, so the result never shares containers with the input."""
    schema = _as_schema(value)
    if schema is not None:
        return {key: _clone(item) for key, item in schema.items()}
    items = _as_array(value)
    if items is not None:
        return [_clone(item) for item in items]
    return value


def _escape(name: str) -> str:
    """Escape `name` as one JSON-pointer segment (RFC 6901)."""
    return name.replace("~", "~0").replace("/", "~1")
