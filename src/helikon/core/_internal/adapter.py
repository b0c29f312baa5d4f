"""A module-level pydantic `TypeAdapter` that is built on first use.

Importing pydantic and building a discriminated-union schema costs a few hundred
milliseconds; `import helikon` must stay cheap, and most runs never serialize a carrier.
So each union's adapter is declared at module level as a `LazyAdapter` and built the
first time it (de)serializes something.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar

if TYPE_CHECKING:
    from pydantic import TypeAdapter

T = TypeVar("T")


class _ByTypeTag:
    """`Annotated` metadata on a union of carriers: pydantic reads a member by its `type` tag.

    Without it, pydantic tries the members one after another (a content part cost twice as
    much to read); with it, it builds the one the tag names. Pydantic is imported only when
    a schema is built, as for `LazyAdapter`.
    """

    __slots__ = ()

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic import Field

        return handler.generate_schema(Annotated[source, Field(discriminator="type")])


BY_TYPE = _ByTypeTag()
"""`Annotated[Union, BY_TYPE]`: a union of carriers that pydantic reads by the `type` tag."""


class LazyAdapter(Generic[T]):
    """A pydantic `TypeAdapter[T]` built on first use.

    Example:
        ```python
        from helikon.core.items import ITEM_ADAPTER, UserMessage

        data = ITEM_ADAPTER.dump_json(UserMessage.from_text("hi"))
        assert ITEM_ADAPTER.validate_json(data) == UserMessage.from_text("hi")
        ```
    """

    __slots__ = ("_adapter", "_build")

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._adapter: TypeAdapter[T] | None = None

    @property
    def adapter(self) -> TypeAdapter[T]:
        """The underlying pydantic `TypeAdapter`, built on first access."""
        adapter = self._adapter
        if adapter is None:
            from pydantic import TypeAdapter

            adapter = self._adapter = TypeAdapter(self._build())
        return adapter

    def dump_json(self, value: T) -> bytes:
        """Serialize `value` to JSON bytes."""
        return self.adapter.dump_json(value)

    def dump_python(self, value: T) -> Any:
        """Serialize `value` to JSON-compatible Python data (dicts, lists, strings...)."""
        return self.adapter.dump_python(value, mode="json")

    def validate_json(self, data: str | bytes) -> T:
        """Parse JSON text into a carrier, raising `pydantic.ValidationError` on a mismatch."""
        return self.adapter.validate_json(data)

    def validate_python(self, data: Any) -> T:
        """Build a carrier from JSON-compatible Python data."""
        return self.adapter.validate_python(data)

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of `T`."""
        return self.adapter.json_schema()
