"""`schema_example`: a small JSON value valid for a JSON Schema, as pydantic writes them.

What `TestModel` sends as tool arguments and as structured output. The values are the
smallest that fit (`seed` 0: `"a"`, `0` or the lower bound, the first enum member, `False`,
only the required properties, the shortest arrays), so tests can assert on them; another
seed gives other values.
"""

from __future__ import annotations

import importlib
import json
import math
import re
import string
import uuid
from datetime import date, timedelta
from typing import Any

from helikon.core._internal.json_value import JsonValue
from helikon.core.exceptions import UserError

_CHARS = string.ascii_lowercase + string.digits
_MAX_DEPTH = 8  # deeper than this, a recursive schema takes its shortest way out

_FORMATS: dict[str, str] = {
    "date-time": "2024-01-01T00:00:00Z",
    "time": "00:00:00",
    "email": "a@example.com",
    "idn-email": "a@example.com",
    "name-email": "A <a@example.com>",
    "uri": "https://example.com/",
    "iri": "https://example.com/",
    "uri-reference": "https://example.com/",
    "hostname": "example.com",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "ipvanyaddress": "127.0.0.1",
    "ipv4network": "10.0.0.0/8",
    "ipv6network": "fd00::/8",
    "ipvanynetwork": "10.0.0.0/8",
    "ipv4interface": "10.0.0.1/8",
    "ipv6interface": "fd00::1/8",
    "ipvanyinterface": "10.0.0.1/8",
    "base64": "YQ==",
    "regex": "a",
    "json-string": "null",
}


def schema_example(schema: JsonValue, *, seed: int = 0) -> JsonValue:
    """A value valid for `schema` (pydantic's constraints, formats, `$ref`s and unions).

    Raises `UserError` naming the place (a JSON pointer) when no value can be found.
    """
    return _Example(schema, seed).value(schema, "#", 0)


