"""Commands against the OS sandbox's launcher and the confined child it keeps ready.

The launcher forks the next command's child ahead of time (`os_sandbox._launcher._spare`), so a
command runs while a process that will run the *next* command already exists. Each attack
here aims at that design: the launcher and the spare (signals, `/proc/<pid>/mem`, limits,
priority), descriptors a spare could hand down, limits a command could raise back, several
commands at once crossing stdio or working directories, strays that outlive `close()`, and
requests larger than one socket message. Each escape has a twin on `HostBackend` (or against
a process of the test's own) where the same command really does what it aims at.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import resource
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
from exec_helpers import (
    LEAVES_ITS_SESSION,
    expect_eventually,
    gone,
    kill_the_launcher_under_a_stray,
    launched,
    namespace_pid,
    nobodys_directory,
    on_host,
    once_started_before_the_timeout,
    own_pid_namespace,
    run_as_nobody,
    running,
    sh,
    stray_in_its_session,
    written,
)
from kernel_faults import run_refusing

from helikon.tools import (
    ExecOutput,
    ExecRequest,
    HostBackend,
    OsSandboxBackend,
    OsSandboxError,
    ResourceLimits,
    Sandbox,
)

pytestmark = pytest.mark.integration

UNSHARE = 272


def _children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _wait_for(path: Path, within: float = 10.0) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().endswith("\n"):
            return path.read_text()
        time.sleep(0.02)
    raise AssertionError(f"{path} was not written within {within} s")


def _build(sandbox: Sandbox, **limits: int) -> tuple[OsSandboxBackend, int]:
    """A backend and its launcher's pid (the one child of this process it added)."""
    builder = OsSandboxBackend.builder(sandbox).timeout(20)
    if limits:
        builder = builder.rlimits(ResourceLimits(**limits))
    backend, launcher = launched(builder.build)
    assert launcher is not None
    return backend, launcher


def _kept(launcher: int) -> list[int]:
    """The launcher's children but the pid namespace's init (pid 1 there): its commands and the spare."""
    return [pid for pid in _children(launcher) if namespace_pid(pid) != 1]


# Every way a process of the same user may act on another by pid; each prints ok or the error.
_ATTACK = """
import ctypes, os, resource, signal, sys, time
while not os.path.exists("targets"):
    time.sleep(0.02)
for pid in (int(p) for p in open("targets").read().split()):
    def attempt(name, act):
        try:
            act()
            print(name, pid, "ok", flush=True)
        except OSError as error:
            print(name, pid, type(error).__name__, flush=True)
    attempt("stop", lambda: os.kill(pid, signal.SIGSTOP))
    attempt("cont", lambda: os.kill(pid, signal.SIGCONT))
    attempt("mem", lambda: os.close(os.open(f"/proc/{pid}/mem", os.O_RDWR)))
    attempt("fd", lambda: os.listdir(f"/proc/{pid}/fd"))
    attempt("prlimit", lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (3, 3)))
    attempt("nice", lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
    attempt("affinity", lambda: os.sched_setaffinity(pid, {0}))
    attempt("pidfd", lambda: signal.pidfd_send_signal(os.pidfd_open(pid), signal.SIGKILL))
    attempt("kill", lambda: os.kill(pid, signal.SIGKILL))
"""
_ACTIONS = ("stop", "cont", "mem", "fd", "prlimit", "nice", "affinity", "pidfd", "kill")


def _outcomes(out: ExecOutput) -> dict[tuple[str, int], str]:
    found: dict[tuple[str, int], str] = {}
    for line in out.stdout.splitlines():
        name, pid, result = line.split()
        found[name, int(pid)] = result
    return found


