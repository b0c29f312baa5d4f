"""The escape corpus of the confined file tools: every way out of the root is denied.

Each attempt runs twice: with `openat2` (the kernel's `RESOLVE_BENEATH`) and with the
descriptor-relative `O_NOFOLLOW` walk that stands in where `openat2` is missing (forced here by
making the syscall report `ENOSYS`). Each asserts `ToolError.Denied` AND that nothing outside the
root was read (the sentinel's text never appears) or written (the outside tree is unchanged).
`test_the_same_paths_escape_without_the_sandbox` is the unconfined control: plain `open()` of the
same paths does reach the sentinel, so the corpus tests something.
"""

from __future__ import annotations

import ctypes
import errno
import glob
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from file_tool_helpers import call, text

from helikon import ToolError
from helikon.core.exceptions import Denied
from helikon.tools import EditTool, GlobTool, GrepTool, ReadTool, Sandbox, WriteTool
from helikon.tools.files import _confine

SENTINEL = "SENTINEL-OUTSIDE-THE-ROOT"


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which resolution the tools use: the kernel's openat2, or the walk an older kernel gets."""
    if request.param == "walk":

        def no_openat2(dirfd: int, path: bytes, flags: int, resolve: int) -> int:
            raise OSError(errno.ENOSYS, "openat2 is missing (forced by the test)")

        monkeypatch.setattr(_confine, "sys_openat2", no_openat2)
    return request.param


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text(SENTINEL + "\n")
    return out