class _Example:
    def __init__(self, root: JsonValue, seed: int) -> None:
        self.root = root
        self.seed = seed

    def fail(self, path: str, why: str) -> UserError:
        return UserError(f"cannot generate a value for the schema at {path}: {why}")

    def resolve(self, ref: str, path: str) -> dict[str, Any]:
        node: Any = self.root
        if not ref.startswith("#"):
            raise self.fail(path, f"$ref {ref!r} is not inside the schema")
        for part in ref[1:].split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            table = _as_dict(node)
            node = table.get(part) if table is not None else None
        found = _as_dict(node)
        if found is None:
            raise self.fail(path, f"$ref {ref!r} does not resolve")
        return found

    def value(self, schema: Any, path: str, depth: int) -> Any:  # noqa: C901 - one branch per keyword
        if schema is True or schema == {}:
            return "a"
        if not isinstance(schema, dict):
            raise self.fail(path, "the schema accepts nothing")
        node: dict[str, Any] = schema  # pyright: ignore[reportUnknownVariableType]
        if "$ref" in node:
            target = self.resolve(node["$ref"], path)
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return self.value({**target, **rest}, path, depth + 1)
        if "allOf" in node:
            merged = {k: v for k, v in node.items() if k != "allOf"}
            for branch in node["allOf"]:
                branch = self.resolve(branch["$ref"], path) if "$ref" in branch else branch
                merged = _merge(merged, branch)
            return self.value(merged, path, depth)
        if "const" in node:
            return node["const"]
        if node.get("enum"):
            return node["enum"][self.seed % len(node["enum"])]
        if node.get("examples"):
            return node["examples"][self.seed % len(node["examples"])]
        for keyword in ("anyOf", "oneOf"):
            if keyword in node:
                return self.union(node, keyword, path, depth)
        kind = node.get("type")
        if isinstance(kind, list):
            kinds: list[Any] = [k for k in kind if k != "null"] or ["null"]  # pyright: ignore[reportUnknownVariableType]
            kind = kinds[self.seed % len(kinds)]
        if kind == "object" or (kind is None and "properties" in node):
            return self.object(node, path, depth)
        if kind == "array":
            return self.array(node, path, depth)
        if kind == "string":
            return self.string(node, path)
        if kind in ("integer", "number"):
            return self.number(node, path, integer=kind == "integer")
        if kind == "boolean":
            return bool(self.seed % 2)
        if kind == "null":
            return None
        return "a"  # no type: anything goes

    def union(self, node: dict[str, Any], keyword: str, path: str, depth: int) -> Any:
        branches: list[Any] = list(node[keyword])
        if not branches:
            raise self.fail(path, f"{keyword} is empty")
        rest = {k: v for k, v in node.items() if k not in (keyword, "discriminator")}
        tag: Any = (_as_dict(node.get("discriminator")) or {}).get("propertyName")
        if depth >= _MAX_DEPTH:  # take a branch that ends the recursion
            plain: list[Any] = [b for b in branches if isinstance(b, dict) and "$ref" not in b]
            branches = plain or branches
        branch: Any = branches[self.seed % len(branches)]
        table = _as_dict(branch)
        if table is not None and "$ref" in table:
            table = self.resolve(table["$ref"], path)
        if table is None:
            return self.value(branch, f"{path}/{keyword}", depth + 1)
        merged = _merge(rest, table) if rest else table
        if tag:
            # pydantic leaves a defaulted tag out of `required`; the union needs it to pick.
            merged = {**merged, "required": [*merged.get("required", []), tag]}
        return self.value(merged, f"{path}/{keyword}/{self.seed % len(branches)}", depth + 1)

    def object(self, node: dict[str, Any], path: str, depth: int) -> dict[str, Any]:
        properties: dict[str, Any] = node.get("properties") or {}
        required: list[str] = list(node.get("required") or [])
        wanted = max(int(node.get("minProperties", 0)), len(required))
        names = [*required, *(n for n in properties if n not in required)][:wanted]
        out: dict[str, Any] = {}
        for name in names:
            if name in properties:
                out[name] = self.value(properties[name], f"{path}/properties/{name}", depth + 1)
        extra = node.get("additionalProperties", True)
        index = 0
        while len(out) < wanted:
            if extra is False:
                raise self.fail(path, "minProperties asks for more properties than the object allows")
            key = self.key(node.get("propertyNames"), index, path)
            index += 1
            if key not in out:
                out[key] = self.value(extra, f"{path}/additionalProperties", depth + 1)
        return out

    def key(self, names: Any, index: int, path: str) -> str:
        if isinstance(names, dict):
            return str(_Example(self.root, self.seed + index).value(names, f"{path}/propertyNames", 0))
        return f"key{index}"

    def array(self, node: dict[str, Any], path: str, depth: int) -> list[Any]:
        prefix: list[Any] = list(node.get("prefixItems") or [])
        items = node.get("items", {})
        if isinstance(items, list):  # the older tuple spelling
            prefix, items = items, {}  # pyright: ignore[reportUnknownVariableType]
        low = int(node.get("minItems", 0))
        out = [self.value(s, f"{path}/prefixItems/{i}", depth + 1) for i, s in enumerate(prefix)]
        unique = bool(node.get("uniqueItems"))
        count = len(out)
        while len(out) < low:
            if items is False:
                raise self.fail(path, "minItems asks for more items than prefixItems gives")
            generator = _Example(self.root, self.seed + count) if unique else self
            item = generator.value(items, f"{path}/items", depth + 1)
            count += 1
            if unique and item in out:
                if count > low + 50:
                    raise self.fail(path, "cannot find enough unique items")
                continue
            out.append(item)
        return out

    def string(self, node: dict[str, Any], path: str) -> str:
        low = int(node.get("minLength", 0))
        high = node.get("maxLength")
        candidates: list[str] = []
        fmt = node.get("format")
        media = node.get("contentMediaType")
        if media == "application/json" and "contentSchema" in node:
            candidates.append(json.dumps(self.value(node["contentSchema"], f"{path}/contentSchema", 0)))
        elif fmt == "date":
            candidates.append((date(2024, 1, 1) + timedelta(days=self.seed)).isoformat())
        elif fmt == "duration":
            candidates.append(f"PT{self.seed}S")
        elif isinstance(fmt, str) and fmt.startswith("uuid"):
            version = int(fmt[4:]) if fmt[4:].isdigit() else 4
            candidates.append(str(uuid.UUID(int=self.seed, version=version)))
        elif isinstance(fmt, str) and fmt in _FORMATS:
            candidates.append(_FORMATS[fmt])
        candidates.append(self.word())
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            candidates += _pattern_candidates(pattern, low)
        for text in candidates:
            text = _fit(text, low, high)
            if not isinstance(pattern, str) or re.search(pattern, text):
                return text
        raise self.fail(path, f"no string of length {low}..{high} matching pattern {pattern!r} found")

    def word(self) -> str:
        n, out = self.seed, ""
        while True:
            out = _CHARS[n % len(_CHARS)] + out
            n = n // len(_CHARS) - 1
            if n < 0:
                return out

    def number(self, node: dict[str, Any], path: str, *, integer: bool) -> int | float:
        low = node.get("minimum", -math.inf)
        high = node.get("maximum", math.inf)
        step = node.get("multipleOf")
        ex_low, ex_high = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
        unit: int | float = step if step is not None else 1

        def fits(value: float) -> bool:
            return (
                low <= value <= high
                and (ex_low is None or value > ex_low)
                and (ex_high is None or value < ex_high)
                and (step is None or math.isclose(value / step, round(value / step)))
            )

        lower = max(low, ex_low if ex_low is not None else -math.inf)
        upper = min(high, ex_high if ex_high is not None else math.inf)
        start = lower if lower > -math.inf else (upper - unit * (self.seed + 1) if upper < math.inf else 0)
        first = math.ceil(start / unit) * unit
        found: list[int | float] = []
        for k in range(self.seed + 200):
            value = first + k * unit
            if integer:
                value = math.ceil(value)
            if fits(value):
                found.append(int(value) if integer else float(value))
                if len(found) > self.seed:
                    break
            elif found or value > upper:
                break  # past the upper bound: the values found are all there are
        if found:
            return found[self.seed % len(found)]
        if not integer and step is None and lower < upper:
            middle = (lower + upper) / 2 if math.isfinite(lower + upper) else lower + 0.5
            if fits(middle):
                return middle
        raise self.fail(path, "no number fits its bounds")