def test_a_command_cannot_act_on_the_launcher_or_the_child_kept_for_the_next_command(
    sandbox: Sandbox,
) -> None:
    backend, launcher = _build(sandbox)
    root = sandbox.root

    async def attack() -> ExecOutput:
        run = asyncio.ensure_future(
            backend.run(
                ExecRequest(
                    ("python3", "-c", f"import os; open('me', 'w').write(f'{{os.getpid()}}\\n')\n{_ATTACK}")
                )
            )
        )
        me = int(await asyncio.to_thread(_wait_for, root / "me"))  # its pid as it sees it
        # The spare forked for the next command while this one runs: the launcher's other child.
        spare = 0

        def spare_made() -> bool:
            nonlocal spare
            others = [pid for pid in _kept(launcher) if namespace_pid(pid) != me]
            spare = others[0] if others else 0
            return spare != 0

        await asyncio.to_thread(
            expect_eventually, spare_made, "the launcher making a spare child while the command ran"
        )
        # Each named as the command sees it. In a pid namespace of the sandbox's own, the
        # launcher has no pid there (nothing inside can name it) and its init, the keeper, is 1.
        outside = [1] if own_pid_namespace(launcher) else [launcher]
        (root / "targets").write_text(f"{' '.join(map(str, outside))} {namespace_pid(spare)}\n")
        out = await run
        assert running(spare) and running(launcher) and all(running(pid) for pid in _children(launcher))
        return out

    with backend:
        out = asyncio.run(attack())
        outcomes = _outcomes(out)
        assert len(outcomes) == 2 * len(_ACTIONS), (out.stdout, out.stderr)
        assert all(result != "ok" for result in outcomes.values()), outcomes
        # The next command runs in that spare, still confined and whole.
        after = asyncio.run(backend.run(sh("echo ran; cat /etc/shadow")))
        assert after.stdout == "ran\n" and "Permission denied" in after.stderr


def test_the_twin_the_same_attack_reaches_a_process_of_this_user_from_the_host(sandbox: Sandbox) -> None:
    target = subprocess.Popen(["sleep", "60"])
    try:
        (sandbox.root / "targets").write_text(f"{target.pid}\n")
        out = asyncio.run(HostBackend.builder(sandbox).build().run(ExecRequest(("python3", "-c", _ATTACK))))
        outcomes = _outcomes(out)
        assert outcomes[("stop", target.pid)] == "ok" and outcomes[("kill", target.pid)] == "ok", out
        assert outcomes[("prlimit", target.pid)] == "ok" and outcomes[("nice", target.pid)] == "ok"
        assert target.wait(timeout=5) == -signal.SIGKILL
    finally:
        target.kill()
        target.wait()


_OPEN_FDS = (
    "import os\n"
    "def is_open(fd):\n"
    "    try:\n"
    "        os.fstat(fd)\n"
    "    except OSError:\n"
    "        return False\n"
    "    return True\n"
    "print([fd for fd in range(3, os.sysconf('SC_OPEN_MAX')) if is_open(fd)])\n"
)


def test_a_command_handed_a_spare_made_while_others_ran_holds_no_descriptor_but_its_stdio(
    sandbox: Sandbox,
) -> None:
    async def probes(backend: OsSandboxBackend) -> list[str]:
        # Spares forked while other commands (their reply sockets, pipes) were running: once
        # the three hold, each spare after them was.
        hold = "echo > held.$$; until [ -e done ]; do sleep 0.02; done"
        holders = [asyncio.ensure_future(backend.run(sh(hold, stdin=b"x"))) for _ in range(3)]
        await asyncio.to_thread(
            expect_eventually, lambda: len(list(sandbox.root.glob("held.*"))) == 3, "the holders"
        )
        found = [
            (await backend.run(ExecRequest(("python3", "-c", _OPEN_FDS), stdin=b"in"))).stdout
            for _ in range(3)
        ]
        (sandbox.root / "done").touch()
        await asyncio.gather(*holders)
        return found

    with OsSandboxBackend.builder(sandbox).timeout(20).build() as backend:
        assert asyncio.run(probes(backend)) == ["[]\n"] * 3


def test_the_twin_the_descriptor_probe_finds_one_left_open(sandbox: Sandbox) -> None:
    out = asyncio.run(
        HostBackend.builder(sandbox).build().run(sh(f"exec 7</dev/null; python3 -c {shlex.quote(_OPEN_FDS)}"))
    )
    assert out.stdout == "[7]\n", out.stderr


_RAISE_FSIZE = (
    "import resource\n"
    "try:\n"
    "    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"
    "    print('raised')\n"
    "except (ValueError, OSError) as error:\n"
    "    print('refused', type(error).__name__)\n"
    "print(resource.getrlimit(resource.RLIMIT_FSIZE))\n"
)


