"""OsSandboxBackend against commands that try to break out, on this kernel.

Every escape in `ESCAPES` is run twice: on `HostBackend`, where it must succeed (so the
test can fail: the command really reaches what it aims at), and in the OS sandbox, where it
must not. Success is judged outside the command, from what it reached: a secret in its
output, a file changed outside the root, a connection a local server saw.
"""

from __future__ import annotations

import asyncio
import errno
import os
import re
import signal
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from exec_helpers import (
    expect_eventually,
    gone,
    launched,
    once_started_before_the_timeout,
    own_pid_namespace,
    running,
    sh,
    stray_in_its_session,
)

from helikon.core.exceptions import Denied
from helikon.tools import (
    BashTool,
    EgressPolicy,
    ExecOutput,
    ExecRequest,
    HostBackend,
    Isolation,
    OsSandboxBackend,
    OsSandboxError,
    Sandbox,
    SandboxGuarantees,
)

pytestmark = pytest.mark.integration

SECRET = "TOP-SECRET-7f3a"


_SENTINEL = b"helikon-test-sentinel"


class Listener:
    """A local server that only records who reached it (TCP, UDP or a UNIX socket file, stream or datagram).

    `settled()` says how many did, once everything sent before the call was served: it sends
    a sentinel of its own, which arrives after them (a socket's queue is first in, first
    out), and waits for it. So a check never depends on how soon the serving thread runs.
    """

    def __init__(self, family: int, kind: int, address: tuple[str, int] | str) -> None:
        self.sock = socket.socket(family, kind)
        self.sock.bind(address)
        self.family, self.kind = family, kind
        self.hits = 0
        self._sentinels = 0
        if kind == socket.SOCK_STREAM:
            self.sock.listen(16)
        self.sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data = self._receive()
            except TimeoutError:
                continue
            except OSError:
                return
            if data == _SENTINEL:
                self._sentinels += 1
            else:
                self.hits += 1

    def _receive(self) -> bytes:
        if self.kind != socket.SOCK_STREAM:
            return self.sock.recv(64)
        conn, _ = self.sock.accept()
        with conn:
            conn.settimeout(1.0)
            try:
                return conn.recv(64)  # a sentinel says so; a command connects and says nothing
            except OSError:
                return b""

    def settled(self) -> int:
        """The hits, once what was sent before this call has been served."""
        sent = self._sentinels + 1
        with socket.socket(self.family, self.kind) as client:
            if self.kind == socket.SOCK_STREAM:
                client.connect(self.sock.getsockname())
                client.sendall(_SENTINEL)
            else:
                client.sendto(_SENTINEL, self.sock.getsockname())
        expect_eventually(lambda: self._sentinels >= sent, "the listener serving its sentinel")
        return self.hits

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@dataclass
class World:
    """A sandbox root beside an `outside` directory, and servers a command should not reach."""

    root: Path
    outside: Path
    tcp: Listener
    udp: Listener
    unix: Listener
    unix_dgram: Listener
    sandbox: Sandbox
    backends: list[OsSandboxBackend] = field(default_factory=lambda: list[OsSandboxBackend]())

    def fill(self, template: str) -> str:
        return template.format(
            agent=os.getpid(),
            outside=self.outside,
            tcp=self.tcp.port,
            udp=self.udp.port,
            sock=self.outside / "sock",
            dgram=self.outside / "dgram",
        )

    def confined(self) -> OsSandboxBackend:
        backend = OsSandboxBackend.builder(self.sandbox).timeout(20).build()
        self.backends.append(backend)
        return backend


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (outside / "keep.txt").write_text("keep me")
    (outside / "movable.txt").write_text(SECRET)
    (outside / "run.sh").write_text(f"#!/bin/sh\necho {SECRET}\n")
    (outside / "run.sh").chmod(0o755)
    tcp = Listener(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0))
    udp = Listener(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0))
    unix = Listener(socket.AF_UNIX, socket.SOCK_STREAM, str(outside / "sock"))
    unix_dgram = Listener(socket.AF_UNIX, socket.SOCK_DGRAM, str(outside / "dgram"))  # like /dev/log
    with Sandbox.open(root) as sandbox:
        made = World(root, outside, tcp, udp, unix, unix_dgram, sandbox)
        yield made
        for backend in made.backends:
            backend.close()
    for server in (tcp, udp, unix, unix_dgram):
        server.close()