def _as_dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None  # pyright: ignore[reportUnknownVariableType]


def _fit(text: str, low: int, high: int | None) -> str:
    """`text` padded (repeating its last character) or cut to `low..high` characters."""
    if len(text) < low:
        text += (text[-1:] or "a") * (low - len(text))
    return text if high is None else text[:high]


def _merge(left: dict[str, Any], right: Any) -> dict[str, Any]:
    if not isinstance(right, dict):
        return left
    out = {**left, **right}  # pyright: ignore[reportUnknownVariableType]
    if "properties" in left and "properties" in right:
        out["properties"] = {**left["properties"], **right["properties"]}
    if "required" in left and "required" in right:
        out["required"] = [*left["required"], *right["required"]]
    return out  # pyright: ignore[reportUnknownVariableType]


_sre: Any = importlib.import_module("re._parser")  # the standard library's own regex parser


def _pattern_candidates(pattern: str, low: int) -> list[str]:
    """Strings built to match `pattern` (each repeat at its minimum, then stretched to `low`)."""
    try:
        parsed: Any = _sre.parse(pattern)
    except re.error:
        return []
    return [_from_regex(parsed, stretch) for stretch in (0, 1, max(low, 2))]


def _from_regex(items: Any, stretch: int) -> str:
    out: list[str] = []
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "NOT_LITERAL":
            out.append("a" if chr(arg) != "a" else "b")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_from_class(arg))
        elif name == "BRANCH":
            out.append(_from_regex(arg[1][0], stretch))
        elif name in ("SUBPATTERN", "ATOMIC_GROUP"):
            out.append(_from_regex(arg[-1], stretch))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            least, most, body = arg
            count = least + stretch if most is _sre.MAXREPEAT else min(most, least + stretch)
            out.append(_from_regex(body, stretch) * count)
        elif name == "ASSERT":
            out.append(_from_regex(arg[1], stretch) if arg[0] > 0 else "")
    return "".join(out)


def _from_class(members: Any) -> str:
    negated = any(str(op) == "NEGATE" for op, _ in members)
    for candidate in "a0A_ -.@":
        hit = any(_in_member(str(op), arg, candidate) for op, arg in members)
        if hit != negated:
            return candidate
    return "a"


def _in_member(op: str, arg: Any, char: str) -> bool:
    if op == "LITERAL":
        return char == chr(arg)
    if op == "RANGE":
        return arg[0] <= ord(char) <= arg[1]
    if op == "CATEGORY":
        kind = str(arg)
        matched = {"DIGIT": char.isdigit(), "WORD": char.isalnum() or char == "_", "SPACE": char.isspace()}
        for key, value in matched.items():
            if key in kind:
                return value != ("NOT_" in kind)
    return False