def test_a_command_cannot_raise_its_limits_back_and_they_bind_its_first_write(sandbox: Sandbox) -> None:
    backend, _ = _build(sandbox, file_size_bytes=4096)
    with backend:
        raised = asyncio.run(backend.run(ExecRequest(("python3", "-c", _RAISE_FSIZE))))
        assert raised.stdout.splitlines() == ["refused ValueError", "(4096, 4096)"], raised.stderr
        # dd exec'd directly (no shell that could set the limit itself): its first write is cut.
        asyncio.run(backend.run(ExecRequest(("dd", "if=/dev/zero", "of=big", "bs=8192", "count=1"))))
        assert (sandbox.root / "big").stat().st_size <= 4096


def test_the_twin_without_the_limit_the_same_command_raises_it_and_writes_it_all(sandbox: Sandbox) -> None:
    if resource.getrlimit(resource.RLIMIT_FSIZE)[1] != resource.RLIM_INFINITY:
        pytest.fail("this test needs an unlimited RLIMIT_FSIZE hard limit in the test process")
    host = HostBackend.builder(sandbox).rlimits(ResourceLimits()).build()  # none, not the default ones
    raised = asyncio.run(host.run(ExecRequest(("python3", "-c", _RAISE_FSIZE))))
    assert raised.stdout.splitlines()[0] == "raised"
    asyncio.run(host.run(ExecRequest(("dd", "if=/dev/zero", "of=big", "bs=8192", "count=1"))))
    assert (sandbox.root / "big").stat().st_size == 8192


@pytest.mark.parametrize("kind", ["host", "os-sandbox"])
def test_commands_at_once_keep_their_own_stdin_env_cwd_and_timeout(sandbox: Sandbox, kind: str) -> None:
    for name in ("a", "b", "c", "d", "e"):
        (sandbox.root / name).mkdir()
    line = 'sleep 0.$((RANDOM % 5)); read -r got; echo "$got $TAG $(basename "$PWD")"'

    async def at_once(backend: HostBackend | OsSandboxBackend, limit: float) -> list[ExecOutput]:
        runs = [
            backend.run(sh(line, stdin=f"in-{name}\n".encode(), env={"TAG": f"tag-{name}"}, cwd=name))
            for name in ("a", "b", "c", "d", "e")
        ]
        stuck = backend.run(sh("echo started; sleep 30", timeout=limit))
        return await asyncio.gather(stuck, *runs)

    def echoed(outs: list[ExecOutput]) -> bool:
        return outs[0].stdout != ""

    if kind == "host":
        host = HostBackend.builder(sandbox).timeout(20).build()
        outs = asyncio.run(once_started_before_the_timeout(lambda limit: at_once(host, limit), echoed))
    else:
        with OsSandboxBackend.builder(sandbox).timeout(20).build() as backend:
            outs = asyncio.run(once_started_before_the_timeout(lambda limit: at_once(backend, limit), echoed))
    stuck, *done = outs
    assert stuck.timed_out and stuck.stdout == "started\n"
    assert [out.stdout for out in done] == [f"in-{n} tag-{n} {n}\n" for n in ("a", "b", "c", "d", "e")]
    assert all(out.exit_code == 0 and not out.timed_out for out in done)


def _fds_of_this_process() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("kind", ["host", "os-sandbox"])
def test_no_descriptor_leaks_from_commands_that_end_badly(sandbox: Sandbox, kind: str) -> None:
    endings = [
        sh("sleep 30", timeout=1),  # timed out
        sh("yes", max_output_bytes=10_000),  # past the cap
        sh("exec >&-; sleep 0.2; echo late >&2"),  # stdout closed early, still running
        sh("sleep 30 & echo bg"),  # a background child holding the pipes
        sh("head -c 3000000 /dev/zero | tr '\\0' x"),  # large output, under the cap
    ]

    async def run_all(backend: HostBackend | OsSandboxBackend) -> list[ExecOutput]:
        return [await backend.run(request) for request in endings * 2]

    if kind == "host":
        backend: HostBackend | OsSandboxBackend = (
            HostBackend.builder(sandbox).timeout(20).max_output_bytes(4_000_000).build()
        )
    else:
        backend = OsSandboxBackend.builder(sandbox).timeout(20).max_output_bytes(4_000_000).build()
    asyncio.run(run_all(backend))  # a first round: what the loop and the launcher open once
    before = _fds_of_this_process()
    outs = asyncio.run(run_all(backend))
    assert _fds_of_this_process() == before
    if isinstance(backend, OsSandboxBackend):
        backend.close()
    timed_out, capped, late, background, large = outs[:5]
    assert timed_out.timed_out
    assert capped.stdout_truncated and len(capped.stdout) <= 10_000
    assert late.stderr == "late\n" and late.exit_code == 0
    assert background.stdout == "bg\n" and background.exit_code == 0
    assert len(large.stdout) == 3_000_000


