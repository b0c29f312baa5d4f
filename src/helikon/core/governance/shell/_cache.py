"""`ParseCache`: the one bounded cache of shell parses, owned by whoever holds it."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

from ._parse import parse_command

if TYPE_CHECKING:
    from ._types import ShellParse

__all__ = ["ParseCache"]


class ParseCache:
    """Remembers the parses of short commands read more than once, so a repeated command is read twice.

    A model tends to send the same few commands again and again; reading one costs tens of
    microseconds. A command's parse is kept from its second reading on: a command read once
    is most often never sent again, and keeping its parse (a few hundred objects) would cost
    every decision memory and time and push out the parses that repeat. The cache is bounded
    twice: by entries (least recently used go first; the commands read once are remembered
    as text, as many) and by command length (a parse holds some 16 to 46 bytes per character
    of its command, so a longer command, rarely repeated, is parsed each time). The model
    writes the commands: a table bounded by entries alone grew to gigabytes.

    ```python
    from helikon.core.governance.shell import ParseCache

    cache = ParseCache(max_entries=2)
    cache.read("git status")  # read once: not kept
    kept = cache.read("git status")  # read again: kept from now on
    assert cache.read("git status") is kept and len(cache) == 1
    assert [c.program for c in kept.commands] == ["git"]
    ```
    """

    __slots__ = ("_entries", "_seen", "max_command", "max_entries")

    def __init__(self, *, max_entries: int = 2048, max_command: int = 512) -> None:
        self.max_entries = max_entries
        self.max_command = max_command
        self._entries: OrderedDict[str, ShellParse] = OrderedDict()
        self._seen: dict[str, None] = {}  # the commands read once lately, oldest first

    def read(self, command: str) -> ShellParse:
        """`parse_command(command)`, from the cache when the command was read twice lately."""
        if len(command) > self.max_command:
            return parse_command(command)
        entries = self._entries
        parse = entries.get(command)
        if parse is not None:
            entries.move_to_end(command)
            return parse
        parse = parse_command(command)
        seen = self._seen
        if command in seen:
            del seen[command]
            entries[command] = parse
            if len(entries) > self.max_entries:
                entries.popitem(last=False)
        else:
            seen[command] = None
            if len(seen) > self.max_entries:
                del seen[next(iter(seen))]
        return parse

    def __len__(self) -> int:
        """How many parses are kept."""
        return len(self._entries)