def py(source: str) -> str:
    return f"python3 -c {source!r}"


@dataclass(frozen=True)
class Escape:
    """A command that tries to reach outside the sandbox, and how to tell that it did."""

    name: str
    command: str
    escaped: Callable[[World, ExecOutput], bool]


def _leaked(world: World, out: ExecOutput) -> bool:
    return SECRET in out.stdout


ESCAPES = [
    Escape("read a file outside by absolute path", "cat {outside}/secret.txt", _leaked),
    Escape("read a file outside through ..", "cat ../outside/secret.txt", _leaked),
    Escape("read through a symlink made inside", "ln -s {outside}/secret.txt link && cat link", _leaked),
    Escape("read through a hard link made inside", "ln {outside}/secret.txt hard && cat hard", _leaked),
    Escape(
        "read with python's open()",
        py("print(open('{outside}/secret.txt').read())"),
        _leaked,
    ),
    Escape("run a program outside", "{outside}/run.sh", _leaked),
    Escape(
        "write a file outside",
        "echo pwned > {outside}/written",
        lambda world, out: (world.outside / "written").exists(),
    ),
    Escape(
        "write through a symlinked directory",
        "ln -s {outside} out && echo pwned > out/via-link",
        lambda world, out: (world.outside / "via-link").exists(),
    ),
    Escape(
        "move a file from outside in",
        "mv {outside}/movable.txt ./moved",
        lambda world, out: not (world.outside / "movable.txt").exists(),
    ),
    Escape(
        "truncate a file outside",
        "truncate -s 0 {outside}/keep.txt",
        lambda world, out: (world.outside / "keep.txt").read_text() == "",
    ),
    Escape(
        "delete a file outside",
        "rm -f {outside}/keep.txt",
        lambda world, out: not (world.outside / "keep.txt").exists(),
    ),
    Escape(
        "list another user's home", "ls -a /root && echo listed", lambda world, out: "listed" in out.stdout
    ),
    Escape(
        "read the agent's environment in /proc",
        "set -o pipefail; cat /proc/{agent}/environ | tr '\\0' '\\n'",
        lambda world, out: "PATH=" in out.stdout,
    ),
    Escape(
        "make a block device node inside the root",
        "mknod blockdev b 7 0 && echo made",
        lambda world, out: "made" in out.stdout,
    ),
    Escape(
        "connect over TCP to a local server",
        py("import socket; socket.create_connection(('127.0.0.1', {tcp}), timeout=5).close()"),
        lambda world, out: world.tcp.settled() > 0,
    ),
    Escape(
        "send a UDP datagram",
        py("import socket as s; s.socket(s.AF_INET, s.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {udp}))"),
        lambda world, out: world.udp.settled() > 0,
    ),
    Escape(
        "connect to a UNIX socket outside (a host daemon's)",
        py("import socket; s = socket.socket(socket.AF_UNIX); s.connect('{sock}'); s.close()"),
        lambda world, out: world.unix.settled() > 0,
    ),
    Escape(
        # socket(AF_UNIX) is refused, but an unbound datagram socket of a socketpair can
        # still send to any datagram socket file by its path (syslog's /dev/log, journald).
        "send a datagram to a UNIX socket outside from a socketpair",
        py(
            "import socket as s; a, b = s.socketpair(s.AF_UNIX, s.SOCK_DGRAM | s.SOCK_CLOEXEC); "
            "a.sendto(b'x', '{dgram}')"
        ),
        lambda world, out: world.unix_dgram.settled() > 0,
    ),
    Escape(
        "make a network namespace (unshare)",
        "unshare --net true && echo made",
        lambda world, out: "made" in out.stdout,
    ),
    Escape(
        "read the agent's resource limits",
        "prlimit --pid {agent} --nofile --output SOFT --noheadings",
        lambda world, out: out.exit_code == 0 and out.stdout.strip() != "",
    ),
    Escape(
        "change the agent's priority",
        "renice -n 0 -p {agent} && echo reniced",
        lambda world, out: "reniced" in out.stdout,
    ),
    Escape(
        "make a SysV shared memory segment (shared with the host)",
        "ipcmk -M 1024",
        lambda world, out: _shm_made(out),
    ),
    Escape(
        "signal the agent",
        "kill -0 {agent} && echo signalled",
        lambda world, out: "signalled" in out.stdout,
    ),
]


