"""Run ids that name their writer, so that a runner can tell a crashed run's open turn from a live one's.

A run id is `<random>.<machine>.<pid>.<process>`: 16 random hex digits, a hash of the
machine (its host name and boot), the writing process's pid and a random tag of that
process. Another runner on the same machine can then see that the writer of an open turn
is gone (no process has that pid, or the pid is its own but the tag is not) and repair the
turn at once; of a writer elsewhere, or of a run id in another form, it cannot tell, and
goes by how long the turn has been silent.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import socket
import uuid

from ..exceptions import UserError

_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")


def new_run_id(key: str | None = None) -> str:
    """A fresh run id naming this process as its writer; `key` (`[A-Za-z0-9_-]`) replaces its random part.

    A host that names its runs (the agent server does) passes its own id as `key` and
    finds the run's turn in a session's log by it, after a restart too.
    """
    if key is not None and not _KEY.fullmatch(key):
        raise UserError(f"a run key is 1 to 64 letters, digits, '_' or '-', not {key!r}")
    return f"{key or uuid.uuid4().hex[:16]}.{_machine()}.{os.getpid()}.{_process()}"


def run_key(run_id: str) -> str:
    """The first part of a run id: its random part, or the key it was made with."""
    return run_id.split(".", 1)[0]


def writer_gone(run_id: str) -> bool:
    """Whether the process that wrote `run_id` has certainly exited (False: alive, or unknown)."""
    parts = run_id.split(".")
    if len(parts) != 4 or parts[1] != _machine() or not parts[2].isdigit() or os.name != "posix":
        return False  # another machine, another form, or no safe way to ask (os.kill on Windows kills)
    pid = int(parts[2])
    if pid == os.getpid():
        return parts[3] != _process()  # this pid, an earlier process's: that one is gone
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, OSError):
        return False  # it exists (another user's), or the pid cannot be asked about
    return False


@functools.cache
def _machine() -> str:
    """This machine, as a short hash of its host name and (on Linux) its boot: pids restart at boot."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as file:
            boot = file.read().strip()
    except OSError:
        boot = ""
    return hashlib.sha256(f"{socket.gethostname()}\n{boot}".encode()).hexdigest()[:8]


@functools.cache
def _process() -> str:
    """A random tag of this process (a forked child shares it, but not its pid)."""
    return uuid.uuid4().hex[:8]
