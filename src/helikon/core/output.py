"""`OutputType`: what a structured-output agent must produce, with its schema and validator."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from types import UnionType
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar, Union, cast, get_args, get_origin

from ._internal.callbacks import raised
from ._internal.carrier import carrier
from ._internal.json_value import JsonObject
from .exceptions import UserError
from .model import ResponseFormat

if TYPE_CHECKING:
    from pydantic import TypeAdapter

T = TypeVar("T")

_WRAP_KEY = "response"
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)
_OPEN_FENCE = re.compile(r"^\s*```(?:json)?\s*\n")  # a fenced answer still streaming


TextCheck: TypeAlias = Callable[[str], tuple[str, ...]]
"""Validates final text; returns the schema errors (empty when it validates).

What else it raises is a bug in a validator of the output type (see `validator_raised`).
"""


def validator_raised(name: str, exc: Exception) -> str:
    """The run's error when a validator of the output type `name` raised `exc`.

    pydantic reports only `ValueError` and `AssertionError` as validation errors (which the
    model is asked to repair); anything else propagates, and no repair turn can fix it.
    """
    what = raised(f"a validator of the output type {name}", exc)
    return f"{what}; to reject a value, raise ValueError in the validator"


@carrier
class OutputSpec:
    """What the loop needs to know about an output type: its name, format and validator."""

    name: str
    response_format: ResponseFormat
    validate: TextCheck
    output: OutputType[Any] | None = None
    """The output type itself: what a run's result parses its final text with."""

    @staticmethod
    def of(output_type: Any) -> OutputSpec:
        """The spec of `output_type` (a type, or a list of types: their union)."""
        output = OutputType(output_type)
        return OutputSpec(
            name=output.name,
            response_format=output.response_format(),
            validate=lambda text: output.validate_text(text)[1],
            output=output,
        )