def _shm_made(out: ExecOutput) -> bool:
    """Whether `ipcmk -M` made a segment (removed again here, so the host keeps none)."""
    made = re.search(r"Shared memory id: (\d+)", out.stdout)
    if made is None:
        return False
    subprocess.run(["ipcrm", "-m", made.group(1)], check=False)
    return True


@pytest.mark.parametrize("escape", ESCAPES, ids=lambda escape: escape.name)
async def test_the_escape_works_on_the_host(world: World, escape: Escape) -> None:
    out = await HostBackend.builder(world.sandbox).timeout(20).build().run(sh(world.fill(escape.command)))
    assert escape.escaped(world, out), (out.exit_code, out.stdout, out.stderr)


@pytest.mark.parametrize("escape", ESCAPES, ids=lambda escape: escape.name)
async def test_the_escape_fails_in_the_os_sandbox(world: World, escape: Escape) -> None:
    out = await world.confined().run(sh(world.fill(escape.command)))
    assert not escape.escaped(world, out), (out.exit_code, out.stdout, out.stderr)
    assert out.exit_code != 0
    assert (world.outside / "secret.txt").read_text() == SECRET


async def test_ordinary_tools_work_inside(world: World) -> None:
    backend = world.confined()
    script = (
        "set -e; mkdir -p src/pkg; printf 'alpha\\nbeta\\n' > src/pkg/a.txt; "
        "ls src/pkg; grep -rn beta src; sed -n 1p src/pkg/a.txt; awk 'END {print NR}' src/pkg/a.txt; "
        'find . -name \'*.txt\' | sort; echo tmp > "$TMPDIR/t" && cat "$TMPDIR/t"; '
        "git init -q repo && git -C repo status --short && echo git-ok; "
        "python3 -c 'import json, sqlite3; print(json.dumps(sqlite3.sqlite_version > \"3\"))'; "
        "echo piped | tr a-z A-Z | cat"
    )
    out = await backend.run(sh(script))
    assert out.exit_code == 0, out.stderr
    assert out.stdout.splitlines() == [
        "a.txt",
        "src/pkg/a.txt:2:beta",
        "alpha",
        "2",
        "./src/pkg/a.txt",
        "tmp",
        "git-ok",
        "true",
        "PIPED",
    ]
    assert (world.root / "src" / "pkg" / "a.txt").read_text() == "alpha\nbeta\n"


async def test_no_descriptor_of_the_parent_reaches_the_command(world: World) -> None:
    probe = (
        "import os\n"
        "found = []\n"
        "for fd in range(3, 4096):\n"
        "    try:\n"
        "        os.fstat(fd)\n"
        "        found.append(fd)\n"
        "    except OSError:\n"
        "        pass\n"
        "print(found)\n"
    )
    leak = os.open(os.devnull, os.O_RDONLY)  # inheritable or not, it must not be there
    os.set_inheritable(leak, True)
    try:
        out = await world.confined().run(ExecRequest(("python3", "-c", probe)))
    finally:
        os.close(leak)
    assert out.stdout.strip() == "[]", out.stderr


async def test_guarantees_and_the_bash_description_name_the_tier(world: World) -> None:
    backend = world.confined()
    assert backend.guarantees() == SandboxGuarantees(
        Isolation.OS_KERNEL, Isolation.OS_KERNEL, Isolation.OS_KERNEL, "os-sandbox (landlock+seccomp)"
    )
    assert "os-sandbox (landlock+seccomp)" in BashTool(backend).description
    opened = OsSandboxBackend.builder(world.sandbox).allow_network(True).build()
    world.backends.append(opened)
    assert opened.guarantees().network is Isolation.NONE