# A stray that leaves the command's session and keeps forking a new self (its pid changes
# faster than a scan of /proc can follow), counting its generations into `beat`; it ends
# itself after 20 s whatever happens, or at once if `beat` cannot be written. Every
# generation holds the FIFO `alive` open for writing, so its reader sees end of file once
# none is left. Its command ends (or sleeps argv[1] seconds) once the stray beats, so the
# stray has left the session for sure.
_FORK_CHAIN = """
import os, sys, time
end = time.monotonic() + 20
if os.fork() == 0:
    os.setsid()
    alive = os.open("alive", os.O_WRONLY)
    beats = 0
    while time.monotonic() < end:
        if os.fork():
            os._exit(0)
        beats += 1
        if beats % 20 == 0:
            with open("beat.tmp", "w") as f:
                f.write(f"{beats}\\n")
            os.replace("beat.tmp", "beat")
    os._exit(0)
while not os.path.exists("beat"):
    time.sleep(0.01)
time.sleep(float(sys.argv[1]))
"""


class _Chain:
    """The fork chain's FIFO, read here: whether a generation is left, and how many beat."""

    def __init__(self, root: Path) -> None:
        self.root = root
        os.mkfifo(root / "alive")
        self.reader = os.open(root / "alive", os.O_RDONLY | os.O_NONBLOCK)

    def request(self, hold: float) -> ExecRequest:
        return ExecRequest(("python3", "-c", _FORK_CHAIN, str(hold)))

    def beats(self) -> int:
        text = (self.root / "beat").read_text() if (self.root / "beat").is_file() else ""
        return int(text) if text.endswith("\n") else 0

    def alive(self) -> bool:
        """Whether a generation still holds the FIFO (ask once it beats: before, no one opened it)."""
        try:
            return os.read(self.reader, 1) != b""  # nothing is ever written; b"" is end of file
        except BlockingIOError:
            return True

    def stop(self) -> None:
        """A directory where `beat` was: the chain's next write fails and it ends."""
        if self.beats():
            expect_eventually(self._blocked, "a directory where the chain writes its beat")
            expect_eventually(lambda: not self.alive(), "the fork chain ending")
        os.close(self.reader)

    def _blocked(self) -> bool:
        """Put a directory where `beat` is; False if the chain wrote it again in between (try again)."""
        beat = self.root / "beat"
        if beat.is_dir():
            return True
        with contextlib.suppress(FileNotFoundError):
            beat.unlink()
        try:
            beat.mkdir()
        except FileExistsError:
            return False
        return True


def test_a_stray_that_keeps_changing_its_pid_is_killed_once_the_command_is_done(sandbox: Sandbox) -> None:
    chain = _Chain(sandbox.root)
    with OsSandboxBackend.builder(sandbox).timeout(20).build() as backend:
        try:
            out = asyncio.run(backend.run(chain.request(0)))
            assert out.exit_code == 0 and chain.beats() > 0, out.stderr
            expect_eventually(lambda: not chain.alive(), "the killing of the fork chain")
        finally:
            chain.stop()


def test_the_twin_on_the_host_the_same_stray_outlives_its_command(sandbox: Sandbox) -> None:
    chain = _Chain(sandbox.root)
    out = asyncio.run(HostBackend.builder(sandbox).build().run(chain.request(0)))
    try:
        assert out.exit_code == 0 and chain.alive()
        after = chain.beats()
        expect_eventually(lambda: chain.beats() > after, "the chain beating after its command returned")
    finally:
        chain.stop()


def test_closing_the_backend_kills_the_strays_of_a_command_still_running(sandbox: Sandbox) -> None:
    backend, launcher = _build(sandbox)
    root = sandbox.root

    async def close_while_running() -> int:
        run = asyncio.ensure_future(backend.run(sh(LEAVES_ITS_SESSION + "exec sleep 60")))
        stray = await asyncio.to_thread(stray_in_its_session, root / "stray.pid", launcher)
        backend.close()
        await asyncio.gather(run, return_exceptions=True)
        return stray

    stray = asyncio.run(close_while_running())
    try:
        assert gone(stray), "a setsid stray of a running command outlived close()"
    finally:
        if running(stray):
            os.kill(stray, signal.SIGKILL)