@pytest.fixture
def root(tmp_path: Path, outside: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir()
    (r / "inside.txt").write_text("inside\n")
    (r / "sub").mkdir()
    return r


@pytest.fixture
def sandbox(root: Path) -> Iterator[Sandbox]:
    with Sandbox.open(root) as s:
        yield s


def outcome(tool: Any, args: dict[str, Any]) -> tuple[str, str]:
    """`("denied", reason)`, `("error", message)` or `("ok", what the model reads)`."""
    try:
        return "ok", text(call(tool, args))
    except Denied as exc:
        return "denied", exc.reason
    except ToolError as exc:
        return "error", str(exc)


def tree(path: Path) -> dict[str, bytes | None]:
    """Every name beneath `path` with its content (None for directories and links)."""
    out: dict[str, bytes | None] = {}
    for p in sorted(path.rglob("*")):
        out[str(p.relative_to(path))] = p.read_bytes() if p.is_file() and not p.is_symlink() else None
    return out


# Each case plants what it needs in the root and returns the path the model gives.
def _dotdot(root: Path, outside: Path) -> str:
    return "../outside/secret.txt"


def _dotdot_deep(root: Path, outside: Path) -> str:
    return "sub/../../outside/secret.txt"


def _absolute(root: Path, outside: Path) -> str:
    return str(outside / "secret.txt")


def _symlink_absolute(root: Path, outside: Path) -> str:
    (root / "link").symlink_to(outside / "secret.txt")
    return "link"


def _symlink_relative(root: Path, outside: Path) -> str:
    (root / "sub" / "rel").symlink_to("../../outside/secret.txt")
    return "sub/rel"


def _symlinked_directory(root: Path, outside: Path) -> str:
    (root / "dir").symlink_to(outside)
    return "dir/secret.txt"


def _symlink_chain(root: Path, outside: Path) -> str:
    (root / "hop2").symlink_to(outside / "secret.txt")
    (root / "hop1").symlink_to("hop2")
    return "hop1"


def _hard_link(root: Path, outside: Path) -> str:
    os.link(outside / "secret.txt", root / "hard.txt")
    return "hard.txt"


ESCAPES: dict[str, Callable[[Path, Path], str]] = {
    "dotdot": _dotdot,
    "dotdot-deep": _dotdot_deep,
    "absolute": _absolute,
    "symlink-absolute": _symlink_absolute,
    "symlink-relative": _symlink_relative,
    "symlinked-directory": _symlinked_directory,
    "symlink-chain": _symlink_chain,
    "hard-link": _hard_link,
}

MALFORMED = {
    "nul-byte": "inside.txt\0../outside/secret.txt",
    "over-long-path": "sub/" * 1100 + "x",
    "over-long-name": "x" * 300,
}


@pytest.mark.parametrize("case", sorted(ESCAPES))
def test_the_same_paths_escape_without_the_sandbox(case: str, root: Path, outside: Path) -> None:
    path = ESCAPES[case](root, outside)
    assert SENTINEL in (root / path).read_text()  # plain open(): the escape is real


@pytest.mark.parametrize("case", sorted(ESCAPES))
def test_read_denies_every_escape(
    case: str, resolver: str, root: Path, outside: Path, sandbox: Sandbox
) -> None:
    path = ESCAPES[case](root, outside)
    for tool, args in (
        (ReadTool(sandbox), {"file_path": path}),
        (GrepTool(sandbox), {"pattern": "SENTINEL", "path": path}),
        (GlobTool(sandbox), {"pattern": "*", "path": path.rsplit("/", 1)[0] if "/" in path else path}),
    ):
        kind, said = outcome(tool, args)
        assert SENTINEL not in said, (case, tool.name)
        # Read is denied; Glob and Grep are denied too, or (given the parent directory, or a
        # hard-linked file Grep skips) succeed without reaching the outside file.
        if tool.name == "Read":
            assert kind == "denied", said


@pytest.mark.parametrize("case", sorted(ESCAPES))
def test_write_and_edit_deny_every_escape(
    case: str, resolver: str, root: Path, outside: Path, sandbox: Sandbox
) -> None:
    path = ESCAPES[case](root, outside)
    before = tree(outside)
    with pytest.raises(Denied):
        call(WriteTool(sandbox), {"file_path": path, "content": "overwritten"})
    with pytest.raises(Denied):
        call(EditTool(sandbox), {"file_path": path, "old_string": "SENTINEL", "new_string": "changed"})
    assert tree(outside) == before


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_paths_are_denied_with_the_rule(case: str, resolver: str, sandbox: Sandbox) -> None:
    for tool, args in (
        (ReadTool(sandbox), {"file_path": MALFORMED[case]}),
        (WriteTool(sandbox), {"file_path": MALFORMED[case], "content": "x"}),
    ):
        with pytest.raises(Denied, match=r"NUL byte|bytes long|too long"):
            call(tool, args)


GLOB_ESCAPES = [
    "../outside/*",
    "sub/../../outside/*",
    "**/../../outside/*",
    "{outside}/*",
    "{root}/../outside/*",
]


@pytest.mark.parametrize("pattern", GLOB_ESCAPES)
def test_glob_patterns_that_leave_the_root_are_denied(
    pattern: str, resolver: str, root: Path, outside: Path, sandbox: Sandbox
) -> None:
    pattern = pattern.format(root=root, outside=outside)
    # The control: a plain glob of the same pattern from the root does reach the outside file.
    assert any(SENTINEL in p.read_text() for p in map(Path, glob.glob(str(root / pattern))))
    for tool, args in (
        (GlobTool(sandbox), {"pattern": pattern}),
        (GrepTool(sandbox), {"pattern": "SENTINEL", "include": pattern}),
    ):
        kind, said = outcome(tool, args)
        assert kind == "denied" and SENTINEL not in said, (tool.name, said)
        assert "is absolute" in said or "has a '..' part" in said


def test_writes_through_a_symlink_to_a_missing_outside_file_are_denied(
    resolver: str, root: Path, outside: Path, sandbox: Sandbox
) -> None:
    (root / "dangling").symlink_to(outside / "new.txt")
    (root / "newdir").symlink_to(outside)
    for path in ("dangling", "newdir/created.txt", "made/../../outside/new.txt"):
        with pytest.raises(Denied):
            call(WriteTool(sandbox), {"file_path": path, "content": "x"})
    assert sorted(os.listdir(outside)) == ["secret.txt"]


def test_proc_magic_links_are_denied(resolver: str, outside: Path) -> None:
    # A sandbox rooted at /proc/self has magic links beneath it: fd/N and root are not paths.
    with open(outside / "secret.txt") as held, Sandbox.open("/proc/self") as proc:
        fd_link = f"fd/{held.fileno()}"
        assert SENTINEL in Path("/proc/self", fd_link).read_text()  # the unconfined control
        for path in (fd_link, "root" + str(outside / "secret.txt"), "cwd/x"):
            with pytest.raises(Denied, match="symbolic link"):
                call(ReadTool(proc), {"file_path": path})


def test_special_files_are_refused_without_blocking(resolver: str, root: Path, sandbox: Sandbox) -> None:
    os.mkfifo(root / "fifo")  # opened without O_NONBLOCK, this would wait for a writer forever
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "sock"))
        for path in ("fifo", "sock"):
            with pytest.raises(Denied, match="not a regular file"):
                call(ReadTool(sandbox), {"file_path": path})
            with pytest.raises(Denied):
                call(WriteTool(sandbox), {"file_path": path, "content": "x"})
    assert (root / "fifo").is_fifo()
    with Sandbox.open("/dev") as dev, pytest.raises(Denied, match="not a regular file"):
        call(ReadTool(dev), {"file_path": "null"})