async def test_allow_network_opens_sockets(world: World) -> None:
    opened = OsSandboxBackend.builder(world.sandbox).allow_network(True).build()
    world.backends.append(opened)
    connect = py("import socket; socket.create_connection(('127.0.0.1', {tcp}), timeout=5).close()")
    out = await opened.run(sh(world.fill(connect)))
    assert out.exit_code == 0 and world.tcp.settled() == 1, out.stderr
    # Still no UNIX sockets: host daemons (docker, dbus) listen on socket files.
    unix = py("import socket; s = socket.socket(socket.AF_UNIX); s.connect('{sock}')")
    refused = await opened.run(sh(world.fill(unix)))
    assert "PermissionError" in refused.stderr and world.unix.settled() == 0


async def test_extra_read_only_and_writable_paths(world: World, tmp_path: Path) -> None:
    tools, cache = tmp_path / "tools", tmp_path / "cache"
    tools.mkdir()
    cache.mkdir()
    (tools / "tool.txt").write_text("a tool")
    backend = (
        OsSandboxBackend.builder(world.sandbox)
        .read_only_paths([str(tools)])
        .writable_paths([str(cache)])
        .build()
    )
    world.backends.append(backend)
    out = await backend.run(sh(f"cat {tools}/tool.txt; echo c > {cache}/c; echo t > {tools}/t"))
    assert out.stdout == "a tool" and (cache / "c").read_text() == "c\n"
    assert not (tools / "t").exists() and "Permission denied" in out.stderr


def test_a_closed_backend_refuses_to_run_and_cleans_up(world: World) -> None:
    backend = world.confined()
    home = Path(asyncio.run(backend.run(sh("echo $HOME"))).stdout.strip())
    assert home.name.startswith("helikon-os-sandbox-") and os.path.isdir(home)
    backend.close()
    backend.close()  # idempotent
    assert not os.path.exists(home)
    with pytest.raises(OsSandboxError, match="closed"):
        asyncio.run(backend.run(sh("true")))


# Calls the filter refuses, with arguments that are harmless on the host (where they fail
# for another reason, or do nothing): in the sandbox each must fail with EPERM.
_DENIED_CALLS = {
    "unshare(0)": (272, 0, 0, 0),
    "bpf(0, NULL, 0)": (321, 0, 0, 0),
    "clock_settime(CLOCK_REALTIME, NULL)": (227, 0, 0, 0),
    "io_uring_setup(0, NULL)": (425, 0, 0, 0),
    "pidfd_getfd(-1, -1, 0)": (438, -1, -1, 0),
    "open_by_handle_at(-1, NULL, 0)": (304, -1, 0, 0),
    "perf_event_open(NULL, 0, -1)": (298, 0, 0, -1),
    "ioctl(0, TIOCSTI, NULL)": (16, 0, 0x5412, 0),
    "clone3(NULL, 0)": (435, 0, 0, 0),
    "open_tree_attr(-1, NULL, 0) (newer than the table)": (467, -1, 0, 0),
}
_CALL = (
    "import ctypes, os, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "nr, a, b, c = (int(x) for x in sys.argv[1:5])\n"
    "result = libc.syscall(ctypes.c_long(nr), ctypes.c_long(a), ctypes.c_long(b), ctypes.c_long(c))\n"
    "print(result, ctypes.get_errno())\n"
)


@pytest.mark.parametrize("call", list(_DENIED_CALLS), ids=list(_DENIED_CALLS))
async def test_a_denied_system_call_fails_with_eperm_inside_and_not_on_the_host(
    world: World, call: str
) -> None:
    argv = ("python3", "-c", _CALL, *(str(arg) for arg in _DENIED_CALLS[call]))
    inside = (await world.confined().run(ExecRequest(argv))).stdout.split()
    expected = errno.ENOSYS if call.startswith(("clone3", "open_tree_attr")) else errno.EPERM
    assert inside == ["-1", str(expected)]
    host = (await HostBackend.builder(world.sandbox).build().run(ExecRequest(argv))).stdout.split()
    assert host and host != inside


