"""The local backends on real processes: cwd, env scrubbing, the group kill, the output cap, rlimits, cancel.

`HostBackend` and `OsSandboxBackend` share these behaviours (the `local` fixture runs each
test on both). Where a test proves a limit holds, a twin shows the same command escapes
without it. Containment itself is tested in test_os_sandbox.py.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from exec_helpers import (
    expect_eventually,
    gone,
    launched,
    on_host,
    once_started_before_the_timeout,
    running,
    sh,
    written,
)

from helikon.core.cancel import CancellationToken
from helikon.core.exceptions import UserError
from helikon.tools import (
    ExecOutput,
    ExecRequest,
    ExecutionBackend,
    HostBackend,
    HostBackendBuilder,
    Isolation,
    OsSandboxBackend,
    OsSandboxBackendBuilder,
    ResourceLimits,
    Sandbox,
    SandboxGuarantees,
)

pytestmark = pytest.mark.integration


Local = Callable[[Sandbox], HostBackendBuilder | OsSandboxBackendBuilder]


@pytest.fixture(params=["host", "os-sandbox"])
def local(request: pytest.FixtureRequest) -> Local:
    """A builder for each local backend; both take the same options."""
    if request.param == "host":
        return HostBackend.builder
    return OsSandboxBackend.builder


async def test_guarantees_say_no_containment(sandbox: Sandbox) -> None:
    backend = HostBackend.builder(sandbox).build()
    assert isinstance(backend, ExecutionBackend)
    assert backend.guarantees() == SandboxGuarantees(
        Isolation.NONE, Isolation.NONE, Isolation.NONE, "host (no containment)"
    )


async def test_the_working_directory_is_the_sandbox_root(local: Local, sandbox: Sandbox) -> None:
    (sandbox.root / "sub").mkdir()
    backend = local(sandbox).build()
    assert (await backend.run(sh("pwd"))).stdout == f"{sandbox.root}\n"
    assert (await backend.run(sh("pwd", cwd="sub"))).stdout == f"{sandbox.root / 'sub'}\n"


async def test_the_environment_is_scrubbed_to_the_allowlist(
    local: Local, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HELIKON_TEST_SECRET", "s3cr3t-token")
    scrubbed = await local(sandbox).build().run(sh("env"))
    assert "s3cr3t-token" not in scrubbed.stdout
    assert "PATH=" in scrubbed.stdout
    # The twin: allowlisted, the same secret is visible, so the check above can fail.
    allowed = local(sandbox).env_allowlist(["PATH", "HELIKON_TEST_SECRET"]).build()
    assert "HELIKON_TEST_SECRET=s3cr3t-token" in (await allowed.run(sh("env"))).stdout


async def test_env_set_and_the_request_env_reach_the_command(local: Local, sandbox: Sandbox) -> None:
    backend = local(sandbox).env_set({"MODE": "ci", "LEVEL": "1"}).build()
    out = await backend.run(sh('echo "$MODE $LEVEL"', env={"LEVEL": "2"}))
    assert out.stdout == "ci 2\n"


async def test_stdin_is_fed_and_otherwise_empty(local: Local, sandbox: Sandbox) -> None:
    backend = local(sandbox).build()
    assert (await backend.run(ExecRequest(("cat",), stdin=b"hello"))).stdout == "hello"
    assert (await backend.run(ExecRequest(("cat",)))).stdout == ""


async def test_stdin_larger_than_a_pipe_is_fed_whole_or_refused_by_the_command(
    local: Local, sandbox: Sandbox
) -> None:
    data = os.urandom(3 << 20)  # far past a pipe's 64 KiB: written as the command reads
    backend = local(sandbox).max_output_bytes(8 << 20).build()
    summed = await backend.run(sh("sha256sum", stdin=data))
    assert summed.stdout.split()[0] == hashlib.sha256(data).hexdigest()
    # A command that reads none of it exits as it would; the unread rest is dropped (EPIPE).
    ignored = await backend.run(sh("exit 4", stdin=data))
    assert (ignored.exit_code, ignored.timed_out) == (4, False)


async def test_no_descriptor_is_left_open_by_a_command(local: Local, sandbox: Sandbox) -> None:
    backend = local(sandbox).build()
    await backend.run(sh("true", stdin=b"x"))  # the first call's one-time descriptors, if any
    before = set(os.listdir("/proc/self/fd"))
    for command in ("true", "echo hi; echo err >&2", "exit 3", "sleep 5 & exit 0"):
        await backend.run(sh(command, stdin=b"x"))
        await backend.run(sh(command))
    assert set(os.listdir("/proc/self/fd")) == before


async def test_exit_codes_and_stderr_come_back(local: Local, sandbox: Sandbox) -> None:
    out = await local(sandbox).build().run(sh("echo out; echo err >&2; exit 3"))
    assert (out.exit_code, out.stdout, out.stderr, out.signal, out.timed_out) == (
        3,
        "out\n",
        "err\n",
        None,
        False,
    )
    assert out.duration > 0


@pytest.mark.parametrize("limits", [ResourceLimits(), ResourceLimits(cpu_seconds=5)])
async def test_a_program_that_cannot_start_is_a_result_not_an_exception(
    local: Local, sandbox: Sandbox, limits: ResourceLimits
) -> None:
    backend = local(sandbox).rlimits(limits).build()
    missing = await backend.run(ExecRequest(("no-such-program-here",)))
    assert missing.exit_code == 127 and "no-such-program-here" in missing.stderr
    (sandbox.root / "plain.txt").write_text("not a program")
    refused = await backend.run(ExecRequest(("./plain.txt",)))
    assert refused.exit_code == 126


async def test_a_timeout_kills_the_whole_process_group(local: Local, sandbox: Sandbox) -> None:
    named = sandbox.root / "grandchild"
    built: list[tuple[ExecutionBackend, int | None]] = []  # kept: a backend dropped stops its launcher

    async def run(limit: float) -> ExecOutput:
        named.unlink(missing_ok=True)
        built.append(launched(local(sandbox).timeout(limit).build))
        return await built[-1][0].run(sh("(sleep 60; touch survived) & echo $! > grandchild; sleep 60"))

    out = await once_started_before_the_timeout(
        run, lambda out: named.exists() and named.read_text().endswith("\n")
    )
    assert out.timed_out and out.exit_code is None and out.signal == signal.SIGKILL
    assert gone(on_host(int(named.read_text()), built[-1][1]))


async def test_without_pidfds_a_thread_waits_for_the_exit(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What runs where os.pidfd_open does not exist (macOS, Linux before 5.3).
    monkeypatch.delattr(os, "pidfd_open")
    backend = HostBackend.builder(sandbox).timeout(30).build()
    out = await backend.run(sh("echo hi; exit 3"))
    assert (out.exit_code, out.stdout) == (3, "hi\n")
    killed = await backend.run(sh("sleep 30", timeout=0.5))
    assert killed.timed_out and killed.signal == signal.SIGKILL


def test_the_twin_a_plain_kill_of_the_child_leaves_the_grandchild_running(tmp_path: Path) -> None:
    child = subprocess.Popen(
        ["bash", "-c", "sleep 30 & echo $! > grandchild; sleep 30"], cwd=tmp_path, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 5
        while not (tmp_path / "grandchild").exists() or not (tmp_path / "grandchild").read_text():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        grandchild = int((tmp_path / "grandchild").read_text())
        child.kill()
        child.wait()
        assert not gone(grandchild, within=0.3)  # what the group kill above prevents
    finally:
        os.killpg(child.pid, signal.SIGKILL)


async def test_what_a_command_leaves_running_is_killed_when_it_exits(local: Local, sandbox: Sandbox) -> None:
    backend, launcher = launched(local(sandbox).timeout(10).build)
    out = await backend.run(sh("sleep 30 & echo $!"))
    assert out.exit_code == 0 and not out.timed_out  # returned without waiting for the sleep
    assert gone(on_host(int(out.stdout), launcher))


# A background process that moves to a process group of its own (`setpgid`, as bash's job
# control does) and still holds the output; it starts a child that leaves the session too.
# Both say who they are once they have moved, and the command ends once the test has read
# them (`go`): the backend may kill them the moment it ends, before a pid could be looked up.
_MOVES_TO_ITS_OWN_GROUP = (
    "python3 -c 'import os, time\n"
    "os.setpgid(0, 0)\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    '    open("left.pid", "w").write(f"{os.getpid()}\\n")\n'
    "else:\n"
    '    open("moved.pid", "w").write(f"{os.getpid()}\\n")\n'
    "time.sleep(60)' & "
    "until [ -s moved.pid ] && [ -s left.pid ] && [ -e go ]; do sleep 0.02; done"
)


async def test_what_moves_to_another_group_of_the_session_is_killed_when_the_command_exits(
    local: Local, sandbox: Sandbox
) -> None:
    backend, launcher = launched(local(sandbox).timeout(30).build)
    run = asyncio.ensure_future(backend.run(sh(_MOVES_TO_ITS_OWN_GROUP)))
    found: dict[str, int] = {}
    for name in ("moved", "left"):
        found[name] = on_host(int(await asyncio.to_thread(written, sandbox.root / f"{name}.pid")), launcher)
    (sandbox.root / "go").touch()
    out = await run
    try:
        assert out.exit_code == 0 and not out.timed_out, out.stderr
        assert found["moved"] and gone(found["moved"]), "a process in another group outlived the call"
        assert found["left"] and gone(found["left"]), "its child in a session of its own outlived the call"
    finally:
        for pid in found.values():
            if running(pid):
                os.kill(pid, signal.SIGKILL)


# The same move, with the output let go (a daemon's `> /dev/null 2>&1`); it answers a `ping`.
_MOVES_AND_LETS_GO = (
    "python3 -c 'import os, time\n"
    "os.setpgid(0, 0)\n"
    'open("moved.pid", "w").write(f"{os.getpid()}\\n")\n'
    'while not os.path.exists("ping"):\n'
    "    time.sleep(0.02)\n"
    'open("pong", "w").write("pong\\n")\n'
    "time.sleep(60)' > /dev/null 2>&1 & "
    "until [ -s moved.pid ]; do sleep 0.02; done"
)


async def test_what_moves_to_another_group_of_the_session_is_killed_at_the_timeout(
    local: Local, sandbox: Sandbox
) -> None:
    backend, launcher = launched(local(sandbox).timeout(30).build)
    named = sandbox.root / "moved.pid"

    async def run(limit: float) -> tuple[ExecOutput, int]:
        named.unlink(missing_ok=True)
        running_now = asyncio.ensure_future(backend.run(sh(_MOVES_AND_LETS_GO + "; sleep 60", timeout=limit)))
        moved = 0
        while not running_now.done() and not moved:  # found before the timeout kills it, or not at all
            if named.exists() and named.read_text().endswith("\n"):
                moved = on_host(int(named.read_text()), launcher)
            await asyncio.sleep(0.02)
        return await running_now, moved

    out, moved = await once_started_before_the_timeout(run, lambda done: done[1] != 0)
    try:
        assert out.timed_out
        assert moved and gone(moved), "a process in another group of its session outlived the timeout"
    finally:
        if moved and running(moved):
            os.kill(moved, signal.SIGKILL)


async def test_on_the_host_what_moves_to_another_group_and_lets_go_of_the_output_outlives_the_call(
    sandbox: Sandbox,
) -> None:
    # The limit docs/tools-bash.md states: nothing shows it is left, and a scan of every
    # process for each command would cost more than the command (the OS sandbox kills it).
    out = await HostBackend.builder(sandbox).build().run(sh(_MOVES_AND_LETS_GO))
    moved = int((sandbox.root / "moved.pid").read_text())
    try:
        assert out.exit_code == 0
        (sandbox.root / "ping").touch()
        await asyncio.to_thread(written, sandbox.root / "pong")  # it still runs, and answers
    finally:
        os.kill(moved, signal.SIGKILL)


async def test_output_past_the_cap_is_cut_and_the_command_stopped(local: Local, sandbox: Sandbox) -> None:
    backend = local(sandbox).max_output_bytes(1000).build()
    out = await backend.run(sh("yes"))
    assert len(out.stdout) == 1000 and out.stdout_truncated and out.truncated
    assert out.signal == signal.SIGKILL
    err = await backend.run(sh("yes >&2"))
    assert len(err.stderr) == 1000 and err.stderr_truncated and not err.stdout_truncated
    small = await backend.run(sh("echo fine", max_output_bytes=5))
    assert small.stdout == "fine\n" and not small.truncated


_SPIN = "while :; do :; done"


async def test_the_cpu_limit_kills_a_busy_loop_with_sigxcpu(local: Local, sandbox: Sandbox) -> None:
    backend = local(sandbox).timeout(60).rlimits(ResourceLimits(cpu_seconds=1)).build()
    out = await backend.run(sh(_SPIN))
    assert out.signal == signal.SIGXCPU and not out.timed_out
    # The twin: without the limit the same loop runs until the wall-clock timeout.
    free = local(sandbox).timeout(1.5).rlimits(ResourceLimits()).build()
    assert (await free.run(sh(_SPIN))).timed_out


_BIG_WRITE = (
    "import signal, errno\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "try:\n"
    "    open('big', 'wb').write(b'x' * 200_000)\n"
    "    print('wrote')\n"
    "except OSError as exc:\n"
    "    print(errno.errorcode[exc.errno])\n"
)


async def test_the_file_size_limit_makes_a_big_write_fail_with_efbig(local: Local, sandbox: Sandbox) -> None:
    limited = local(sandbox).rlimits(ResourceLimits(file_size_bytes=64 * 1024)).build()
    out = await limited.run(ExecRequest(("python3", "-c", _BIG_WRITE)))
    assert out.stdout.strip() == errno.errorcode[errno.EFBIG]
    assert (sandbox.root / "big").stat().st_size <= 64 * 1024
    free = local(sandbox).rlimits(ResourceLimits()).build()
    assert (await free.run(ExecRequest(("python3", "-c", _BIG_WRITE)))).stdout.strip() == "wrote"


_ALLOCATE = "b = bytearray(512 * 1024 * 1024); print('allocated')"


async def test_the_address_space_limit_makes_a_big_allocation_fail(local: Local, sandbox: Sandbox) -> None:
    limited = local(sandbox).rlimits(ResourceLimits(address_space_bytes=256 << 20)).build()
    out = await limited.run(ExecRequest(("python3", "-c", _ALLOCATE)))
    assert "MemoryError" in out.stderr and out.exit_code == 1
    free = local(sandbox).rlimits(ResourceLimits()).build()
    assert (await free.run(ExecRequest(("python3", "-c", _ALLOCATE)))).stdout == "allocated\n"


async def test_the_default_limits_are_the_books(local: Local, sandbox: Sandbox) -> None:
    out = await local(sandbox).timeout(10).build().run(sh("ulimit -S -t; ulimit -f; ulimit -v"))
    assert out.stdout.split() == ["15", str((1 << 30) // 1024), "unlimited"]


async def test_a_cancelled_token_kills_the_command(local: Local, sandbox: Sandbox) -> None:
    token = CancellationToken()
    backend, launcher = launched(local(sandbox).timeout(30).build)
    bg = sandbox.root / "bg"

    async def cancel_once_started() -> int:
        await asyncio.to_thread(
            expect_eventually, lambda: bg.exists() and bg.read_text().endswith("\n"), "the start"
        )
        found = on_host(int(bg.read_text()), launcher)
        token.cancel()
        return found

    cancelling = asyncio.ensure_future(cancel_once_started())
    out = await backend.run(sh("sleep 30 & echo $! > bg; sleep 30"), cancel=token)
    assert out.cancelled and not out.timed_out and out.exit_code is None
    background = await cancelling
    assert background and gone(background)


async def test_a_cancelled_task_kills_the_command(local: Local, sandbox: Sandbox) -> None:
    backend, launcher = launched(local(sandbox).timeout(30).build)
    task = asyncio.create_task(backend.run(sh("echo $$ > pid; sleep 30")))
    pid_file = sandbox.root / "pid"

    def started() -> bool:  # a file, not an event: another process
        return pid_file.exists() and pid_file.read_text().endswith("\n")

    await asyncio.to_thread(expect_eventually, started, "the command's start")
    command = on_host(int(pid_file.read_text()), launcher)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert command and gone(command)


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: ExecRequest(()), "argv"),
        (lambda: ExecRequest("ls -la"), "argv"),  # type: ignore[arg-type]
        (lambda: ExecRequest(("ls",), cwd="/etc"), "relative"),
        (lambda: ExecRequest(("ls",), cwd="a/../.."), "'..'"),
        (lambda: ExecRequest(("ls",), env={"A=B": "x"}), "variable name"),
        (lambda: ExecRequest(("ls",), stdin="text"), "bytes"),  # type: ignore[arg-type]
        (lambda: ExecRequest(("ls",), timeout=0), "positive"),
        (lambda: ResourceLimits(cpu_seconds=0), "positive int"),
    ],
)
def test_bad_requests_say_what_to_fix(make: object, needle: str) -> None:
    with pytest.raises(UserError, match=needle):
        make()  # type: ignore[operator]


def test_bad_builder_options_say_what_to_fix(sandbox: Sandbox) -> None:
    builder = HostBackend.builder(sandbox)
    with pytest.raises(UserError, match="positive"):
        builder.timeout(-1)
    with pytest.raises(UserError, match="list of names"):
        builder.env_allowlist("PATH")
    with pytest.raises(UserError, match="positive int"):
        builder.max_output_bytes(0)
    with pytest.raises(UserError, match="ResourceLimits"):
        builder.rlimits({"cpu_seconds": 1})  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"Sandbox\.open"):
        HostBackend.builder("/tmp")  # type: ignore[arg-type]


_OVER_THE_HARD_LIMIT = """
import asyncio, resource, sys
from helikon.tools import ExecRequest, HostBackend, OsSandboxBackend, ResourceLimits, Sandbox
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))  # this process may not raise it again
kind, root, argv = sys.argv[1], sys.argv[2], tuple(sys.argv[3:])
builder = (HostBackend if kind == "host" else OsSandboxBackend).builder(Sandbox.open(root))
backend = builder.rlimits(ResourceLimits(file_size_bytes=1 << 30)).build()
out = asyncio.run(backend.run(ExecRequest(argv)))
print(out.exit_code, out.stderr.strip())
"""


@pytest.mark.parametrize("kind", ["host", "os-sandbox"])
@pytest.mark.parametrize(
    "argv", [("bash", "-c", "touch ran"), ("touch", "ran")], ids=["bash line", "program"]
)
def test_a_limit_that_cannot_be_set_fails_the_command_before_it_runs(
    tmp_path: Path, kind: str, argv: tuple[str, ...]
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _OVER_THE_HARD_LIMIT, kind, str(tmp_path), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    code, _, message = done.stdout.partition(" ")
    assert code == "126", done.stdout + done.stderr
    assert "limit" in message or "cannot confine" in message
    assert not (tmp_path / "ran").exists()
