r"""`GlobTool` ("Glob") and `GrepTool` ("Grep"): find files and lines beneath the sandbox root.

Both walk the tree through directory descriptors and never enter a symlink; `.git` is
skipped. Grep skips binary files, files with more than one hard link (their other names may be
outside the root) and files over 32 MiB, and says how many it skipped. It matches within a line,
as grep does: a match never spans lines, and `^`, `$` and `\Z` are each line's start and end
(`\A` is the file's start; lookbehinds see the line before).

Example:
    ```python
    import asyncio
    import tempfile
    from pathlib import Path

    from helikon import RunContext, ToolContext
    from helikon.tools import GlobTool, GrepTool, Sandbox

    with tempfile.TemporaryDirectory() as tmp, Sandbox.open(tmp) as sandbox:
        Path(tmp, "src").mkdir()
        Path(tmp, "src", "app.py").write_text("import os\nneedle = 1\n")
        Path(tmp, "README.md").write_text("needle in the docs\n")
        ctx = ToolContext(RunContext.ephemeral(None), call_id="c1", tool_name="Glob", max_agent_depth=1)
        found = asyncio.run(GlobTool(sandbox).invoke(ctx, {"pattern": "**/*.py"}))
        assert found.to_parts()[0].text == "src/app.py"
        hits = asyncio.run(GrepTool(sandbox).invoke(ctx, {"pattern": "needle", "include": "*.py"}))
        assert hits.to_parts()[0].text == "src/app.py:2:needle = 1"
    ```
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from typing import Annotated, Any, TypeVar

from pydantic import Field

from helikon.core._internal.json_value import JsonObject
from helikon.core.exceptions import ToolError
from helikon.core.tools import ToolEffect, ToolOutput

from ._base import SandboxTool, output
from ._confine import checked_pattern, open_dir, open_read
from ._text import BOM
from ._walk import Entry, glob_regex
from ._walk import files as walk_files

Ctx = TypeVar("Ctx")

MAX_GLOB_RESULTS = 1000
MAX_GREP_FILE_BYTES = 32 * 1024 * 1024
MAX_LINE_CHARS = 500
BINARY_SNIFF = 8 * 1024  # a NUL byte in the first this many bytes: a binary file
# What in a regex looks past a line's end (the end of the text, lookaheads, `$` with the
# multi-line flag off): a search over the whole text would see the next line there.
_PAST_LINE_END = ("\\Z", "(?=", "(?!", "(?-")


class GlobTool(SandboxTool[Ctx]):
    """Find files by glob beneath the sandbox root: `GlobTool(sandbox)`."""

    __slots__ = ()

    NAME = "Glob"
    EFFECT = ToolEffect.READ_ONLY
    ABOUT = (
        "Find files by name pattern. '*' and '?' match within one name, '**/' any number of "
        "directories, '[abc]' one of the characters: '**/*.py' is every Python file, 'src/*.md' the "
        "Markdown files directly in src. The pattern is relative to path (no absolute pattern, "
        "no '..': to search another directory, set path). Returns matching paths, one a line, "
        f"sorted, at most {MAX_GLOB_RESULTS}. Symlinks and .git are not walked."
    )

    def run(
        self,
        pattern: Annotated[str, Field(description="The glob, relative to path, e.g. '**/*.py'.")],
        path: Annotated[str, Field(description="The directory to search, relative to the root.")] = ".",
    ) -> ToolOutput:
        """Files beneath `path` whose path (relative to `path`) matches `pattern`."""
        pattern = checked_pattern(pattern)
        rx = glob_regex(pattern)
        # Without '**' a pattern cannot match deeper than its own number of '/'.
        depth = None if "**" in pattern else pattern.count("/")
        found: list[str] = []
        truncated = False
        with _Tree(self.sandbox.fd, path) as tree:
            if tree.file_fd is not None:
                raise ToolError(f"{path!r} is a file; Glob searches a directory (use Read for a file)")
            for entry in tree.files(depth):
                if rx.match(entry.rel):
                    if len(found) == MAX_GLOB_RESULTS:
                        truncated = True
                        break
                    found.append(entry.shown)
        text = "\n".join(found) if found else f"(no files match {pattern!r} under {path!r})"
        if truncated:
            text += f"\n\n(the first {MAX_GLOB_RESULTS} matches; narrow the pattern or the path for the rest)"
        meta: JsonObject = {
            "path": path,
            "pattern": pattern,
            "count": len(found),
            "bytes": len(text.encode()),
            "truncated": truncated,
        }
        return output(text, meta)


class GrepTool(SandboxTool[Ctx]):
    """Search file contents with a regex beneath the sandbox root: `GrepTool(sandbox)`."""

    __slots__ = ()

    NAME = "Grep"
    EFFECT = ToolEffect.READ_ONLY
    ABOUT = (
        "Search file contents with a regular expression (Python 're' syntax), line by line. "
        "Returns 'path:line:text' for each matching line (with context, context lines as "
        "'path-line-text' and groups separated by '--'), up to max_results matching lines. "
        "include limits the files "
        "searched by glob ('*.py' matches by name anywhere, 'src/**/*.py' by path). path may be "
        "a directory or a file. Binary files, symlinks and .git are skipped."
    )

    def run(
        self,
        pattern: Annotated[str, Field(description="The regular expression to search for.")],
        path: Annotated[
            str, Field(description="The directory or file to search, relative to the root.")
        ] = ".",
        include: Annotated[
            str | None, Field(description="Only files matching this glob, e.g. '*.py'.")
        ] = None,
        context: Annotated[
            int, Field(ge=0, le=20, description="Lines shown before and after each match.")
        ] = 0,
        ignore_case: Annotated[bool, Field(description="Match letters in either case.")] = False,
        max_results: Annotated[
            int, Field(ge=1, le=2000, description="The most matching lines returned.")
        ] = 100,
    ) -> ToolOutput:
        """Lines matching `pattern` in the files beneath `path`."""
        try:
            rx = re.compile(pattern, re.MULTILINE | (re.IGNORECASE if ignore_case else 0))
        except re.error as exc:
            raise ToolError(f"pattern {pattern!r} is not a valid regular expression: {exc}") from None
        if include:
            include = checked_pattern(include)
        include_rx = glob_regex(include) if include else None
        by_name = include is not None and "/" not in include
        out: list[str] = []
        matches = files = 0
        skipped: dict[str, int] = {}
        truncated = False
        with _Tree(self.sandbox.fd, path) as tree:
            for entry in tree.files(None):
                if include_rx is not None and not include_rx.match(entry.name if by_name else entry.rel):
                    continue
                text = _text(entry, skipped)
                if text is None:
                    continue
                found, more, lines = _grep_lines(rx, text, entry.shown, context, max_results - matches)
                if not found:
                    continue
                files += 1
                if out and context:
                    out.append("--")  # as grep: groups of context are set apart
                out.extend(lines)
                matches += found
                if more or matches == max_results:
                    truncated = True  # stopped at the cap: there may be more
                    break
        text = "\n".join(out) if out else f"(no lines match {pattern!r} under {path!r})"
        notes = [f"{n} {why}" for why, n in sorted(skipped.items())]
        if truncated:
            notes.insert(0, f"stopped at max_results={max_results} matching lines")
        if notes:
            text += "\n\n(" + "; ".join(notes) + ")"
        meta: dict[str, Any] = {
            "path": path,
            "pattern": pattern,
            "matches": matches,
            "files": files,
            "bytes": len(text.encode()),
            "truncated": truncated,
        }
        return output(text, meta)


def _grep_lines(
    rx: re.Pattern[str], text: str, shown: str, context: int, cap: int
) -> tuple[int, bool, list[str]]:
    """How many lines matched (at most `cap`), whether more did, and those lines as grep -n prints them.

    `context` lines around each match are printed too.
    """
    hits = _hit_lines(rx, text, cap + 1)
    more = len(hits) > cap
    hits = hits[:cap]
    if not context or not hits:  # a hit's own line is all there is to print: no need to split
        return len(hits), more, [f"{shown}:{i + 1}:{_cut(text[start:end])}" for i, start, end in hits]
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    is_hit = {i for i, _, _ in hits}
    out: list[str] = []
    last = -1  # the last line printed
    for i, _, _ in hits:
        lo, hi = max(0, i - context, last + 1), min(len(lines) - 1, i + context)
        if out and lo > last + 1:
            out.append("--")
        for j in range(lo, hi + 1):
            sep = ":" if j in is_hit else "-"
            out.append(f"{shown}{sep}{j + 1}{sep}{_cut(lines[j])}")
        last = max(last, hi)
    return len(hits), more, out


def _hit_lines(rx: re.Pattern[str], text: str, cap: int) -> list[tuple[int, int, int]]:
    """The first `cap` lines of `text` in which `rx` matches: (index, start, end) of each.

    A line matches when `rx.search(text, start, end)` does: the line's end is the text's end.
    To find the next line worth trying, a search over the whole text jumps there, passing the
    lines between at the regex engine's speed instead of with a call each. That search sees
    past each line's end, so it is not used for patterns that look there (`_PAST_LINE_END`),
    nor after a match of it ran on past its line without one inside it: such a pattern can
    match across lines, and each jump may scan far ahead only to be dropped.
    """
    hits: list[tuple[int, int, int]] = []
    line = pos = 0  # the line that starts at `pos`
    jump = not any(construct in rx.pattern for construct in _PAST_LINE_END)
    while pos < len(text) and len(hits) < cap:
        m = None
        if jump:
            m = rx.search(text, pos)
            if m is None:
                break
            start = text.rfind("\n", 0, m.start()) + 1
            line += text.count("\n", pos, start)
            pos = start
            if pos == len(text):
                break  # past the newline that ends the text: no line is there
        end = text.find("\n", pos)
        end = len(text) if end == -1 else end
        if rx.search(text, pos, end):
            hits.append((line, pos, end))
        elif m is not None and m.end() > end:
            jump = False
        line += 1
        pos = end + 1
    return hits


def _cut(line: str) -> str:
    line = line.removesuffix("\r")
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " [line cut]"


def _text(entry: Entry, skipped: dict[str, int]) -> str | None:
    """The file's text, or None (counted in `skipped`) when Grep does not search it."""
    try:
        fd = entry.open()
    except OSError:
        return None  # gone, or swapped for a symlink since the listing
    try:
        st = os.fstat(fd)
        why = None
        if not stat.S_ISREG(st.st_mode):
            why = "non-regular files skipped"
        elif st.st_nlink > 1:
            why = "hard-linked files skipped"
        elif st.st_size > MAX_GREP_FILE_BYTES:
            why = f"files over {MAX_GREP_FILE_BYTES // (1024 * 1024)} MiB skipped"
        if why is None:
            # What fstat counted and a byte more (asking for the cap would allocate 32 MiB per
            # file); a file that grew meanwhile, or does not count its size, is read on to the cap.
            data = _read(fd, st.st_size + 1)
            if len(data) > st.st_size:
                data += _read(fd, MAX_GREP_FILE_BYTES + 1 - len(data))
            if data.find(b"\0", 0, BINARY_SNIFF) == -1:
                return data.decode("utf-8", errors="replace").removeprefix(BOM)
            why = "binary files skipped"
    finally:
        os.close(fd)
    skipped[why] = skipped.get(why, 0) + 1
    return None


