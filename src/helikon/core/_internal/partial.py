"""`PartialValue`: the value an output type's JSON holds so far, while the model still streams it.

pydantic reads the incomplete JSON (`from_json(allow_partial="trailing-strings")`); what
does not validate yet is built leniently: a pydantic model (`model_construct`) or a
`TypedDict` from each field that validates (itself leniently, so nested models and lists
of them grow too), a list from its elements, a union from its first arm that fits; any
other type through pydantic's `experimental_allow_partial`, which drops an incomplete last
element of a list or dict.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Union, cast

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import from_json
from typing_extensions import is_typeddict

MISSING: Any = object()
"""Nothing valid yet."""


class PartialValue:
    """Reads partial JSON text into the best value of `type` it holds (or `MISSING`)."""

    __slots__ = ("_adapters", "_fields", "type")

    def __init__(self, type: Any) -> None:
        self.type = type
        # Both belong to this reader, keyed by the types it meets (not by the text it reads).
        self._adapters: dict[int, tuple[Any, TypeAdapter[Any]]] = {}  # id(annotation) -> it, its adapter
        self._fields: dict[Any, dict[str, tuple[str, Any]]] = {}  # model -> field -> (JSON key, annotation)

    def parse(self, payload: str) -> Any:
        """The JSON `payload` holds so far, as Python data; `MISSING` when it is not JSON (yet)."""
        try:
            return from_json(payload, allow_partial="trailing-strings")
        except ValueError:
            return MISSING

    def value(self, data: Any) -> Any:
        """`data` validated as this type, leniently where it is incomplete."""
        return self._value(self.type, data)

    def _adapter(self, annotation: Any) -> TypeAdapter[Any]:
        entry = self._adapters.get(id(annotation))
        if entry is None:
            entry = self._adapters[id(annotation)] = (annotation, TypeAdapter(annotation))
        return entry[1]

    def _value(self, annotation: Any, data: Any) -> Any:
        try:
            return self._adapter(annotation).validate_python(data)
        except ValidationError:
            return self._lenient(annotation, data)

    def _lenient(self, annotation: Any, data: Any) -> Any:
        # Constraints (`Annotated[int, Gt(0)]`) stay with the fallback; the structure is the inner type's.
        shape = (
            typing.get_args(annotation)[0]
            if typing.get_origin(annotation) is typing.Annotated
            else annotation
        )
        origin = typing.get_origin(shape)
        if origin is Union or origin is types.UnionType:
            for arm in typing.get_args(shape):
                value = self._lenient(arm, data)
                if value is not MISSING:
                    return value
            return MISSING
        if origin is list and isinstance(data, list):
            (item_type,) = typing.get_args(shape) or (Any,)
            values = [self._value(item_type, item) for item in data]  # pyright: ignore[reportUnknownVariableType]
            return [value for value in values if value is not MISSING]
        if isinstance(data, dict):
            if isinstance(shape, type) and issubclass(shape, BaseModel):
                return self._model(shape, data)  # pyright: ignore[reportUnknownArgumentType]
            if is_typeddict(cast(Any, shape)):
                return self._typed_dict(shape, cast(dict[str, Any], data))
        try:  # pydantic's own partial mode: an incomplete last element of a list or dict is dropped
            return self._adapter(annotation).validate_python(data, experimental_allow_partial=True)
        except ValidationError:
            return MISSING

    def _model(self, model: type[BaseModel], data: dict[str, Any]) -> BaseModel:
        values: dict[str, Any] = {}
        for name, (key, annotation) in self._fields_of(model).items():
            if key in data:
                value = self._value(annotation, data[key])
                if value is not MISSING:
                    values[name] = value
        return model.model_construct(**values)

    def _typed_dict(self, typed_dict: Any, data: dict[str, Any]) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name, (key, annotation) in self._fields_of(typed_dict).items():
            if key in data:
                value = self._value(annotation, data[key])
                if value is not MISSING:
                    values[name] = value
        return values

    def _fields_of(self, owner: Any) -> dict[str, tuple[str, Any]]:
        fields = self._fields.get(owner)
        if fields is not None:
            return fields
        fields = {}
        if isinstance(owner, type) and issubclass(owner, BaseModel):
            for name, field in owner.model_fields.items():
                alias = field.validation_alias if isinstance(field.validation_alias, str) else field.alias
                annotation = field.annotation
                if field.metadata:  # the constraints (`Field(gt=0)`) live beside the annotation
                    annotation = typing.Annotated[annotation, *field.metadata]
                fields[name] = (alias or name, annotation)
        else:
            hints = typing.get_type_hints(cast(Any, owner))  # `NotRequired[...]` unwrapped
            fields = {name: (name, annotation) for name, annotation in hints.items()}
        self._fields[owner] = fields
        return fields


__all__ = ["MISSING", "PartialValue"]
