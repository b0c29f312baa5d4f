r"""`ReadTool` ("Read"): a text file beneath the sandbox root, as numbered lines.

Lines come back as `cat -n` shows them (the line number, a tab, the line), `limit` lines from
line `offset`. The file is read in chunks and reading stops once the range is complete, so
the first lines of a 10 MB file cost a few chunks, not the file. A file with a NUL byte in its
first 8 KiB is taken for binary and refused. A UTF-8 byte-order mark is not shown, nor the CR
of a CRLF: Edit matches in this text (`helikon.tools.files._text`).

Example:
    ```python
    import asyncio
    import tempfile
    from pathlib import Path

    from helikon import RunContext, ToolContext
    from helikon.tools import ReadTool, Sandbox

    with tempfile.TemporaryDirectory() as tmp, Sandbox.open(tmp) as sandbox:
        Path(tmp, "notes.txt").write_text("one\ntwo\nthree\n")
        ctx = ToolContext(RunContext.ephemeral(None), call_id="c1", tool_name="Read", max_agent_depth=1)
        out = asyncio.run(ReadTool(sandbox).invoke(ctx, {"file_path": "notes.txt", "offset": 2}))
        assert out.to_parts()[0].text == "     2\ttwo\n     3\tthree"
        assert out.metadata == {
            "path": "notes.txt", "start_line": 2, "end_line": 3, "total_lines": 3,
            "bytes": 14, "truncated": False,
        }
    ```
"""

from __future__ import annotations

import codecs
import os
from typing import Annotated, Any, BinaryIO, TypeVar

from pydantic import Field

from helikon.core.exceptions import ToolError
from helikon.core.tools import ToolEffect, ToolOutput

from ._base import SandboxTool, output
from ._confine import open_read, regular

Ctx = TypeVar("Ctx")

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
CHUNK = 64 * 1024
BINARY_SNIFF = 8 * 1024
LINE_BYTES = 4 * MAX_LINE_CHARS + 4  # enough bytes for MAX_LINE_CHARS characters and the cut mark


class ReadTool(SandboxTool[Ctx]):
    """Read a text file beneath the sandbox root as numbered lines: `ReadTool(sandbox)`."""

    __slots__ = ()

    NAME = "Read"
    EFFECT = ToolEffect.READ_ONLY
    ABOUT = (
        "Read a text file. Returns numbered lines ('cat -n' style: line number, tab, line). "
        f"By default the first {DEFAULT_LIMIT} lines; for longer files pass offset (the first line "
        f"to show, 1-based) and limit. Lines longer than {MAX_LINE_CHARS} characters are cut. "
        "Binary files are refused."
    )

    def run(
        self,
        file_path: Annotated[str, Field(description="The file, relative to the sandbox root.")],
        offset: Annotated[int, Field(ge=1, description="The first line to show (1-based).")] = 1,
        limit: Annotated[int, Field(ge=1, description="How many lines to show at most.")] = DEFAULT_LIMIT,
    ) -> ToolOutput:
        """Numbered lines `offset` .. `offset + limit - 1` of `file_path`."""
        fd = open_read(self.sandbox.fd, file_path, os.O_RDONLY)
        st = regular(fd, file_path, "Read")
        with os.fdopen(fd, "rb") as f:
            return _numbered(f, file_path, st.st_size, offset, limit)


def _numbered(f: BinaryIO, path: str, size: int, offset: int, limit: int) -> ToolOutput:
    head: bytes = f.read(min(CHUNK, max(size, 1)))
    if b"\0" in head[:BINARY_SNIFF]:
        raise ToolError(f"{path!r} is a binary file ({size} bytes); Read shows text files only")
    head = head.removeprefix(codecs.BOM_UTF8)  # a mark of the encoding, not text of line 1
    meta: dict[str, Any] = {"path": path, "bytes": size}
    if not head:
        meta |= {"start_line": 0, "end_line": 0, "total_lines": 0, "truncated": False}
        return output(f"({path} is empty)", meta)
    shown: list[str] = []
    number = 0  # the whole lines seen so far
    last = offset + limit - 1
    pending = b""  # the start of a line that goes on in the next chunk
    chunk = head
    while chunk and number <= last:
        block = pending + chunk
        cut = block.rfind(b"\n") + 1
        # Only a line's first bytes are shown: keeping the rest would copy a long line over and over.
        pending = block[cut:][:LINE_BYTES]
        count = block.count(b"\n", 0, cut)
        if number + count >= offset:  # a chunk before the range is only counted, not decoded
            shown += _lines(block[:cut], number + 1, offset, last)
        number += count
        chunk = f.read(CHUNK)
    if pending and number <= last:
        number += 1  # the last line, which has no newline
        shown += _lines(pending + b"\n", number, offset, last)
    more = number > last
    if not shown:
        raise ToolError(f"{path!r} has {number} lines; offset={offset} is past the end")
    end = offset + len(shown) - 1
    meta |= {"start_line": offset, "end_line": end, "total_lines": None if more else number}
    meta["truncated"] = more
    text = "\n".join(shown)
    if more:
        text += f"\n\n(showing lines {offset}-{end}; more follow: call Read with offset={end + 1})"
    return output(text, meta)


def _lines(raw: bytes, first: int, offset: int, last: int) -> list[str]:
    """Lines `offset` .. `last` of `raw`, numbered; `raw` is whole lines from line `first` on.

    The lines are decoded and split at once (a newline byte is never part of a UTF-8 character);
    only lines with a carriage return or over the length cap pay a step each to fix them.
    """
    text = raw.decode("utf-8", errors="replace")
    lo = max(offset - first, 0)
    lines = text[:-1].split("\n")[lo : last - first + 1]
    if "\r" in text:
        lines = [line.removesuffix("\r") for line in lines]
    if max(map(len, lines), default=0) > MAX_LINE_CHARS:
        lines = [
            line[:MAX_LINE_CHARS] + " [line cut]" if len(line) > MAX_LINE_CHARS else line for line in lines
        ]
    return [f"{number:>6}\t{line}" for number, line in enumerate(lines, first + lo)]


__all__ = ["ReadTool"]
