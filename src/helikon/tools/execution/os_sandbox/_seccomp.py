"""The seccomp-bpf filter the OS sandbox loads in each child: which system calls fail with `EPERM`.

The filter is a classic-BPF program over `struct seccomp_data` (syscall number, audit arch,
arguments), built here as bytes and loaded by the launcher with
`prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ...)` just before `exec`. It is an allow-list of
nothing and a deny-list of what a contained command never needs, in five rules:

1. A call made through another ABI (i386 `int 0x80`, x32) kills the process: the numbers
   below mean other calls there.
2. The dangerous calls fail with `EPERM`: tracing, reading or taking from other processes
   (`ptrace`, `process_vm_*`, `pidfd_getfd`, `kcmp`), mounting and namespaces, kernel modules
   and kexec, eBPF and perf, keyrings, io_uring (its requests are not seen by seccomp), file
   handles (`open_by_handle_at` escapes a directory confinement), `fanotify` (it hands out
   descriptors of files others open), the system clock, `clone` making new namespaces
   (`clone3`, whose flags seccomp cannot read, fails with `ENOSYS`: libc falls back to
   `clone`), and the `ioctl`s that push input into a terminal (`TIOCSTI`, `TIOCLINUX`).
   These matter most where commands run as root, which Landlock confines too.
3. Calls that act on another process by pid (`prlimit64`, `setpriority`, the `sched_set*`
   calls, `ioprio_set`) fail unless they name the caller itself (0).
4. Network: `NETWORK_NONE` fails every `socket()` (even UNIX ones, which reach host daemons
   through socket files); in every mode, `socketpair()` makes only `AF_UNIX` stream or
   seqpacket pairs (a datagram socket could send to a daemon's socket file by its path);
   `NETWORK_TCP_ONLY` lets `socket()` make TCP sockets only (IPv4/IPv6, stream, protocol
   TCP), and refuses TCP Fast Open sends — no UDP (DNS, QUIC), no raw or packet sockets, no
   UNIX sockets; `NETWORK_OPEN` allows IPv4, IPv6 and netlink sockets, but no raw or packet
   ones and still no UNIX sockets.
5. Calls newer than this table fail with `ENOSYS`; everything else is allowed.

Each rule is a block of the program written with labels (`_bpf.assemble` counts the jumps),
and `tests/unit/tools/execution/test_seccomp_rules.py` runs every branch of each network
mode's program in a BPF interpreter over a table of calls and verdicts.

Only x86-64 has a table here; `build_filter` raises `UnsupportedArch` elsewhere, and the
sandbox fails closed.
"""

from __future__ import annotations

import errno
import platform
import socket
from types import MappingProxyType

from ._bpf import Insn, Label, and_, assemble, jeq, jge, jset, load, ret

NETWORK_NONE = "none"
NETWORK_TCP_ONLY = "tcp-only"
NETWORK_OPEN = "open"

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000

# x86-64 numbers (arch/x86/entry/syscalls/syscall_64.tbl).
SYS_IOCTL = 16
SYS_SOCKET = 41
SYS_SOCKETPAIR = 53
SYS_CLONE = 56
SYS_CLONE3 = 435
SYS_SENDTO = 44
SYS_SENDMSG = 46
SYS_SENDMMSG = 307

DENIED_X86_64 = MappingProxyType(
    {
        "ptrace": 101,
        "syslog": 103,
        "vhangup": 153,
        "modify_ldt": 154,
        "pivot_root": 155,
        "adjtimex": 159,
        "chroot": 161,
        "acct": 163,
        "settimeofday": 164,
        "mount": 165,
        "umount2": 166,
        "swapon": 167,
        "swapoff": 168,
        "reboot": 169,
        "sethostname": 170,
        "setdomainname": 171,
        "iopl": 172,
        "ioperm": 173,
        "init_module": 175,
        "delete_module": 176,
        "quotactl": 179,
        "lookup_dcookie": 212,
        "clock_settime": 227,
        "kexec_load": 246,
        "add_key": 248,
        "request_key": 249,
        "keyctl": 250,
        "unshare": 272,
        "perf_event_open": 298,
        "fanotify_init": 300,
        "name_to_handle_at": 303,
        "open_by_handle_at": 304,
        "clock_adjtime": 305,
        "setns": 308,
        "process_vm_readv": 310,
        "process_vm_writev": 311,
        "kcmp": 312,
        "finit_module": 313,
        "kexec_file_load": 320,
        "bpf": 321,
        "userfaultfd": 323,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "open_tree": 428,
        "move_mount": 429,
        "fsopen": 430,
        "fsconfig": 431,
        "fsmount": 432,
        "fspick": 433,
        "pidfd_getfd": 438,
        "process_madvise": 440,
        "mount_setattr": 442,
        "process_mrelease": 448,
        # SysV IPC: shared memory, semaphores and message queues are per IPC namespace, shared
        # with the host, not per sandbox.
        "shmget": 29,
        "shmat": 30,
        "shmctl": 31,
        "semget": 64,
        "semop": 65,
        "semctl": 66,
        "shmdt": 67,
        "msgget": 68,
        "msgsnd": 69,
        "msgrcv": 70,
        "msgctl": 71,
        "semtimedop": 220,
        "quotactl_fd": 443,
    }
)
"""System calls that fail with `EPERM` inside the sandbox, by name."""

