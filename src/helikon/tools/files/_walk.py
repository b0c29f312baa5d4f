"""Walking a directory tree beneath the sandbox root through directory descriptors.

Each directory is opened by its single name relative to its parent's descriptor with
`O_NOFOLLOW | O_DIRECTORY`, so the walk never enters a symlink (the kernel refuses it, no check
to race), and never reaches above where it started. `.git` directories are skipped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

SKIP_DIRS = frozenset({".git"})
MAX_DEPTH = 64
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class Entry:
    """A regular file found by the walk."""

    name: str
    rel: str
    """Its path relative to where the walk started."""
    shown: str
    """Its path relative to the sandbox root."""
    open: Callable[[], int]
    """Open it for reading (never through a symlink); valid while the walk is at this entry."""


def files(dir_fd: int, prefix: str, *, max_depth: int | None = None) -> Iterator[Entry]:
    """Every regular file beneath `dir_fd`, sorted by path; `prefix` is `dir_fd`'s path from the root.

    `max_depth` is how many directories down to go (None: `MAX_DEPTH`). Symlinks are not listed.
    """
    yield from _files(dir_fd, "", prefix, MAX_DEPTH if max_depth is None else min(max_depth, MAX_DEPTH))


def _files(dir_fd: int, rel: str, prefix: str, depth: int) -> Iterator[Entry]:
    with os.scandir(dir_fd) as it:
        entries = sorted(
            (e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False)) for e in it
        )
    for name, is_dir, is_file in entries:
        sub_rel = f"{rel}/{name}" if rel else name
        shown = f"{prefix}/{sub_rel}" if prefix else sub_rel
        if is_file:
            yield Entry(name, sub_rel, shown, partial(os.open, name, _READ, dir_fd=dir_fd))
        elif is_dir and name not in SKIP_DIRS and depth > 0:
            try:
                sub = os.open(
                    name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd
                )
            except OSError:
                continue  # gone, swapped for a symlink, or unreadable: not walked
            try:
                yield from _files(sub, sub_rel, prefix, depth - 1)
            finally:
                os.close(sub)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regex over `/`-separated paths: `*` and `?` stay in one name, `**/` spans directories."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


__all__ = ["MAX_DEPTH", "SKIP_DIRS", "Entry", "files", "glob_regex"]
