r"""Where each key of a TOML file is written: what lets a sidecar error name its line.

`tomllib` parses values but forgets positions. `key_lines` reads the text once more, only
far enough to see statements: table headers (`[agents.triage]`) and `key = value` lines,
skipping the insides of strings, multi-line strings, arrays and inline tables. A key
path's line is where that key is written; a key inside an inline table or a multi-line
value answers with the line of the statement that holds it (`line_of` falls back to the
longest written prefix).

Example:
    ```python
    from helikon.cli.toml_lines import key_lines, line_of

    text = '[agents.triage]\nmodel = { provider = "openai" }\ntools = [\n  "a",\n]\n'
    lines = key_lines(text)
    assert line_of(lines, ("agents", "triage")) == 1
    assert line_of(lines, ("agents", "triage", "model", "provider")) == 2
    assert line_of(lines, ("agents", "triage", "tools", 0)) == 3
    ```
"""

from __future__ import annotations

import re
from collections.abc import Sequence

KeyPath = tuple[str, ...]

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def key_lines(text: str) -> dict[KeyPath, int]:
    """Each written key path (and each table header's path) -> its 1-based line."""
    lines: dict[KeyPath, int] = {}
    table: KeyPath = ()
    scanner = _Scanner()
    for number, line in enumerate(text.splitlines(), start=1):
        if scanner.inside():  # a continuation of a multi-line string, array or inline table
            scanner.feed(line)
            continue
        stripped = line.lstrip()
        if stripped.startswith("["):
            header = stripped[2:] if stripped.startswith("[[") else stripped[1:]
            parsed = _dotted_key(header)
            if parsed is not None:
                table = parsed[0]
                lines.setdefault(table, number)
            continue
        parsed = _dotted_key(stripped)
        if parsed is None or not parsed[1].lstrip().startswith("="):
            continue
        path, rest = parsed
        lines.setdefault(table + path, number)
        scanner.feed(rest.lstrip()[1:])
    return lines


def line_of(lines: dict[KeyPath, int], path: Sequence[str | int]) -> int | None:
    """The line of `path`, or of its longest written prefix (None: not even the first key)."""
    keys = tuple(str(part) for part in path if isinstance(part, str))
    for end in range(len(keys), 0, -1):
        found = lines.get(keys[:end])
        if found is not None:
            return found
    return None


def _dotted_key(text: str) -> tuple[KeyPath, str] | None:
    """`(parts, what follows)` of a dotted key at the start of `text` (None: no key there)."""
    parts: list[str] = []
    rest = text
    while True:
        rest = rest.lstrip()
        if rest.startswith('"'):
            end = _basic_string_end(rest)
            if end < 0:
                return None
            parts.append(_unescape(rest[1:end]))
            rest = rest[end + 1 :]
        elif rest.startswith("'"):
            end = rest.find("'", 1)
            if end < 0:
                return None
            parts.append(rest[1:end])
            rest = rest[end + 1 :]
        else:
            match = _BARE.match(rest)
            if match is None:
                return None
            parts.append(match.group())
            rest = rest[match.end() :]
        after = rest.lstrip()
        if not after.startswith("."):
            return tuple(parts), rest
        rest = after[1:]


def _basic_string_end(text: str) -> int:
    """The index of the quote closing the basic string that `text` starts with (-1: none)."""
    i = 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i
        i += 1
    return -1


def _unescape(text: str) -> str:
    return text.replace('\\"', '"').replace("\\\\", "\\")


class _Scanner:
    """Follows a value across lines: open multi-line strings and bracket depth, comments skipped."""

    __slots__ = ("depth", "string")

    def __init__(self) -> None:
        self.depth = 0
        self.string: str | None = None  # the delimiter of a multi-line string left open

    def inside(self) -> bool:
        return self.depth > 0 or self.string is not None

    def feed(self, text: str) -> None:
        i = 0
        while i < len(text):
            if self.string is not None:
                end = text.find(self.string, i)
                while end > 0 and self.string == '"""' and text[end - 1] == "\\":
                    end = text.find(self.string, end + 1)
                if end < 0:
                    return
                i = end + 3
                self.string = None
                continue
            char = text[i]
            if char == "#":
                return
            if text.startswith(('"""', "'''"), i):
                self.string = text[i : i + 3]
                i += 3
            elif char == '"':
                end = _basic_string_end(text[i:])
                i = len(text) if end < 0 else i + end + 1
            elif char == "'":
                end = text.find("'", i + 1)
                i = len(text) if end < 0 else end + 1
            else:
                if char in "[{":
                    self.depth += 1
                elif char in "]}":
                    self.depth = max(self.depth - 1, 0)
                i += 1


__all__ = ["KeyPath", "key_lines", "line_of"]