_libc = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (renameat2 RENAME_EXCHANGE): each name always exists."""
    if _libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


class Swapper:
    """A thread swapping pairs of names until stopped."""

    def __init__(self, *pairs: tuple[Path, Path]) -> None:
        self._pairs = pairs
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        while not self._stop.is_set():
            for a, b in self._pairs:
                exchange(a, b)

    def __enter__(self) -> Swapper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def test_a_symlink_swapped_in_during_reads_never_leaks_the_outside(
    resolver: str, root: Path, outside: Path, sandbox: Sandbox
) -> None:
    (root / "real").write_text("inside\n")
    (root / "realdir").mkdir()
    (root / "realdir" / "secret.txt").write_text("inside\n")
    (root / "evil").symlink_to(outside / "secret.txt")
    (root / "evildir").symlink_to(outside)
    read = ReadTool(sandbox)

    def attempt(path: str) -> str:
        try:
            return text(read.run(file_path=path))
        except ToolError:  # denied, or (mid-swap) not a directory
            return ""

    paths = ("real", "realdir/secret.txt")
    with Swapper((root / "real", root / "evil"), (root / "realdir", root / "evildir")):
        # At least 1500 rounds, and on until a read got through (how the two threads
        # interleave depends on the machine's load: a loaded one may need more).
        seen: list[str] = []
        for round_ in range(100_000):
            seen += [attempt(p) for p in paths]
            if round_ >= 1500 and any("inside" in text for text in seen):
                break
        # The control: the same race with plain open() does reach the outside.
        leaked = False
        for _ in range(100_000):
            leaked = any(SENTINEL in (root / p).read_text() for p in paths)
            if leaked:
                break
    assert not any(SENTINEL in text for text in seen)
    assert any("inside" in text for text in seen)
    assert leaked


def test_a_directory_swapped_for_a_symlink_during_writes_never_writes_outside(
    resolver: str, root: Path, outside: Path, sandbox: Sandbox
) -> None:
    (root / "realdir").mkdir()
    (root / "evildir").symlink_to(outside)
    before = tree(outside)
    write = WriteTool(sandbox)
    written = 0
    with Swapper((root / "realdir", root / "evildir")):
        # At least 800 attempts, and on until one got through (how the two threads
        # interleave depends on the machine's load: a loaded one may need more).
        for i in range(100_000):
            if i >= 800 and written:
                break
            try:
                write.run(file_path=f"realdir/w{i}.txt", content="x")
                written += 1
            except ToolError:  # denied, or (mid-swap) not a directory
                pass
        # The control: plain open() does write outside.
        for i in range(100_000):
            (root / "realdir" / f"c{i}.txt").write_text("x")
            if len(os.listdir(outside)) > 1:
                break
    after = tree(outside)
    assert written
    assert {k: v for k, v in after.items() if not k.startswith("c")} == before
    assert len(after) > len(before)
