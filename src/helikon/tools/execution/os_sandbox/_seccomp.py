"""The seccomp-bpf filter the OS sandbox loads in each child: which system calls fail with `EPERM`.

The filter is a classic-BPF program over `struct seccomp_data` (syscall number, audit arch,
arguments), built here as bytes and loaded by the launcher with
`prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ...)` just before `exec`. It is an allow-list of
nothing and a deny-list of what a contained command never needs, in four rules:

1. A call made through another ABI (i386 `int 0x80`, x32) kills the process: the numbers
   below mean other calls there.
2. The dangerous calls fail with `EPERM`: tracing, reading or taking from other processes
   (`ptrace`, `process_vm_*`, `pidfd_getfd`, `kcmp`), mounting and namespaces, kernel modules
   and kexec, eBPF and perf, keyrings, io_uring (its requests are not seen by seccomp), file
   handles (`open_by_handle_at` escapes a directory confinement), `fanotify` (it hands out
   descriptors of files others open), the system clock, and `clone`/`clone3` making new
   namespaces. These matter most where commands run as root, which Landlock confines too.
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

Only x86-64 has a table here; `build_filter` raises `UnsupportedArch` elsewhere, and the
sandbox fails closed.
"""

from __future__ import annotations

import errno
import platform
import socket
import struct
from types import MappingProxyType

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


# Classic BPF opcodes.
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_AND = 0x54  # BPF_ALU | BPF_AND | BPF_K
_RET = 0x06  # BPF_RET | BPF_K


class UnsupportedArch(Exception):
    """No syscall table for this machine's architecture."""


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def build_filter(network: str) -> bytes:
    """The filter program as packed `struct sock_filter`s, for `network` (a `NETWORK_*` mode)."""
    if platform.machine() != "x86_64":
        raise UnsupportedArch(
            f"the seccomp filter has a syscall table for x86_64 only, not {platform.machine()}"
        )
    if network not in (NETWORK_NONE, NETWORK_TCP_ONLY, NETWORK_OPEN):
        raise ValueError(f"network mode {network!r}")
    program: list[bytes] = [
        _insn(_LD_ABS, _ARCH),
        _insn(_JEQ, AUDIT_ARCH_X86_64, jt=1),
        _insn(_RET, RET_KILL_PROCESS),
        _insn(_LD_ABS, _NR),
        _insn(_JGE, X32_SYSCALL_BIT, jf=1),
        _insn(_RET, RET_KILL_PROCESS),
        # Calls newer than this table: refused as if the kernel had none (libc falls back).
        _insn(_JGE, FIRST_UNKNOWN, jf=1),
        _insn(_RET, RET_ENOSYS),
    ]
    for number in sorted(DENIED_X86_64.values()):
        program += [_insn(_JEQ, number, jf=1), _insn(_RET, RET_EPERM)]
    # clone3 passes its flags in memory seccomp cannot read: say it does not exist, and
    # libc falls back to clone, whose flags are checked.
    program += [_insn(_JEQ, SYS_CLONE3, jf=1), _insn(_RET, RET_ENOSYS)]
    program += _when(SYS_CLONE, 0, [_insn(_JSET, CLONE_NAMESPACE_FLAGS, jt=1), _insn(_RET, RET_ALLOW)])
    program += _when(SYS_IOCTL, 1, [_insn(_JEQ, TIOCSTI, jt=1), _insn(_JEQ, TIOCLINUX, jf=1)])
    # Calls that name another process: allowed on the caller itself only (pid or who 0).
    for number, index in ONLY_ON_SELF_X86_64.values():
        program += _when(number, index, [_insn(_JEQ, 0, jf=1), _insn(_RET, RET_ALLOW)])
    program += _socket_rules(network)
    program.append(_insn(_RET, RET_ALLOW))
    return b"".join(program)


def _when(number: int, index: int, test: list[bytes]) -> list[bytes]:
    """`if nr == number: load arg[index]; <test>; EPERM`, else on to the next rule.

    `test` lets the call through by returning `RET_ALLOW` or jumping one past the EPERM (to
    this block's `RET_ALLOW`), and refuses it by falling into the EPERM.
    """
    body = [_insn(_LD_ABS, _arg(index)), *test, _insn(_RET, RET_EPERM), _insn(_RET, RET_ALLOW)]
    return [_insn(_LD_ABS, _NR), _insn(_JEQ, number, jf=len(body)), *body, _insn(_LD_ABS, _NR)]


def _socket_rules(network: str) -> list[bytes]:
    """`socket()` and `socketpair()` by network mode (see the module docstring)."""
    # A pair of connected UNIX sockets (a pipe both ways), stream or seqpacket only: an
    # unbound datagram socket of a pair can `sendto` any datagram socket file by its path
    # (/dev/log, the journal's socket, a daemon's), which Landlock (before ABI 9) does not see.
    unix_pairs = _when(
        SYS_SOCKETPAIR,
        0,
        [
            _insn(_JEQ, socket.AF_UNIX, jf=4),  # another family: to the EPERM
            _insn(_LD_ABS, _arg(1)),
            _insn(_AND, SOCK_TYPE_MASK),  # without SOCK_NONBLOCK / SOCK_CLOEXEC
            _insn(_JEQ, socket.SOCK_STREAM, jt=2),  # to the RET_ALLOW past the EPERM
            _insn(_JEQ, socket.SOCK_SEQPACKET, jt=1),  # the same; anything else falls into the EPERM
        ],
    )
    if network == NETWORK_NONE:
        return [*unix_pairs, _insn(_JEQ, SYS_SOCKET, jf=1), _insn(_RET, RET_EPERM)]
    if network == NETWORK_OPEN:
        # IPv4, IPv6 (any type but raw and packet) and netlink (getaddrinfo asks it for the
        # host's addresses); never UNIX sockets, which reach host daemons through socket files.
        family = [
            _insn(_JEQ, socket.AF_INET, jt=2),
            _insn(_JEQ, socket.AF_INET6, jt=1),
            _insn(_JEQ, socket.AF_NETLINK, jt=5, jf=4),
            _insn(_LD_ABS, _arg(1)),
            _insn(_AND, SOCK_TYPE_MASK),
            _insn(_JEQ, socket.SOCK_RAW, jt=1),
            _insn(_JEQ, SOCK_PACKET, jf=1),
        ]
        return [*unix_pairs, *_when(SYS_SOCKET, 0, family)]
    # NETWORK_TCP_ONLY: TCP over IPv4/IPv6, and no TCP Fast Open (a send that connects
    # without connect(), which Landlock's connect rule does not see).
    tcp = [
        _insn(_JEQ, socket.AF_INET, jt=1),
        _insn(_JEQ, socket.AF_INET6, jf=7),
        _insn(_LD_ABS, _arg(1)),
        _insn(_AND, SOCK_TYPE_MASK),
        _insn(_JEQ, socket.SOCK_STREAM, jf=4),
        _insn(_LD_ABS, _arg(2)),
        _insn(_JEQ, 0, jt=1),
        _insn(_JEQ, IPPROTO_TCP, jf=1),
        _insn(_RET, RET_ALLOW),
    ]
    no_fast_open = [_insn(_JSET, MSG_FASTOPEN, jf=1)]
    return [
        *unix_pairs,
        *_when(SYS_SOCKET, 0, tcp),
        *_when(SYS_SENDTO, 3, no_fast_open),
        *_when(SYS_SENDMSG, 2, no_fast_open),
        *_when(SYS_SENDMMSG, 3, no_fast_open),
    ]