_SOCKETPAIRS = (
    "import socket as s, sys\n"
    "for family, kind in [\n"
    "    (s.AF_UNIX, s.SOCK_STREAM),\n"
    "    (s.AF_UNIX, s.SOCK_SEQPACKET),\n"
    "    (s.AF_UNIX, s.SOCK_STREAM | s.SOCK_NONBLOCK | s.SOCK_CLOEXEC),\n"
    "    (s.AF_UNIX, s.SOCK_SEQPACKET | s.SOCK_CLOEXEC),\n"
    "    (s.AF_UNIX, s.SOCK_DGRAM),\n"
    "    (s.AF_UNIX, s.SOCK_DGRAM | s.SOCK_CLOEXEC | s.SOCK_NONBLOCK),\n"
    "    (s.AF_INET, s.SOCK_STREAM),\n"
    "]:\n"
    "    try:\n"
    "        for end in s.socketpair(family, kind):\n"
    "            end.close()\n"
    "        print('ok')\n"
    "    except OSError as error:\n"
    "        print(error.errno)\n"
)


@pytest.mark.parametrize("network", ["closed", "open", "egress"])
async def test_only_stream_and_seqpacket_unix_socketpairs_can_be_made(world: World, network: str) -> None:
    # Each branch of the filter's socketpair rule, with and without the type's flag bits: the
    # family, stream, seqpacket, and the datagram pairs that fall through to the refusal.
    builder = OsSandboxBackend.builder(world.sandbox).timeout(20)
    if network == "open":
        builder = builder.allow_network(True)
    elif network == "egress":
        builder = builder.egress_policy(EgressPolicy.deny_all())
    backend = builder.build()
    world.backends.append(backend)
    inside = await backend.run(ExecRequest(("python3", "-c", _SOCKETPAIRS)))
    eperm = str(errno.EPERM)
    assert inside.stdout.split() == ["ok", "ok", "ok", "ok", eperm, eperm, eperm], inside.stderr
    # The twin: on the host the datagram pairs are made (AF_INET pairs do not exist anywhere).
    host = await HostBackend.builder(world.sandbox).build().run(ExecRequest(("python3", "-c", _SOCKETPAIRS)))
    assert host.stdout.split()[:6] == ["ok"] * 6, host.stderr
    assert host.stdout.split()[6] != eperm


def test_a_dead_launcher_is_an_error_that_says_so(world: World) -> None:
    backend, launcher = launched(world.confined)
    assert launcher is not None and "os_sandbox/_launcher.py" in Path(f"/proc/{launcher}/cmdline").read_text()
    os.kill(launcher, signal.SIGKILL)
    os.waitpid(launcher, 0)
    with pytest.raises(OsSandboxError, match="launcher"):
        asyncio.run(backend.run(sh("true")))


def test_what_the_launcher_keeps_dies_with_it(world: World) -> None:
    _, launcher = launched(world.confined)
    assert launcher is not None
    # The child kept ready for the next command, and the pid namespace's init where there is one.
    kept = [int(pid) for pid in Path(f"/proc/{launcher}/task/{launcher}/children").read_text().split()]
    assert len(kept) == (2 if own_pid_namespace(launcher) else 1) and all(running(pid) for pid in kept)
    os.kill(launcher, signal.SIGKILL)
    os.waitpid(launcher, 0)
    assert all(gone(pid) for pid in kept)


_SIGNAL_THE_OTHER = "while [ ! -s a.pid ]; do sleep 0.02; done; kill -0 $(cat a.pid) && echo signalled"


async def _one_command_signals_another(backend: HostBackend | OsSandboxBackend) -> ExecOutput:
    """Two commands of one backend at once: the second signals the first (by its pid in a file)."""
    first = asyncio.ensure_future(backend.run(sh("echo $$ > a.pid.tmp; mv a.pid.tmp a.pid; sleep 20")))
    try:
        return await backend.run(sh(_SIGNAL_THE_OTHER))
    finally:
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)


