"""`Sandbox`: a directory capability, the one root the ready-made tools may touch.

A sandbox holds an open descriptor of its root directory (`O_PATH`), taken once when it is
opened: the file tools resolve every path beneath that descriptor with the kernel's help
(`openat2` with `RESOLVE_BENEATH`, see `helikon.tools`), never by comparing path strings,
and the execution backends run commands with their working directory pinned to it.
Renaming or replacing the root's path afterwards does not move the sandbox: the descriptor
still names the directory that was opened.

Example:
    ```python
    import tempfile

    from helikon.tools import Sandbox

    with tempfile.TemporaryDirectory() as tmp, Sandbox.open(tmp) as sandbox:
        assert sandbox.root.is_dir()
    ```
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import Self

from helikon.core.exceptions import UserError


class Sandbox:
    """An open root directory; build it with `Sandbox.open(root)`, close it with `close()` or `with`."""

    __slots__ = ("_fd", "root")

    def __init__(self, root: Path, fd: int) -> None:
        self.root = root
        """The root's real path (symlinks resolved) when it was opened."""
        self._fd = fd

    @classmethod
    def open(cls, root: str | os.PathLike[str]) -> Self:
        """Open `root` (an existing directory) as a sandbox.

        Raises:
            UserError: If `root` does not exist or is not a directory.
        """
        path = Path(root).expanduser()
        try:
            fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise UserError(f"Sandbox.open({str(root)!r}): no such directory; create it first") from None
        except NotADirectoryError:
            raise UserError(
                f"Sandbox.open({str(root)!r}): not a directory; give the directory to confine to"
            ) from None
        # The real path of what was opened, read from the descriptor (not from `path` again).
        real = Path(os.readlink(f"/proc/self/fd/{fd}"))
        return cls(real, fd)

    @property
    def fd(self) -> int:
        """The root's `O_PATH` descriptor, to resolve paths beneath.

        Raises:
            UserError: If the sandbox was closed.
        """
        if self._fd < 0:
            raise UserError(f"{self!r} is closed: open a new Sandbox")
        return self._fd

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""
        return self._fd < 0

    def close(self) -> None:
        """Close the root's descriptor (again: nothing)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)

    def __repr__(self) -> str:
        state = " (closed)" if self.closed else ""
        return f"Sandbox({str(self.root)!r}){state}"


__all__ = ["Sandbox"]
