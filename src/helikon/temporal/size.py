"""How big a step's input or result is once encoded for Temporal's history."""

from __future__ import annotations

from .converter import DATA_CONVERTER


def encoded_size(value: object) -> int:
    """The bytes `value` takes as a Temporal payload."""
    return DATA_CONVERTER.payload_converter.to_payloads([value])[0].ByteSize()


def over_limit(value: object, limit: int) -> int | None:
    """`value`'s encoded size when it is over `limit` bytes, else None."""
    size = encoded_size(value)
    return size if size > limit else None


__all__ = ["encoded_size", "over_limit"]