ONLY_ON_SELF_X86_64 = MappingProxyType(
    {
        # name: (number, the argument naming the process); 0 there means the caller itself.
        "setpriority": (141, 1),
        "sched_setparam": (142, 0),
        "sched_setscheduler": (144, 0),
        "sched_setaffinity": (203, 0),
        "ioprio_set": (251, 1),
        "prlimit64": (302, 0),
        "sched_setattr": (314, 0),
    }
)
"""Calls a command may make on itself only: on another process (this agent, the launcher)
they would change its limits, priority or CPUs, which Landlock does not confine."""

FIRST_UNKNOWN = 463
"""The first x86-64 number after this table's newest entry (`mseal`, 462): newer calls fail
with `ENOSYS`, so a call added to the kernel later is refused until it is reviewed here."""

# clone(2) flags that make a namespace (a fresh user namespace grants every capability in it).
CLONE_NAMESPACE_FLAGS = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
)
# Terminal ioctls that push input into a terminal another process reads.
TIOCSTI = 0x5412
TIOCLINUX = 0x541C

IPPROTO_TCP = 6
SOCK_PACKET = 10
MSG_FASTOPEN = 0x20000000
SOCK_TYPE_MASK = 0xF  # the type without SOCK_NONBLOCK / SOCK_CLOEXEC

# seccomp return actions.
RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_EPERM = 0x00050000 | errno.EPERM
RET_ENOSYS = 0x00050000 | errno.ENOSYS

# Offsets into struct seccomp_data; an argument's low 32 bits (little-endian).
_NR = 0
_ARCH = 4


def _arg(index: int) -> int:
    return 16 + 8 * index


class UnsupportedArch(Exception):
    """No syscall table for this machine's architecture."""


def build_filter(network: str) -> bytes:
    """The filter program as packed `struct sock_filter`s, for `network` (a `NETWORK_*` mode)."""
    if platform.machine() != "x86_64":
        raise UnsupportedArch(
            f"the seccomp filter has a syscall table for x86_64 only, not {platform.machine()}"
        )
    if network not in (NETWORK_NONE, NETWORK_TCP_ONLY, NETWORK_OPEN):
        raise ValueError(f"network mode {network!r}")
    return assemble(
        [
            *_native_abi_only(),
            *_denied_calls(),
            *_argument_rules(),
            *_socket_rules(network),
            ret(RET_ALLOW),
        ]
    )


def _native_abi_only() -> list[Insn | Label]:
    """Rule 1, and rule 5's refusal of calls newer than the table."""
    return [
        load(_ARCH),
        jeq(AUDIT_ARCH_X86_64, jt="native"),
        ret(RET_KILL_PROCESS),
        Label("native"),
        load(_NR),
        jge(X32_SYSCALL_BIT, jf="not-x32"),
        ret(RET_KILL_PROCESS),
        Label("not-x32"),
        # Calls newer than this table: refused as if the kernel had none (libc falls back).
        jge(FIRST_UNKNOWN, jf="known"),
        ret(RET_ENOSYS),
        Label("known"),
    ]


def _denied_calls() -> list[Insn | Label]:
    """Rule 2, by number alone."""
    program: list[Insn | Label] = []
    for name, number in sorted(DENIED_X86_64.items(), key=lambda entry: entry[1]):
        program += _refuse(name, number, RET_EPERM)
    # clone3 passes its flags in memory seccomp cannot read: say it does not exist, and
    # libc falls back to clone, whose flags are checked.
    program += _refuse("clone3", SYS_CLONE3, RET_ENOSYS)
    return program