def test_closing_the_backend_kills_a_stray_that_keeps_changing_its_pid(sandbox: Sandbox) -> None:
    backend = OsSandboxBackend.builder(sandbox).timeout(20).build()
    chain = _Chain(sandbox.root)

    async def close_while_running() -> None:
        run = asyncio.ensure_future(backend.run(chain.request(60)))
        await asyncio.to_thread(expect_eventually, lambda: chain.beats() > 0, "the chain beating")
        backend.close()
        await asyncio.gather(run, return_exceptions=True)

    try:
        asyncio.run(close_while_running())
        expect_eventually(lambda: not chain.alive(), "the killing of the fork chain")
    finally:
        chain.stop()


_LARGE = ("bash", "-c", 'echo "${#1} ${#2} ${#3}"', "sizes", "a" * 100_000, "b" * 100_000, "c" * 100_000)


def test_the_twin_a_command_line_of_300_kb_runs_on_the_host(sandbox: Sandbox) -> None:
    out = asyncio.run(HostBackend.builder(sandbox).build().run(ExecRequest(_LARGE)))
    assert out.stdout == "100000 100000 100000\n"


def test_command_lines_of_300_kb_and_1_5_mb_run_in_the_os_sandbox_too(sandbox: Sandbox) -> None:
    # Once a request over ~208 KiB (one SOCK_SEQPACKET message) failed with EMSGSIZE, told as
    # "the launcher is gone". Now only exec's own limit (ARG_MAX, 128 KiB an argument) binds.
    many = ("bash", "-c", 'echo "$#"', "count", *(["x" * 100_000] * 15))
    with OsSandboxBackend.builder(sandbox).timeout(20).build() as backend:
        assert asyncio.run(backend.run(ExecRequest(_LARGE))).stdout == "100000 100000 100000\n"
        assert asyncio.run(backend.run(ExecRequest(many))).stdout == "15\n"
        assert asyncio.run(backend.run(ExecRequest(("echo", "ok")))).stdout == "ok\n"


def _pids_cgroup(tmp_name: str) -> Path:
    """A fresh pids cgroup (v1 or v2) this root test may limit, or a failure that says what is missing."""
    for parent in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        if (parent / "cgroup.procs").exists() and (
            parent.name == "pids" or "pids" in (parent / "cgroup.subtree_control").read_text()
        ):
            made = parent / tmp_name
            made.mkdir()
            return made
    pytest.fail("this test needs root and a pids cgroup controller (/sys/fs/cgroup/pids or cgroup v2)")


def test_a_command_that_uses_up_the_pids_does_not_take_the_launcher_down(sandbox: Sandbox) -> None:
    backend, launcher = _build(sandbox)
    group = _pids_cgroup(f"helikon-test-{os.getpid()}")
    hog = sh(LEAVES_ITS_SESSION + "for i in $(seq 40); do sleep 60 & done 2>/dev/null; sleep 60")

    async def attack() -> tuple[ExecOutput | BaseException, ExecOutput | BaseException]:
        nonlocal stray
        (group / "pids.max").write_text("12")
        (group / "cgroup.procs").write_text(f"{launcher}\n")
        await backend.run(ExecRequest(("true",)))  # the next spare is forked inside the group
        hogging = asyncio.ensure_future(backend.run(hog))
        stray = await asyncio.to_thread(stray_in_its_session, sandbox.root / "stray.pid", launcher)
        await asyncio.to_thread(_filled, group)
        starved = await asyncio.gather(backend.run(ExecRequest(("echo", "starved"))), return_exceptions=True)
        hogging.cancel()
        await asyncio.gather(hogging, return_exceptions=True)
        (group / "pids.max").write_text("max")
        return starved[0], await backend.run(ExecRequest(("echo", "after")))

    stray = 0
    try:
        with backend:
            starved, after = asyncio.run(attack())
            assert "max" in (group / "pids.events").read_text()  # the forks really were refused
            # The command that found no process to run in fails, or runs; either is told whole.
            assert isinstance(starved, OsSandboxError | ExecOutput)
            if isinstance(starved, ExecOutput):
                assert starved.stdout == "starved\n" and starved.exit_code == 0
            assert running(launcher), "the launcher died of a command's fork bomb"
            assert isinstance(after, ExecOutput) and after.stdout == "after\n"
        assert gone(stray)
    finally:
        if stray and running(stray):
            os.kill(stray, signal.SIGKILL)
        for pid in (group / "cgroup.procs").read_text().split():
            os.kill(int(pid), signal.SIGKILL)
        _gone_from(group)