async def test_a_command_cannot_signal_another_command_of_the_same_backend(world: World) -> None:
    out = await _one_command_signals_another(world.confined())
    assert "signalled" not in out.stdout and out.exit_code != 0, (out.stdout, out.stderr)
    # The twin: on the host the same second command reaches the first.
    (world.root / "a.pid").unlink()
    host = await _one_command_signals_another(HostBackend.builder(world.sandbox).timeout(20).build())
    assert host.stdout == "signalled\n", host.stderr


_LEAVE_ITS_GROUP = (
    "setsid bash -c 'echo $$ > stray.pid; until [ -e ping ]; do sleep 0.02; done; echo pong > pong; "
    "exec sleep 60' & until [ -e go ]; do sleep 0.02; done"
)
"""A command that leaves a stray in a session of its own, and ends once the test says `go`; the
stray answers a `ping` with a `pong`, so the test can tell it still runs after the call."""


async def _run_leaving_a_stray(
    backend: HostBackend | OsSandboxBackend, root: Path, launcher: int | None
) -> int:
    """Run `_LEAVE_ITS_GROUP` to its end; the stray's host pid, found before the command ended."""
    run = asyncio.ensure_future(backend.run(sh(_LEAVE_ITS_GROUP)))
    stray = await asyncio.to_thread(stray_in_its_session, root / "stray.pid", launcher)
    (root / "go").touch()
    out = await run
    assert out.exit_code == 0 and not out.timed_out, out.stderr
    return stray


def test_a_process_that_leaves_its_group_is_killed_once_the_command_is_done(world: World) -> None:
    backend, launcher = launched(world.confined)
    stray = asyncio.run(_run_leaving_a_stray(backend, world.root, launcher))
    assert gone(stray)


def test_the_twin_on_the_host_a_process_that_leaves_its_group_outlives_the_command(world: World) -> None:
    # It holds the output pipes, but the call returns once the command is done.
    stray = asyncio.run(_run_leaving_a_stray(HostBackend.builder(world.sandbox).build(), world.root, None))
    try:
        (world.root / "ping").touch()
        expect_eventually(lambda: (world.root / "pong").exists(), "the stray answering after the call")
    finally:
        os.kill(stray, signal.SIGKILL)


_CAPABILITIES = (
    "import ctypes, struct\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "header = ctypes.create_string_buffer(struct.pack('=Ii', 0x20080522, 0))\n"
    "data = ctypes.create_string_buffer(24)\n"
    "assert libc.syscall(125, header, data) == 0\n"
    "print(any(data.raw))\n"
)


def test_a_command_run_as_root_has_no_capabilities(world: World) -> None:
    inside = asyncio.run(world.confined().run(ExecRequest(("python3", "-c", _CAPABILITIES))))
    assert inside.stdout == "False\n", inside.stderr
    if os.geteuid() == 0:  # the twin: the same root command on the host has them
        host = asyncio.run(
            HostBackend.builder(world.sandbox).build().run(ExecRequest(("python3", "-c", _CAPABILITIES)))
        )
        assert host.stdout == "True\n"


def test_a_command_cannot_leave_its_session_to_dodge_the_timeout(world: World) -> None:
    source = (
        "import os, time\n"
        "try:\n"
        "    os.setpgid(0, os.getppid())\n"
        "except PermissionError:\n"
        "    print('refused', flush=True)\n"
        "time.sleep(60)\n"
    )

    async def run(limit: float) -> ExecOutput:
        return await world.confined().run(ExecRequest(("python3", "-c", source), timeout=limit))

    out = asyncio.run(once_started_before_the_timeout(run, lambda out: out.stdout != ""))
    # Still in its own group, so the timeout's group kill reached it.
    assert out.timed_out and out.stdout == "refused\n" and out.signal == signal.SIGKILL


def test_a_symlinked_working_directory_is_refused(world: World) -> None:
    (world.root / "sub").symlink_to("/etc")
    with pytest.raises(Denied):
        asyncio.run(world.confined().run(ExecRequest(("pwd",), cwd="sub")))
    # The twin: the host backend follows it (it is no containment).
    host = asyncio.run(HostBackend.builder(world.sandbox).build().run(ExecRequest(("pwd",), cwd="sub")))
    assert host.stdout == "/etc\n"