def _argument_rules() -> list[Insn | Label]:
    """Rule 2's `clone` and `ioctl` by an argument, and rule 3."""
    program = [
        *_when("clone", SYS_CLONE, 0, [jset(CLONE_NAMESPACE_FLAGS, jf="clone:allow")]),
        *_when("ioctl", SYS_IOCTL, 1, [jeq(TIOCSTI, jt="ioctl:deny"), jeq(TIOCLINUX, jf="ioctl:allow")]),
    ]
    # Calls that name another process: allowed on the caller itself only (pid or who 0).
    for name, (number, index) in ONLY_ON_SELF_X86_64.items():
        program += _when(name, number, index, [jeq(0, jt=f"{name}:allow")])
    return program


def _refuse(name: str, number: int, action: int) -> list[Insn | Label]:
    """`if nr == number: return action`, else on to the next rule."""
    return [jeq(number, jf=f"not-{name}"), ret(action), Label(f"not-{name}")]


def _when(name: str, number: int, index: int, test: list[Insn | Label]) -> list[Insn | Label]:
    """`if nr == number: A = arg[index]; <test>`, else on to the next rule (A = nr again).

    `test` lets the call through by jumping to `<name>:allow`, and refuses it by jumping to
    `<name>:deny` or by falling through into it.
    """
    return [
        load(_NR),
        jeq(number, jf=f"{name}:next"),
        load(_arg(index)),
        *test,
        Label(f"{name}:deny"),
        ret(RET_EPERM),
        Label(f"{name}:allow"),
        ret(RET_ALLOW),
        Label(f"{name}:next"),
        load(_NR),
    ]


def _socket_rules(network: str) -> list[Insn | Label]:
    """Rule 4: `socket()` and `socketpair()` by network mode, and TCP Fast Open."""
    # A pair of connected UNIX sockets (a pipe both ways), stream or seqpacket only: an
    # unbound datagram socket of a pair can `sendto` any datagram socket file by its path
    # (/dev/log, the journal's socket, a daemon's), which Landlock (before ABI 9) does not see.
    unix_pairs = _when(
        "socketpair",
        SYS_SOCKETPAIR,
        0,
        [
            jeq(socket.AF_UNIX, jf="socketpair:deny"),
            load(_arg(1)),
            and_(SOCK_TYPE_MASK),  # without SOCK_NONBLOCK / SOCK_CLOEXEC
            jeq(socket.SOCK_STREAM, jt="socketpair:allow"),
            jeq(socket.SOCK_SEQPACKET, jt="socketpair:allow"),
        ],
    )
    if network == NETWORK_NONE:
        return [*unix_pairs, *_refuse("socket", SYS_SOCKET, RET_EPERM)]
    if network == NETWORK_OPEN:
        # IPv4, IPv6 (any type but raw and packet) and netlink (getaddrinfo asks it for the
        # host's addresses); never UNIX sockets, which reach host daemons through socket files.
        family: list[Insn | Label] = [
            jeq(socket.AF_INET, jt="socket:type"),
            jeq(socket.AF_INET6, jt="socket:type"),
            jeq(socket.AF_NETLINK, jt="socket:allow", jf="socket:deny"),
            Label("socket:type"),
            load(_arg(1)),
            and_(SOCK_TYPE_MASK),
            jeq(socket.SOCK_RAW, jt="socket:deny"),
            jeq(SOCK_PACKET, jf="socket:allow"),
        ]
        return [*unix_pairs, *_when("socket", SYS_SOCKET, 0, family)]
    # NETWORK_TCP_ONLY: TCP over IPv4/IPv6, and no TCP Fast Open (a send that connects
    # without connect(), which Landlock's connect rule does not see).
    tcp: list[Insn | Label] = [
        jeq(socket.AF_INET, jt="socket:type"),
        jeq(socket.AF_INET6, jf="socket:deny"),
        Label("socket:type"),
        load(_arg(1)),
        and_(SOCK_TYPE_MASK),
        jeq(socket.SOCK_STREAM, jf="socket:deny"),
        load(_arg(2)),
        jeq(0, jt="socket:allow"),  # protocol 0: a stream socket's default, TCP
        jeq(IPPROTO_TCP, jt="socket:allow"),
    ]
    return [
        *unix_pairs,
        *_when("socket", SYS_SOCKET, 0, tcp),
        *_when("sendto", SYS_SENDTO, 3, [jset(MSG_FASTOPEN, jf="sendto:allow")]),
        *_when("sendmsg", SYS_SENDMSG, 2, [jset(MSG_FASTOPEN, jf="sendmsg:allow")]),
        *_when("sendmmsg", SYS_SENDMMSG, 3, [jset(MSG_FASTOPEN, jf="sendmmsg:allow")]),
    ]