def _filled(group: Path) -> None:
    deadline = time.monotonic() + 10
    while int((group / "pids.current").read_text()) < int((group / "pids.max").read_text()):
        assert time.monotonic() < deadline, "the command did not use up the group's pids"
        time.sleep(0.02)


def _gone_from(group: Path) -> None:
    deadline = time.monotonic() + 5
    while (group / "cgroup.procs").read_text().split() and time.monotonic() < deadline:
        time.sleep(0.05)
    group.rmdir()


def test_the_next_command_gets_nothing_of_the_last_ones_env_cwd_or_limits(sandbox: Sandbox) -> None:
    (sandbox.root / "sub").mkdir()
    line = 'echo "${TAG-unset} $(basename "$PWD") $(ulimit -S -n)"; ulimit -S -n 64'
    with OsSandboxBackend.builder(sandbox).timeout(20).build() as backend:
        first = asyncio.run(backend.run(sh(line, env={"TAG": "first"}, cwd="sub")))
        second = asyncio.run(backend.run(sh(line)))
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert first.stdout == f"first sub {soft}\n"
    assert second.stdout == f"unset {sandbox.root.name} {soft}\n"


def test_two_threads_with_their_own_loops_share_one_backend(sandbox: Sandbox) -> None:
    with OsSandboxBackend.builder(sandbox).timeout(20).build() as backend:

        def many(tag: str) -> list[str]:
            async def runs() -> list[str]:
                outs = await asyncio.gather(
                    *(backend.run(sh(f"echo {tag}-{i}; cat", stdin=f"{tag}{i}".encode())) for i in range(8))
                )
                return [out.stdout for out in outs]

            return asyncio.run(runs())

        async def both() -> list[list[str]]:
            return list(await asyncio.gather(asyncio.to_thread(many, "a"), asyncio.to_thread(many, "b")))

        found = asyncio.run(both())
    assert found == [[f"{tag}-{i}\n{tag}{i}" for i in range(8)] for tag in ("a", "b")]


def test_a_killed_keeper_takes_its_namespace_and_the_launcher_with_it(sandbox: Sandbox) -> None:
    # No process can be forked into a pid namespace whose init is gone: the launcher stops,
    # and the backend says so, instead of failing every command with "cannot fork".
    backend, launcher = _build(sandbox)
    assert own_pid_namespace(launcher), "this test needs a pid namespace for the sandbox"
    (keeper,) = (pid for pid in _children(launcher) if namespace_pid(pid) == 1)

    async def kill_the_keeper_under_a_command() -> ExecOutput:
        run = asyncio.ensure_future(backend.run(sh("echo $$ > me; exec sleep 60")))
        command = on_host(int(await asyncio.to_thread(written, sandbox.root / "me")), launcher)
        assert command
        os.kill(keeper, signal.SIGKILL)
        return await run

    with backend:
        out = asyncio.run(kill_the_keeper_under_a_command())
        assert out.signal == signal.SIGKILL, out
        assert gone(launcher)
        with pytest.raises(OsSandboxError, match="launcher"):
            asyncio.run(backend.run(sh("true")))


class Survived(Exception):
    """A stray outlived the launcher it was started under."""


def _stray_must_be_gone(stray: int) -> None:
    try:
        if not gone(stray):
            raise Survived(f"the setsid stray {stray} outlived its launcher")
    finally:
        if running(stray):
            os.kill(stray, signal.SIGKILL)


def test_a_setsid_stray_dies_even_when_the_launcher_is_killed_from_outside(tmp_path: Path) -> None:
    # The commands run in a pid namespace whose init dies with the launcher, and the kernel
    # then kills every process in it (an OOM kill or a `kill -9` runs no wind-down).
    stray, own_pids = kill_the_launcher_under_a_stray(tmp_path)
    assert own_pids, "this test needs a pid namespace for the sandbox: root, or user namespaces for all"
    _stray_must_be_gone(stray)


_KILL_THE_LAUNCHER = """
import sys
from pathlib import Path
from exec_helpers import kill_the_launcher_under_a_stray
stray, own_pids = kill_the_launcher_under_a_stray(Path(sys.argv[1]))
print(stray, int(own_pids))
"""


