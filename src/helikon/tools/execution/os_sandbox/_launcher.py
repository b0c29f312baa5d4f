"""The OS sandbox's launcher: a small single-threaded process that forks each command and confines it.

Run as a script (`python -I -S _launcher.py <config>`), standard library only: it never
imports helikon. The parent (`OsSandboxBackend`) built the Landlock ruleset and the seccomp
program; this process holds them, gives up every capability once (for itself and everything
it forks), and keeps one child forked *ahead* of the next command. That spare child

1. starts a session of its own (so the parent can kill its whole group, which it cannot leave),
2. resets the signals Python ignores (`SIGPIPE`, `SIGXFSZ`), sets `no_new_privs`, restricts
   itself with the Landlock ruleset (a Landlock domain of its own, so no command can signal
   another) and loads the seccomp filter — each failure fatal to the command it will run
   (exit 126), never a command run unconfined — closes every descriptor but its socket, and
   says it is ready;
3. then waits for its command: takes the stdio descriptors it is sent and the working
   directory as a descriptor, sets its rlimits (last: the limits bind the command, not the
   Python that reads the request), closes the rest,
4. and `exec`s the command.

So a command waits for nothing but a message and an `exec`: the fork of a Python process and
the confinement steps (milliseconds in a virtual machine, where every page a forked child
touches is a copy-on-write fault) are done while the previous command runs, or while idle.

Why a launcher process and not `preexec_fn`: forking the parent, a threaded asyncio program,
and running Python before `exec` can deadlock on a lock another thread held. This process
has one thread, so forking it is safe, and it stays up so a command costs no interpreter
start.

What commands leave behind: where the kernel allows, the commands run in a pid namespace of
their own (`_enter_namespaces`), whose init (`_Keeper`) dies with this process, and the
kernel then kills everything in it; the keeper also kills the strays once no command runs.
Elsewhere this process is the subreaper of everything the commands start (`_kill_strays`),
which a launcher killed from outside cannot do.

Protocol, over a `SOCK_SEQPACKET` UNIX socket (`control_fd` in the config): the parent sends
a short message with six descriptors (stdin, stdout, stderr, a reply socket, the working
directory, and a memfd holding the JSON request: `argv`, `env`, which may be as large as
`exec` takes, far more than one socket message). The launcher hands five of them to the
spare child, answers on the reply socket `{"pid": n}` (the child already leads its own
group), then `{"status": s}` (a `waitpid` status) when it exits, and closes it; or
`{"error": text}` when it could not fork one (no pids left), and runs on. When the parent
goes away (EOF on the control socket), every command still running is killed, with all
they started, and the launcher exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import resource
import select
import signal
import socket
import struct
import sys

# `os.execvpe` imports `warnings` on first use; once a child is confined it cannot read the
# standard library any more, so everything the child runs after confining is loaded here.
import warnings  # noqa: F401  # pyright: ignore[reportUnusedImport]
from typing import Any, NoReturn

PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP, SECBIT_NO_CAP_AMBIENT_RAISE and each one's lock, and
# SECBIT_KEEP_CAPS_LOCKED (keep-caps off, for good).
SECUREBITS_LOCKED_DOWN = 0b11101111
SYS_CAPGET = 125
SYS_CAPSET = 126
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_CAP_LAST = 63  # dropping a capability the kernel does not know fails harmlessly
PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SYS_LANDLOCK_RESTRICT_SELF = 446
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
DENIED = 126
_MAX_FD = max(os.sysconf("SC_OPEN_MAX"), 1024)

_libc = ctypes.CDLL(None, use_errno=True)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _confine(ruleset_fd: int, program: ctypes.Array[ctypes.c_char]) -> None:
    """no_new_privs, then Landlock, then seccomp; raises OSError if the kernel refuses any."""
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if _libc.syscall(ctypes.c_long(SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_long(ruleset_fd), 0) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    fprog = _SockFprog(len(program) // 8, ctypes.cast(program, ctypes.c_void_p))
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


class _Config:
    """The launcher's configuration, read once from its command line."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.control_fd = int(raw["control_fd"])
        self.ruleset_fd = int(raw["ruleset_fd"])
        self.program = ctypes.create_string_buffer(bytes.fromhex(str(raw["seccomp"])))
        self.network_open = raw["network"] == "open"
        self.rlimits = [
            (getattr(resource, str(name)), int(soft), int(hard))
            for name, (soft, hard) in raw["rlimits"].items()
        ]
        self.probe_dir = str(raw["probe_dir"])
        self.proxy_port = int(raw["proxy_port"]) if raw.get("proxy_port") else None


