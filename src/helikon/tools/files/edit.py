r"""`EditTool` ("Edit"): replace an exact string in a file beneath the sandbox root.

`old_string` must occur exactly once (or pass `replace_all`): no match and an ambiguous match
(overlapping places too: `"aa"` in `"aaa"`) are refused with what to do, so the model never
edits the wrong place. It is matched in the text Read shows (no BOM, each CRLF a LF), and
what replaces it is written in the file's own form: its BOM kept, its lines' ending used for
the new lines (`helikon.tools.files._text`). The new content is written as `WriteTool` writes
(temp file + rename in the same directory), and like a write, an edit follows no symlink.

Example:
    ```python
    import asyncio
    import tempfile
    from pathlib import Path

    from helikon import RunContext, ToolContext
    from helikon.tools import EditTool, Sandbox

    with tempfile.TemporaryDirectory() as tmp, Sandbox.open(tmp) as sandbox:
        Path(tmp, "app.py").write_text("x = 1\ny = 2\n")
        ctx = ToolContext(RunContext.ephemeral(None), call_id="c1", tool_name="Edit", max_agent_depth=1)
        args = {"file_path": "app.py", "old_string": "y = 2", "new_string": "y = 3"}
        out = asyncio.run(EditTool(sandbox).invoke(ctx, args))
        assert Path(tmp, "app.py").read_text() == "x = 1\ny = 3\n"
        assert out.metadata is not None and out.metadata["start_line"] == 2
    ```
"""

from __future__ import annotations

import os
from typing import Annotated, TypeVar

from pydantic import Field

from helikon.core._internal.json_value import JsonObject
from helikon.core.exceptions import ToolError
from helikon.core.tools import ToolEffect, ToolOutput

from ._base import SandboxTool, output
from ._confine import open_at, regular, walk
from ._text import BOM, Form, ShownText, shown
from .write import replace_file

Ctx = TypeVar("Ctx")

MAX_EDIT_BYTES = 16 * 1024 * 1024


class EditTool(SandboxTool[Ctx]):
    """Exact-string replacement in a file beneath the sandbox root: `EditTool(sandbox)`."""

    __slots__ = ()

    NAME = "Edit"
    EFFECT = ToolEffect.WRITE
    ABOUT = (
        "Edit a text file by exact string replacement: old_string (copied exactly from the file, "
        "whitespace included) becomes new_string. Line endings need not match: the file keeps "
        "its own (CRLF or LF). old_string must occur exactly once; add "
        "surrounding lines to make it unique, or pass replace_all to replace every occurrence. "
        "Symlinks are never followed."
    )

    def run(
        self,
        file_path: Annotated[str, Field(description="The file, relative to the sandbox root.")],
        old_string: Annotated[str, Field(description="The exact text to replace.")],
        new_string: Annotated[str, Field(description="The text to put in its place.")],
        replace_all: Annotated[bool, Field(description="Replace every occurrence.")] = False,
    ) -> ToolOutput:
        """Replace `old_string` with `new_string` in `file_path`."""
        # A model copies old_string from Read, which shows no CR of a CRLF and no BOM: match in
        # that text, and write what replaces it in the file's own form.
        old, new = shown(old_string), shown(new_string)
        if not old:
            raise ToolError("old_string is empty; to create a file or replace it whole, use Write")
        if old == new:
            raise ToolError("old_string and new_string are the same; there is nothing to change")
        parent, name = walk(self.sandbox.fd, file_path, create=False)
        try:
            raw = _read_text(parent, name, file_path)
            form = Form.of(raw)
            view = ShownText(raw.removeprefix(BOM))
            starts = _places(view.text, old, file_path, replace_all)
            new_text = view.replace(old, form.lines(new), starts)
            data = ((BOM if form.bom else "") + new_text).encode("utf-8")
            replace_file(parent, name, file_path, data)
        finally:
            os.close(parent)
        start = view.text.count("\n", 0, starts[0]) + 1
        end = start + new.count("\n")
        meta: JsonObject = {
            "path": file_path,
            "start_line": start,
            "end_line": end,
            "replacements": len(starts),
            "bytes": len(data),
            "truncated": False,
        }
        where = f"line {start}" if len(starts) == 1 else f"{len(starts)} places, the first at line {start}"
        return output(f"Edited {file_path}: replaced {where}", meta)


def _places(text: str, old: str, path: str, replace_all: bool) -> list[int]:
    """Where `old` is replaced in `text`: its one place, or with `replace_all` each, left to right.

    A second place that overlaps the first ('aa' in 'aaa') makes `old` ambiguous too.
    """
    first = text.find(old)
    if first == -1:
        raise ToolError(f"old_string was not found in {path!r}; Read the file and copy the text exactly")
    if replace_all:
        starts = [first]
        while (at := text.find(old, starts[-1] + len(old))) != -1:
            starts.append(at)
        return starts
    count = text.count(old)
    if count > 1:
        raise ToolError(
            f"old_string occurs {count} times in {path!r}; add surrounding lines to make "
            "it unique, or pass replace_all=true to replace all of them"
        )
    # count() counts places that do not overlap: with one, any other place overlaps the first.
    if text.find(old, first + 1) != -1:
        raise ToolError(
            f"old_string occurs more than once in {path!r} (the places overlap, as 'aa' does in "
            "'aaa'); add surrounding text to make it unique, or pass replace_all=true to replace "
            "them left to right"
        )
    return [first]


def _read_text(dir_fd: int, name: str, path: str) -> str:
    fd = open_at(dir_fd, name, path, os.O_RDONLY)
    st = regular(fd, path, "Edit")
    with os.fdopen(fd, "rb") as f:
        if st.st_size > MAX_EDIT_BYTES:
            raise ToolError(
                f"{path!r} is {st.st_size} bytes; Edit works on files up to {MAX_EDIT_BYTES} bytes"
            )
        data = f.read()
    if b"\0" in data[:8192]:
        raise ToolError(f"{path!r} is a binary file; Edit changes text files only")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{path!r} is not UTF-8 text; Edit would corrupt it, so it refuses") from None


__all__ = ["EditTool"]