@pytest.mark.skipif(os.getuid() != 0, reason="switching to an unprivileged user needs root")
def test_the_same_for_an_unprivileged_user_through_a_user_namespace() -> None:
    with nobodys_directory() as root:
        done = run_as_nobody(_KILL_THE_LAUNCHER, str(root))
    assert done.returncode == 0, done.stderr
    stray, own_pids = (int(word) for word in done.stdout.split())
    assert own_pids, "no pid namespace for nobody: are unprivileged user namespaces disabled?"
    _stray_must_be_gone(stray)


@pytest.mark.xfail(
    strict=True,
    raises=Survived,
    reason="without a pid namespace (a kernel or container that refuses one), a launcher killed "
    "from outside runs no wind-down: PR_SET_PDEATHSIG kills the commands, but a setsid stray of "
    "one goes on under init (confined)",
)
def test_without_a_pid_namespace_a_setsid_stray_outlives_a_launcher_killed_from_outside(
    tmp_path: Path,
) -> None:
    out = run_refusing(_KILL_THE_LAUNCHER, UNSHARE, errno.EPERM, str(tmp_path))
    stray, own_pids = (int(word) for word in out.split())
    assert not own_pids
    _stray_must_be_gone(stray)


def test_a_run_cancelled_before_it_learns_the_pid_still_kills_its_command(sandbox: Sandbox) -> None:
    # The request is sent, and the launcher starts the command, before the run reads the pid:
    # a cancel in between once left the command running, past its timeout, until close().
    backend, launcher = _build(sandbox)

    async def cancel_at_once() -> None:
        run = asyncio.ensure_future(backend.run(sh("exec sleep 30")))
        await asyncio.sleep(0)  # the run sent its request and waits for the pid
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)

    with backend:
        asyncio.run(cancel_at_once())
        # The launcher reads requests in order: once this one ran, it had started the first.
        assert asyncio.run(backend.run(sh("echo next"))).stdout == "next\n"
        # Nothing of it is left: the launcher's one child (but the keeper) is the next spare.
        expect_eventually(lambda: len(_kept(launcher)) == 1, "the cancelled command's end")


_STRAYS = """
import asyncio, sys
from pathlib import Path
from exec_helpers import LEAVES_ITS_SESSION, gone, launched, own_pid_namespace, sh, stray_in_its_session
from helikon.tools import OsSandboxBackend, Sandbox

async def main(root: Path) -> None:
    with Sandbox.open(root) as sandbox:
        backend, launcher = launched(OsSandboxBackend.builder(sandbox).timeout(60).build)
        assert launcher is not None
        print("own pid namespace:", own_pid_namespace(launcher))
        waits = sh(LEAVES_ITS_SESSION + "until [ -e go ]; do sleep 0.02; done")
        run = asyncio.ensure_future(backend.run(waits))
        stray = await asyncio.to_thread(stray_in_its_session, root / "stray.pid", launcher)
        (root / "go").touch()
        await run
        print("done:", gone(stray))
        (root / "stray.pid").unlink()
        run = asyncio.ensure_future(backend.run(sh(LEAVES_ITS_SESSION + "exec sleep 60")))
        stray = await asyncio.to_thread(stray_in_its_session, root / "stray.pid", launcher)
        backend.close()
        await asyncio.gather(run, return_exceptions=True)
        print("closed:", gone(stray))

asyncio.run(main(Path(sys.argv[1])))
"""
"""Strays of a finished command die, and so do those of a running one at close()."""


def test_without_a_pid_namespace_the_launcher_still_kills_the_strays_it_outlives(tmp_path: Path) -> None:
    # The tier a kernel or container without pid namespaces gets: the launcher is the
    # subreaper, and kills strays once no command runs, and at close().
    out = run_refusing(_STRAYS, UNSHARE, errno.EPERM, str(tmp_path))
    assert out.splitlines() == ["own pid namespace: False", "done: True", "closed: True"]


@pytest.mark.skipif(os.getuid() != 0, reason="switching to an unprivileged user needs root")
def test_an_unprivileged_users_sandbox_kills_its_strays_in_its_own_namespaces() -> None:
    # The keeper's kill(-1) and close() in a user namespace, without a capability.
    with nobodys_directory() as root:
        done = run_as_nobody(_STRAYS, str(root))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["own pid namespace: True", "done: True", "closed: True"]