def _drop_capabilities() -> None:
    """Give up every capability for good, so a command run as root has none.

    Landlock confines root's paths, not what `CAP_NET_ADMIN` or `CAP_SYS_NICE` let it do to
    the host. Securebits first, while `CAP_SETPCAP` is still held: root regains nothing at `exec` and the
    bits cannot be unset. Then the bounding and ambient sets, then `capset` to empty. Without
    capabilities to begin with (not root), the first two fail harmlessly and `capset` is a no-op.
    """
    _libc.prctl(PR_SET_SECUREBITS, SECUREBITS_LOCKED_DOWN, 0, 0, 0)
    for cap in range(_CAP_LAST + 1):
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = struct.pack("=Ii", _LINUX_CAPABILITY_VERSION_3, 0)
    if _libc.syscall(ctypes.c_long(SYS_CAPSET), header, bytes(24)) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def _capabilities_left() -> bool:
    """Whether this process still has any effective or permitted capability."""
    header = ctypes.create_string_buffer(struct.pack("=Ii", _LINUX_CAPABILITY_VERSION_3, 0))
    data = ctypes.create_string_buffer(24)
    if _libc.syscall(ctypes.c_long(SYS_CAPGET), header, data) != 0:
        return True
    return any(data.raw)


def _spare(config: _Config, sock: socket.socket, parent: int) -> NoReturn:
    """In a child forked ahead of its command: confine, wait for the command, exec it; never returns.

    `parent` is what `getppid()` says while the launcher lives: its pid, or 0 when the child
    is in a pid namespace the launcher is outside of.
    """
    failure: BaseException | None = None
    try:
        # A session of its own: it leads its process group and cannot move to another one
        # (a child that could join the launcher's group would escape the timeout's group kill).
        os.setsid()
        # Killed with the launcher while it waits (the launcher kills its commands itself).
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # it died before the line above
            os._exit(DENIED)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        _confine(config.ruleset_fd, config.program)
    except BaseException as error:  # told to the command's stderr, once there is one
        failure = error
    # Nothing of the launcher's (its control socket, other commands' reply sockets, its
    # stdio) stays open while this child waits.
    os.closerange(0, sock.fileno())
    os.closerange(sock.fileno() + 1, _MAX_FD)
    with contextlib.suppress(OSError):
        sock.send(b"ready")
    try:
        data, fds, _, _ = socket.recv_fds(sock, 16, 5)
    except OSError:
        data, fds = b"", []
    if not data or len(fds) != 5:
        os._exit(DENIED)  # the launcher is gone, or stopped before sending a command
    try:
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        if failure is not None:
            raise failure
        os.fchdir(fds[3])  # opened beneath the root by the parent: no path to race
        request = _Request(json.loads(_read_all(fds[4])))
        for kind, soft, hard in config.rlimits:
            resource.setrlimit(kind, (soft, hard))
        os.closerange(3, _MAX_FD)
    except BaseException as error:
        with contextlib.suppress(BaseException):
            os.write(2, f"helikon os-sandbox: cannot confine the command: {error}\n".encode())
        os._exit(DENIED)
    try:
        os.execvpe(request.argv[0], request.argv, request.env)
    except BaseException as error:
        code = 127 if isinstance(error, FileNotFoundError) else DENIED
        with contextlib.suppress(BaseException):
            os.write(2, f"cannot start {request.argv[0]!r}: {error}\n".encode())
        os._exit(code)


def _read_all(fd: int) -> bytes:
    """What the memfd `fd` holds, from its start."""
    chunks: list[bytes] = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


