"""The JSON value alias shared by every carrier."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    JsonValue: TypeAlias = dict[str, "JsonValue"] | list["JsonValue"] | str | int | float | bool | None
    """Any value JSON can hold: the Python counterpart of `serde_json::Value`."""
    JsonObject: TypeAlias = dict[str, JsonValue]
    """A JSON object (tool arguments, schemas)."""
else:
    # At run time the alias is `Any`: pydantic then accepts and emits any JSON value
    # as-is, and importing this module costs nothing. `JsonObject` is a real type (not a
    # string) so that pydantic can build schemas of the carriers using it (`ToolDef`).
    JsonValue = Any
    JsonObject = dict[str, Any]

__all__ = ["JsonObject", "JsonValue"]
