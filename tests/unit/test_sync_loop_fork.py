"""`run_sync`'s thread loop survives a child forked from another thread (a `preexec_fn` spawn).

Such a child runs Python, which drops the other threads' storage, the loop's holder with
it. Closing the loop there unregistered the loop's wake-up socket from the epoll instance
the child shares with its parent, and the parent's next wait for another thread (a worker
thread's result, a database worker's answer) never woke up. Run in a fresh interpreter,
bounded, since the failure is a hang.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import asyncio, subprocess, threading
    from helikon.core._internal.sync import run_coroutine

    async def from_a_thread():
        return await asyncio.to_thread(lambda: "woke")

    print(run_coroutine(from_a_thread()))
    spawn = threading.Thread(target=lambda: subprocess.run(["true"], preexec_fn=lambda: None, check=True))
    spawn.start()
    spawn.join()
    print(run_coroutine(from_a_thread()))
    """
)


def test_a_fork_from_another_thread_leaves_the_thread_loop_working() -> None:
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["woke", "woke"]