class _Request:
    """One command, as the parent sent it."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.argv = [str(arg) for arg in raw["argv"]]
        self.env = {str(name): str(value) for name, value in raw["env"].items()}


class _Spares:
    """The child forked ahead of the next command (`_spare`), made again after each use."""

    def __init__(self, config: _Config, *, own_pids: bool) -> None:
        self.config = config
        self.parent = 0 if own_pids else os.getpid()  # what `getppid()` says in the child (`_spare`)
        self.pid = 0
        self.sock: socket.socket | None = None
        self.failure = "the child made for it exited before it was ready"

    def make(self) -> None:
        """Fork the next spare; if the kernel refuses (no pids left), there is none until the next try.

        A command can use up the processes this user or cgroup may have (a fork bomb under
        a container's pids limit): the launcher must outlive that, not crash with every
        command it supervises.
        """
        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except OSError as error:
            self.failure = f"cannot make its socket: {error}"
            return
        try:
            pid = os.fork()
        except OSError as error:
            ours.close()
            theirs.close()
            self.failure = f"cannot fork: {error}"
            return
        if pid == 0:
            ours.close()
            _spare(self.config, theirs, self.parent)
        theirs.close()
        self.pid, self.sock = pid, ours

    def take(self) -> tuple[int, socket.socket] | None:
        """The spare child, once it leads its own group and is confined; `None` if none would start."""
        for _ in range(2):  # one that died while it waited is replaced once
            if self.sock is None:
                self.make()
            pid, sock = self.pid, self.sock
            if sock is None:
                return None  # `failure` says why
            self.pid, self.sock = 0, None
            try:
                ready = sock.recv(16)  # waits while it is still getting ready
            except OSError:
                ready = b""
            if ready:
                return pid, sock
            sock.close()  # `_reap` reaps it: it is not a command, no reply waits for it
        return None

    def died(self, pid: int) -> None:
        if pid == self.pid and self.sock is not None:
            self.sock.close()
            self.pid, self.sock = 0, None

    def stop(self) -> None:
        if self.sock is not None:
            self.sock.close()  # EOF: it exits without running anything
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)


def _probe(config: _Config) -> str | None:
    """Confine a forked child and check the kernel enforces it; `None` if it does, else what failed.

    A kernel can accept a ruleset and a filter and still not apply them (an LSM disabled at
    boot, a filter mode it ignores): the sandbox is only reported ready once a confined child
    was refused a file in `probe_dir` (a directory outside the sandbox the parent made), and
    refused a socket where the network is closed.
    """
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            _confine(config.ruleset_fd, config.program)
            code = 6 if _capabilities_left() else 4
            try:
                os.close(os.open(os.path.join(config.probe_dir, "x"), os.O_CREAT | os.O_WRONLY, 0o600))
            except PermissionError:
                code = 0 if config.network_open else 5
            if code == 5:
                try:  # refused in every network mode: UNIX sockets reach host daemons
                    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()
                except PermissionError:
                    code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return {
        0: None,
        3: "the kernel refused to confine a process (prctl, landlock_restrict_self or seccomp failed)",
        4: "a confined process could still write outside the root: Landlock is not enforced",
        5: "a confined process could still open a socket: the seccomp filter is not enforced",
        6: "a confined process kept capabilities it was made to drop",
    }.get(os.waitstatus_to_exitcode(status), f"the probe process ended with status {status}")


def _enter_namespaces(proxy_port: int | None) -> tuple[bool, socket.socket | None]:
    """Make the namespaces the commands run in; whether they have a pid namespace, and the proxy's listener.

    A pid namespace where the kernel allows one (root, or a user who may make a user namespace):
    the first process forked into it is its init (`_Keeper`), and when that dies the kernel
    kills every process in it, so nothing a command started outlives a launcher killed from
    outside. This process stays outside it and sees its children's pids as the parent does.
    Where the kernel refuses (no user namespaces for this user, a container's seccomp
    profile), the commands share this pid namespace and only the wind-down kills their strays.

    With `proxy_port` (an egress policy), a network namespace too, which is required: only
    loopback is up, and 127.0.0.1:`proxy_port` listens there for the parent's egress proxy (a
    socket keeps the namespace it was made in, so the proxy reaches the outside from its own).
    """
    uid, gid = os.getuid(), os.getgid()
    user = CLONE_NEWUSER if uid != 0 else 0  # others may make namespaces inside a user namespace
    net = CLONE_NEWNET if proxy_port is not None else 0
    own_pids = _libc.unshare(user | net | CLONE_NEWPID) == 0
    if not own_pids and net and _libc.unshare(user | net) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET)")
    if user and (own_pids or net):
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as file:
                file.write(text)
    if proxy_port is None:
        return own_pids, None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sh22x", b"lo", 0)
        flags_now = struct.unpack("16sh22x", fcntl.ioctl(probe, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags_now | IFF_UP))
    return own_pids, socket.create_server(("127.0.0.1", proxy_port), backlog=128)


class _Keeper:
    """Init of the commands' pid namespace: the namespace, and everything in it, lives as long as it does.

    Forked first after `unshare(CLONE_NEWPID)`, it dies with the launcher (`PR_SET_PDEATHSIG`,
    and EOF on its socket if the launcher died before that was set), and the kernel then
    kills every process in the namespace: commands, and the `setsid` strays they left. The
    strays are its children (an orphan goes to its own namespace's init, never to a subreaper
    outside it), and the kernel reaps them (it ignores SIGCHLD). Asked to `purge` when no
    command runs, it kills every other process in the namespace in one `kill(-1)`, which a
    process forking in a loop cannot outrun; the spare child dies too and is made again.
    """

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            ours.close()
            _keep(theirs)
        theirs.close()
        self.pid, self.sock = pid, ours

    def purge(self, spares: _Spares) -> None:
        """Kill the strays, if commands left any; the spare child is made again if it died with them."""
        try:
            with open(f"/proc/{self.pid}/task/{self.pid}/children") as listed:
                if not listed.read().split():
                    return  # nothing was left: no round trip, the spare lives on
        except OSError:
            pass  # no CONFIG_PROC_CHILDREN: the keeper looks for itself
        try:
            self.sock.send(b"purge")
            purged = self.sock.recv(16) == b"purged"
        except OSError:
            return  # it is gone: `_reap` sees it exit, and the launcher stops
        if purged:
            spares.stop()
            spares.make()

    def stop(self) -> None:
        """Kill it, and with it every process in the namespace."""
        if self.pid:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)


def _keep(sock: socket.socket) -> NoReturn:
    """The keeper's life (`_Keeper`): wait for purges until the launcher is gone; never returns."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps orphans as they exit
    os.closerange(0, sock.fileno())
    os.closerange(sock.fileno() + 1, _MAX_FD)
    try:
        while sock.recv(16):  # EOF: the launcher is gone
            try:
                os.waitpid(-1, os.WNOHANG)  # raises when it has no child: no command left a stray
            except ChildProcessError:
                sock.send(b"none")
                continue
            with contextlib.suppress(OSError):
                os.kill(-1, signal.SIGKILL)  # every process in the namespace but this one
            sock.send(b"purged")
    finally:
        os._exit(0)


