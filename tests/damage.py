"""What damage to a stored payload looks like, for the decode tests of the codec and of every backend."""

from __future__ import annotations


def mutate(payload: str, edits: list[tuple[int, int, bytes]]) -> bytes:
    """`payload` with a few bytes replaced (kind 0), inserted (1) or cut (2); positions wrap around."""
    data = bytearray(payload.encode())
    for position, kind, value in edits:
        at = position % (len(data) + 1)
        if kind == 0:
            data[at : at + 1] = value
        elif kind == 1:
            data[at:at] = value
        else:
            del data[at : at + len(value)]
    return bytes(data)