def _read(fd: int, size: int) -> bytes:
    """Up to `size` bytes from `fd`, read until `size` or the end.

    Raw reads: a file object's setup would cost three more system calls a file.
    """
    parts: list[bytes] = []
    while size > 0 and (part := os.read(fd, size)):
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


class _Tree:
    """What a tool searches beneath `path`: a directory (walked) or a single file."""

    def __init__(self, root_fd: int, path: str) -> None:
        self._prefix = "/".join(p for p in path.split("/") if p not in ("", "."))
        self._fd = open_dir(root_fd, ".") if not self._prefix else open_read(root_fd, path, os.O_RDONLY)
        self.file_fd = None if stat.S_ISDIR(os.fstat(self._fd).st_mode) else self._fd
        """The descriptor when `path` is a file, not a directory."""

    def files(self, depth: int | None) -> Iterator[Entry]:
        """The regular files to search, sorted by path."""
        if self.file_fd is None:
            yield from walk_files(self._fd, self._prefix, max_depth=depth)
        else:
            name = self._prefix.rsplit("/", 1)[-1]
            fd = self.file_fd
            yield Entry(name, name, self._prefix, lambda: os.dup(fd))

    def __enter__(self) -> _Tree:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self._fd)


__all__ = ["GlobTool", "GrepTool"]
