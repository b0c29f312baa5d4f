"""`ParseCache`: the one bounded cache of shell parses, owned by whoever holds it."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

from ._parse import parse_command

if TYPE_CHECKING:
    from ._types import ShellParse

__all__ = ["ParseCache"]


class ParseCache:
    """Remembers the parses of recent short commands, so a repeated command is read once.

    A model tends to send the same few commands again and again; reading one costs tens of
    microseconds. The cache is bounded twice: by entries (least recently used go first) and
    by command length (a parse holds some 16 to 46 bytes per character of its command, so a
    longer command, rarely repeated, is parsed each time). The model writes the commands:
    a table bounded by entries alone grew to gigabytes.

    ```python
    from helikon.core.governance.shell import ParseCache

    cache = ParseCache(max_entries=2)
    first = cache.read("git status")
    assert cache.read("git status") is first
    assert [c.program for c in first.commands] == ["git"]
    ```
    """

    __slots__ = ("_entries", "max_command", "max_entries")

    def __init__(self, *, max_entries: int = 2048, max_command: int = 512) -> None:
        self.max_entries = max_entries
        self.max_command = max_command
        self._entries: OrderedDict[str, ShellParse] = OrderedDict()

    def read(self, command: str) -> ShellParse:
        """`parse_command(command)`, from the cache when the command was read lately."""
        if len(command) > self.max_command:
            return parse_command(command)
        entries = self._entries
        parse = entries.get(command)
        if parse is not None:
            entries.move_to_end(command)
            return parse
        parse = entries[command] = parse_command(command)
        if len(entries) > self.max_entries:
            entries.popitem(last=False)
        return parse

    def __len__(self) -> int:
        return len(self._entries)
