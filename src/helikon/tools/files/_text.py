r"""A text file as the file tools show it, and the way back to the file's own form.

Read shows a file without its UTF-8 byte-order mark and without its line endings, so what a
model copies from Read is the file's *shown* text: no BOM, each CRLF a LF. Edit matches in
that text, and Edit and Write put what they write back into the file's own form: its BOM, and
its line ending (CRLF when most of its lines end in CRLF) for the lines they write. Lines they
do not touch keep theirs, so a file with mixed endings is not rewritten wholesale.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class Form:
    """How a file writes its text: with a BOM or not, and its lines' ending."""

    bom: bool = False
    newline: str = "\n"

    @classmethod
    def of(cls, text: str) -> Form:
        """The form of `text` (a whole file, or its first part)."""
        crlf = text.count("\r\n")
        lf = text.count("\n") - crlf
        return cls(bom=text.startswith(BOM), newline="\r\n" if crlf > lf else "\n")

    def lines(self, text: str) -> str:
        """`text`, whatever its line endings, with this form's."""
        text = shown(text)
        return text if self.newline == "\n" else text.replace("\n", self.newline)

    def file(self, text: str) -> str:
        """A whole new content for the file: this form's line endings, and its BOM (once)."""
        return BOM + self.lines(text.removeprefix(BOM)) if self.bom else self.lines(text)


def shown(text: str) -> str:
    """`text` with each CRLF as LF, as Read shows lines."""
    return text.replace("\r\n", "\n")


class ShownText:
    """A file's text (without its BOM) as Read shows it, and the way back to the file's own offsets."""

    __slots__ = ("_crlf_at", "original", "text")

    def __init__(self, original: str) -> None:
        self.original = original
        self.text = shown(original)
        # Where each LF that was a CRLF stands in `text`, in order (each CRLF before it is a
        # character shorter there).
        self._crlf_at = [m.start() - k for k, m in enumerate(re.finditer("\r\n", original))]

    def offset(self, i: int) -> int:
        """The offset in `original` of what is at `i` in `text` (a LF that was CRLF: its CR)."""
        return i + bisect_left(self._crlf_at, i)

    def replace(self, old: str, new: str, starts: list[int]) -> str:
        """`original` with `new` for the `old` at each of `starts` (offsets in `text`, not overlapping)."""
        out: list[str] = []
        done = 0
        for start in starts:
            out += [self.original[done : self.offset(start)], new]
            done = self.offset(start + len(old))
        out.append(self.original[done:])
        return "".join(out)


__all__ = ["BOM", "Form", "ShownText", "shown"]