def _send(sock: socket.socket, message: dict[str, object]) -> None:
    with contextlib.suppress(OSError):  # the parent stopped listening: nothing to tell
        sock.send(json.dumps(message).encode())


def _ignore(signum: int, frame: object) -> None:
    """A SIGCHLD handler that does nothing: the wakeup fd is what the loop watches."""


def main() -> None:
    config = _Config(json.loads(sys.argv[1]))
    control = socket.socket(fileno=config.control_fd)
    wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.signal(signal.SIGCHLD, _ignore)
    signal.set_wakeup_fd(wake_write)
    running: dict[int, socket.socket] = {}
    try:
        own_pids, listener = _enter_namespaces(config.proxy_port)
    except OSError as error:
        made = "a network namespace for the egress proxy" if config.proxy_port else "a pid namespace"
        _send(control, {"error": f"cannot make {made}: {error}"})
        return
    if not own_pids:
        _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of commands become ours (_kill_strays)
    try:
        _drop_capabilities()  # for good, and for every child it forks
        keeper = _Keeper() if own_pids else None  # the first child: the namespace's init
    except OSError as error:
        _send(control, {"error": f"cannot start the launcher: {error}"})
        return
    failure = _probe(config)
    if failure is not None:
        _send(control, {"error": failure})
        return
    spares = _Spares(config, own_pids=own_pids)
    spares.make()
    ready = json.dumps({"ready": True}).encode()
    if listener is None:
        control.send(ready)
    else:
        socket.send_fds(control, [ready], [listener.fileno()])
        listener.close()
    while True:
        readable, _, _ = select.select([control, wake_read], [], [])
        if control in readable:
            try:
                data, fds, _, _ = socket.recv_fds(control, 16, 6)
            except OSError:
                data, fds = b"", []
            if not data:
                break
            _start(data, fds, spares, running)
        if wake_read in readable:
            with contextlib.suppress(BlockingIOError):
                while os.read(wake_read, 512):
                    pass
        if not _reap(running, spares, keeper):
            break
    _wind_down(running, spares, keeper)


