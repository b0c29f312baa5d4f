"""What the command line's global options set for the commands that run after them."""

from __future__ import annotations


class State:
    """`--debug`: show tracebacks instead of one-line errors."""

    __slots__ = ("debug",)

    def __init__(self) -> None:
        self.debug = False


STATE = State()
