"""What the execution-backend tests share: a command line as an `ExecRequest`, this process's children."""

from __future__ import annotations

from pathlib import Path

from helikon.tools import ExecRequest


def sh(command: str, **kwargs: object) -> ExecRequest:
    """`bash -c command` as a request; `kwargs` are `ExecRequest`'s (stdin, cwd, timeout, ...)."""
    return ExecRequest(("bash", "-c", command), **kwargs)  # type: ignore[arg-type]


def children_of_this_process() -> set[int]:
    """The pids of every thread's children; a thread that ends during the scan is skipped."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            found.update(int(pid) for pid in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError):
            # The thread exited between the listing and the read (a loop's worker thread, say);
            # its children, if it had any, were reparented to another thread we read.
            continue
    return found