def _wind_down(running: dict[int, socket.socket], spares: _Spares, keeper: _Keeper | None) -> None:
    """Kill every command still running, and everything they started, before exiting.

    In a pid namespace, killing its init (the keeper) kills them all. Without one, one pass
    is not enough: a process a running command started with `setsid` is still that
    command's child when its group is killed, and becomes this subreaper's only once the
    command is reaped. So reap until no child is left, killing each that is handed over.
    """
    signal.set_wakeup_fd(-1)  # no more loop to drain it: it must not fill up and warn
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    spares.stop()
    for pid in running:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    if keeper is not None:
        keeper.stop()  # the kernel kills every process in its namespace
    # Reap until no child is left; without a keeper, kill each stray as it is handed over.
    while keeper is not None or _kill_strays(0):
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break


def _start(request: bytes, fds: list[int], spares: _Spares, running: dict[int, socket.socket]) -> None:
    """Hand a command to the spare child, tell the parent its pid, and make the next spare."""
    reply = socket.socket(fileno=fds[3])
    spare = spares.take()
    try:
        if spare is not None:
            socket.send_fds(spare[1], [request], [*fds[:3], *fds[4:6]])
            running[spare[0]] = reply
            _send(reply, {"pid": spare[0]})
        else:
            _send(reply, {"error": f"cannot start the command's process ({spares.failure})"})
            reply.close()
    except OSError:
        reply.close()
    finally:
        if spare is not None:
            spare[1].close()
        for fd in (*fds[:3], *fds[4:6]):
            os.close(fd)
    spares.make()  # the next command's child, made ready while this one runs


def _reap(running: dict[int, socket.socket], spares: _Spares, keeper: _Keeper | None) -> bool:
    """Reap every exited child; tell each command's reply socket how its command ended.

    `False` once the keeper is gone: every command died with its namespace, and no process
    can be forked into it any more, so the launcher stops.
    """
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        if keeper is not None and pid == keeper.pid:
            keeper.pid = 0  # reaped: its pid may name another process now
            return False
        spares.died(pid)
        reply = running.pop(pid, None)
        if reply is not None:
            _send(reply, {"status": status})
            reply.close()
    if not running:
        if keeper is not None:
            keeper.purge(spares)
        else:
            _kill_strays(spares.pid)
    return True


def _kill_strays(spare: int) -> bool:
    """Kill what commands left behind outside their process groups, once none is running.

    A process that calls `setsid` leaves its command's group, so the group kill misses it.
    This launcher is their subreaper: orphaned, they become its children, and with no
    command running, every child it has but the spare (`spare`) is such a stray. Whether
    the children could be listed.
    """
    try:
        with open(f"/proc/self/task/{os.getpid()}/children") as listed:
            strays = [int(pid) for pid in listed.read().split()]
    except OSError:
        return False  # no CONFIG_PROC_CHILDREN: strays live until they exit
    for pid in strays:
        if pid != spare:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    return True


if __name__ == "__main__":
    main()