class OutputType(Generic[T]):
    """The type a structured run produces: a pydantic model or any type `TypeAdapter` accepts.

    A type whose schema is not an object (a list, a scalar, a union) is wrapped as
    `{"response": ...}` on the wire and unwrapped on validation, since providers'
    structured-output modes want an object at the top. A list of types (`[Weather,
    Refusal]`) is their union, the same as `Weather | Refusal`: the value is the member
    that validates.

    Example:
        ```python
        from pydantic import BaseModel
        from helikon.core.output import OutputType

        class Category(BaseModel):
            category: str
            confidence: float

        out = OutputType(Category)
        value, errors = out.validate_text('{"category": "Streaming", "confidence": 0.9}')
        assert value == Category(category="Streaming", confidence=0.9) and not errors
        ```
    """

    __slots__ = ("_adapter", "_partial", "_wrapped", "name", "schema", "type")

    def __init__(self, output_type: type[T] | Any, *, name: str | None = None) -> None:
        from pydantic import TypeAdapter
        from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

        members = _members(output_type)
        if isinstance(output_type, list | tuple):
            output_type = Union[tuple(members)]  # noqa: UP007  (a runtime union of the listed types)
        self.type = output_type
        try:
            self._adapter: TypeAdapter[T] = TypeAdapter(output_type)
            schema: dict[str, Any] = self._adapter.json_schema()
        except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
            raise UserError(
                f"output_type={output_type!r}: cannot derive a JSON Schema from it ({exc}); "
                "use a pydantic model, a dataclass, a TypedDict or another type pydantic understands"
            ) from exc
        self._wrapped = schema.get("type") != "object"
        if self._wrapped:
            inner = schema
            schema = {"type": "object", "properties": {_WRAP_KEY: inner}, "required": [_WRAP_KEY]}
            if "$defs" in inner:
                schema["$defs"] = inner.pop("$defs")
        title = schema.get("title") if isinstance(schema.get("title"), str) else None
        joined = "_or_".join(_name_of(m) for m in members) if len(members) > 1 else None
        raw_name = name or title or joined or getattr(output_type, "__name__", None) or "StructuredOutput"
        self.name = re.sub(r"[^A-Za-z0-9_-]", "_", str(raw_name))[:64] or "StructuredOutput"
        self.schema: JsonObject = schema
        self._partial: Any = None  # the `PartialValue` reader, built on the first `validate_partial`

    def response_format(self) -> ResponseFormat:
        """The strict `json_schema` response format for a finalizing turn."""
        return ResponseFormat.json_schema(name=self.name, schema=self.schema, strict=True)

    def validate_text(self, text: str) -> tuple[T | None, tuple[str, ...]]:
        """Parse and validate the model's text: `(value, ())` or `(None, errors)`."""
        from pydantic import ValidationError

        match = _FENCE.match(text)
        payload = match.group(1) if match else text
        try:
            if self._wrapped:
                from pydantic_core import from_json

                data = from_json(payload)
                if not isinstance(data, dict) or _WRAP_KEY not in data:
                    return None, (f"expected a JSON object with a {_WRAP_KEY!r} key",)
                return self._adapter.validate_python(data[_WRAP_KEY]), ()
            return self._adapter.validate_json(payload), ()
        except ValidationError as exc:
            details = exc.errors(include_url=False)
            if details and details[0]["type"] == "json_invalid":
                return None, (f"not valid JSON: {details[0]['msg'].removeprefix('Invalid JSON: ')}",)
            # Paths name the field as the model wrote it, so inside the wrapper too.
            prefix: tuple[str, ...] = (_WRAP_KEY,) if self._wrapped else ()
            errors = tuple(
                f"{'.'.join(str(p) for p in (*prefix, *err['loc'])) or '(root)'}: {err['msg']}"
                for err in details
            )
            return None, errors
        except ValueError as exc:
            return None, (f"not valid JSON: {exc}",)

    def validate_partial(self, text: str) -> T | None:
        """The value the beginning of a streamed answer holds so far (None until it holds one).

        See `RunStream.partial_output`: a pydantic model or `TypedDict` is built from the
        fields complete so far; other types come once they validate.

        Example:
            ```python
            from pydantic import BaseModel
            from helikon.core.output import OutputType

            class Plan(BaseModel):
                title: str
                steps: list[str]

            partial = OutputType(Plan).validate_partial('{"title": "Trip", "steps": ["pa')
            assert partial is not None and partial.title == "Trip" and partial.steps == ["pa"]
            ```
        """
        from ._internal.partial import MISSING, PartialValue

        reader = self._partial
        if reader is None:
            reader = self._partial = PartialValue(self.type)
        match = _OPEN_FENCE.match(text)
        data: Any = reader.parse(text[match.end() :] if match else text)
        if self._wrapped:
            data = cast(dict[str, Any], data).get(_WRAP_KEY, MISSING) if isinstance(data, dict) else MISSING
        if data is MISSING:
            return None
        value = reader.value(data)
        return None if value is MISSING else value

    def dump_text(self, value: T) -> str:
        """`value` as the JSON text the model would have written (wrapped if the schema is)."""
        data = self._adapter.dump_python(value, mode="json")
        from pydantic_core import to_json

        return to_json({_WRAP_KEY: data} if self._wrapped else data).decode()

    def parse(self, text: str) -> T:
        """Validate `text`, raising `UserError` with the errors on a miss."""
        value, errors = self.validate_text(text)
        if errors:
            raise UserError(f"the text does not match {self.name}: " + "; ".join(errors))
        return cast(T, value)


def _name_of(member: Any) -> str:
    return "None" if member is type(None) else getattr(member, "__name__", "")


def _members(output_type: Any) -> tuple[Any, ...]:
    """The member types of a union (`A | B`, `Union[A, B]`, `[A, B]`); a lone type is its own."""
    if isinstance(output_type, list | tuple):
        listed = cast(Sequence[Any], output_type)
        if not listed:
            raise UserError("output_type=[]: list at least one type (a list of types is their union)")
        return tuple(listed)
    if get_origin(output_type) in (Union, UnionType):
        return get_args(output_type)
    return (output_type,)


__all__ = ["OutputType"]
