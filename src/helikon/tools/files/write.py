r"""`WriteTool` ("Write"): create or overwrite a file beneath the sandbox root, atomically.

Missing parent directories are made beneath the root. The content goes to a temporary file
in the target's directory, is flushed to disk, and is renamed over the target through the
same directory descriptor: a reader sees the old file or the new one, never half of it. A
symlink at the target's name is refused (one swapped in meanwhile is replaced by the rename,
never followed). Over an existing file, the content takes the file's form, which Read does
not show: its UTF-8 BOM is kept, and its lines end in CRLF when most of the file's did.

Example:
    ```python
    import asyncio
    import tempfile
    from pathlib import Path

    from helikon import RunContext, ToolContext
    from helikon.tools import Sandbox, WriteTool

    with tempfile.TemporaryDirectory() as tmp, Sandbox.open(tmp) as sandbox:
        ctx = ToolContext(RunContext.ephemeral(None), call_id="c1", tool_name="Write", max_agent_depth=1)
        args = {"file_path": "src/hello.py", "content": "print('hi')\n"}
        out = asyncio.run(WriteTool(sandbox).invoke(ctx, args))
        assert Path(tmp, "src", "hello.py").read_text() == "print('hi')\n"
        assert out.metadata == {
            "path": "src/hello.py", "start_line": 1, "end_line": 1, "bytes": 12,
            "created": True, "truncated": False,
        }
    ```
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from typing import Annotated, TypeVar

from pydantic import Field

from helikon.core._internal.json_value import JsonObject
from helikon.core.tools import ToolEffect, ToolOutput

from ._base import SandboxTool, output
from ._confine import open_at, refusal, regular, walk
from ._text import Form

Ctx = TypeVar("Ctx")

HEAD_BYTES = 64 * 1024
"""How much of an existing file is read to learn its form (BOM, line endings)."""
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class WriteTool(SandboxTool[Ctx]):
    """Create or overwrite a file beneath the sandbox root: `WriteTool(sandbox)`."""

    __slots__ = ()

    NAME = "Write"
    EFFECT = ToolEffect.WRITE
    ABOUT = (
        "Write a file: creates it (and its missing parent directories) or overwrites it whole "
        "with content. To change part of an existing file, prefer Edit. An existing file keeps its "
        "line endings (CRLF or LF) and byte-order mark. Symlinks are never followed."
    )

    def run(
        self,
        file_path: Annotated[str, Field(description="The file, relative to the sandbox root.")],
        content: Annotated[str, Field(description="The file's whole new content.")],
    ) -> ToolOutput:
        """Write `content` to `file_path`."""
        parent, name = walk(self.sandbox.fd, file_path, create=True)
        try:
            # Over an existing file, its form: its BOM and line endings, which Read does not show.
            head = _head(parent, name)
            data = (Form.of(head).file(content) if head else content).encode("utf-8")
            created = replace_file(parent, name, file_path, data)
        finally:
            os.close(parent)
        verb = "Created" if created else "Overwrote"
        meta: JsonObject = {
            "path": file_path,
            "start_line": 1 if content else 0,  # the whole file is new: lines 1..N (0, 0 when empty)
            "end_line": _line_count(content),
            "bytes": len(data),
            "created": created,
            "truncated": False,
        }
        return output(f"{verb} {file_path} ({len(data)} bytes)", meta)


def _line_count(text: str) -> int:
    """How many lines `text` has, as Read numbers them (a last line without a newline counts)."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _head(dir_fd: int, name: str) -> str:
    """The start of the regular file at `name` (empty when there is none); `replace_file` refuses the rest."""
    try:
        fd = os.open(name, _READ, dir_fd=dir_fd)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return os.read(fd, HEAD_BYTES).decode("utf-8", errors="replace")
    finally:
        os.close(fd)


def replace_file(dir_fd: int, name: str, path: str, data: bytes) -> bool:
    """Put `data` at `name` in `dir_fd` by temp file + rename; whether the file was new.

    An existing target must be a regular file with one link; its permission bits are kept.
    """
    mode = None  # a new file: 0o666 less the umask, as open(2) creates it
    try:
        old = os.open(name, _READ, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise refusal(path, exc, dir_fd=dir_fd, name=name) from None
    else:
        st = regular(old, path, "Write")
        os.close(old)
        mode = stat.S_IMODE(st.st_mode)
    temp = f".{name[:200]}.{secrets.token_hex(6)}.helikon-tmp"
    fd = open_at(dir_fd, temp, path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            f.flush()
            os.fsync(f.fileno())
        os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    return mode is None


__all__ = ["WriteTool", "replace_file"]
