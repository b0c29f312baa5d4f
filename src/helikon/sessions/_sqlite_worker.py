"""The worker thread of a `SqliteDatabase`: one connection, jobs in order, results back to the loop.

Also the connections themselves: the worker's, and the loop thread's own for inline commits.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any

Job = tuple["asyncio.Future[Any] | None", Callable[..., Any], tuple[Any, ...], "str | None"]
"""A future (None: nobody waits), the function, its arguments, and the session it concerns (None: all)."""


def resolve(fut: asyncio.Future[Any], result: Any) -> None:
    if not fut.done():
        fut.set_result(result)


def reject(fut: asyncio.Future[Any], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


def stop_worker(cur: sqlite3.Cursor, inline: sqlite3.Connection | None = None) -> None:
    if inline is not None:
        inline.close()
    cur.connection.close()


def wal_checkpoint(cur: sqlite3.Cursor, progress: Progress, holding: bool) -> None:
    """Copy the WAL back into the database (inline commits never do), without waiting for anyone.

    Best effort (a later one finishes what readers kept in use). `holding`: inline writers
    wait for this one, so when it copied everything the next commit starts the WAL over.
    """
    with contextlib.suppress(sqlite3.Error):
        busy, frames, copied = cur.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        progress.wal_frames = 0 if holding and not busy and frames == copied else frames


class Progress:
    """How many awaited jobs the worker has finished: the loop compares it with what it queued.

    Per session, and for the jobs that concern no one session (checkpoints, migrations): an
    inline call waits only for earlier work on its own session, not for other sessions' writers.
    """

    __slots__ = ("by_session", "finished", "wal_frames")

    def __init__(self) -> None:
        self.finished = 0  # jobs that concern no one session
        self.by_session: dict[str, int] = {}
        self.wal_frames = 0  # the WAL's length at the last background checkpoint


def serve(jobs: SimpleQueue[Job], cur: sqlite3.Cursor, progress: Progress) -> None:
    """Run jobs in order until `stop_worker`; results go back through `call_soon_threadsafe`.

    Every job gets the same cursor: one connection, used by this thread only.
    """
    get = jobs.get
    while True:
        fut, fn, args, key = get()
        if fut is None:  # background work (a checkpoint, the finalizer's stop): nobody waits
            with contextlib.suppress(sqlite3.Error):
                fn(cur, *args)
        else:
            result: Any = None
            callback = None
            if not fut.cancelled() or fn is stop_worker:  # a job cancelled while queued is skipped
                try:
                    result = fn(cur, *args)
                    callback = resolve
                except BaseException as exc:
                    result = exc
                    callback = reject
            # The job's effects are done: the loop may work inline again. Counted before the caller
            # wakes, or its next call may find the count behind and go to the worker too, and so on.
            if key is None:
                progress.finished += 1
            else:
                progress.by_session[key] = progress.by_session.get(key, 0) + 1
            if callback is not None:
                try:  # noqa: SIM105 - the hot path: cheaper than contextlib.suppress
                    fut.get_loop().call_soon_threadsafe(callback, fut, result)
                except RuntimeError:  # the caller's loop is closed: nobody waits any more
                    pass
        if fn is stop_worker:
            return


def connect(path: str, busy_timeout: float, synchronous: str, journal_mode: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
    try:
        (current,) = conn.execute("PRAGMA journal_mode").fetchone()
        if str(current).upper() != journal_mode:
            # Switching mode needs an exclusive lock, and SQLite may report a first-open race
            # between processes as "locked" without waiting: retry until the busy timeout.
            deadline = time.monotonic() + busy_timeout
            while True:
                try:
                    (current,) = conn.execute(f"PRAGMA journal_mode={journal_mode}").fetchone()
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or time.monotonic() >= deadline:
                        raise
                    time.sleep(0.005)
            if str(current).upper() != journal_mode:
                raise sqlite3.OperationalError(f"the file system refused journal_mode={journal_mode}")
        conn.execute(f"PRAGMA synchronous={synchronous}")
    except BaseException:
        conn.close()
        raise
    return conn


def connect_inline(
    path: str, synchronous: str, journal_mode: str, busy_timeout: float
) -> sqlite3.Connection | None:
    """The loop thread's own connection, when committing on it cannot block.

    Only in WAL mode with `synchronous` NORMAL or OFF, where a commit appends pages to the
    WAL file and returns without an fsync. It never waits for a lock (busy timeout 0: a
    locked database sends the job to the worker) and never checkpoints (the worker does).
    """
    if journal_mode != "WAL" or synchronous not in ("NORMAL", "OFF"):
        return None
    # Set up while waiting like any connection (another process may be switching the file to
    # WAL right now), then never wait again.
    conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA synchronous={synchronous}")
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute("PRAGMA busy_timeout=0")
    except BaseException:
        conn.close()
        raise
    return conn


Opened = tuple[sqlite3.Connection | None, "Progress"]


def start_worker(
    settings: tuple[str, float, str, str],
    inline: bool,
    ready: asyncio.Future[Opened],
    jobs: SimpleQueue[Job],
) -> None:
    conn = None
    try:
        conn = connect(*settings)
        second = connect_inline(settings[0], settings[2], settings[3], settings[1]) if inline else None
    except BaseException as exc:
        if conn is not None:
            conn.close()
        with contextlib.suppress(RuntimeError):  # the caller's loop is already closed
            ready.get_loop().call_soon_threadsafe(reject, ready, exc)
        return
    progress = Progress()
    with contextlib.suppress(RuntimeError):
        ready.get_loop().call_soon_threadsafe(resolve, ready, (second, progress))
    serve(jobs, conn.cursor(), progress)  # if nobody got the database, `open` queued a `stop_worker`


__all__ = [
    "Job",
    "Opened",
    "Progress",
    "connect",
    "connect_inline",
    "reject",
    "resolve",
    "serve",
    "start_worker",
    "stop_worker",
    "wal_checkpoint",
]
