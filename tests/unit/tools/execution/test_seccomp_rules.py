"""The OS sandbox's seccomp filter, rule by rule: a table of calls and the verdict each gets.

Each network mode's compiled program runs in a BPF interpreter (`seccomp_interpreter`) over
the table; a second test shows the table takes every branch of every program and runs every
instruction, so no part of the filter is left untested (or dead). The numbers are written out here (x86-64,
`arch/x86/entry/syscalls/syscall_64.tbl`), not taken from the module under test, except
where a row is made for every entry of one of its tables.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass

import pytest

from helikon.tools.execution.os_sandbox._seccomp import (
    DENIED_X86_64,
    NETWORK_NONE,
    NETWORK_OPEN,
    NETWORK_TCP_ONLY,
    ONLY_ON_SELF_X86_64,
    build_filter,
)
from seccomp_interpreter import AUDIT_ARCH_I386, Trace, verdict

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="the filter has an x86-64 table only")

ALLOW = 0x7FFF0000
KILL = 0x80000000
EPERM = 0x00050000 | 1
ENOSYS = 0x00050000 | 38

X32 = 0x40000000
# x86-64 system call numbers.
READ, SOCKET, SENDTO, SENDMSG, SOCKETPAIR, CLONE, EXECVE, IOCTL, OPENAT = 0, 41, 44, 46, 53, 56, 59, 16, 257
SETPRIORITY, SCHED_SETAFFINITY, PRLIMIT64, SENDMMSG, CLONE3, MSEAL = 141, 203, 302, 307, 435, 462
# Socket families, types, flags and protocols.
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET = 1, 2, 10, 16, 17
STREAM, DGRAM, RAW, SEQPACKET, PACKET = 1, 2, 3, 5, 10
NONBLOCK, CLOEXEC = 0o4000, 0o2000000
FLAGS = (0, NONBLOCK, CLOEXEC, NONBLOCK | CLOEXEC)
TCP, UDP, SCTP = 6, 17, 132
MSG_DONTWAIT, MSG_NOSIGNAL, MSG_FASTOPEN = 0x40, 0x4000, 0x20000000
CLONE_NAMESPACES = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
SIGCHLD = 17
CLONE_THREAD_FLAGS = 0x003D0F00  # what pthread_create passes
TIOCSTI, TIOCLINUX, TCGETS, FIONREAD = 0x5412, 0x541C, 0x5401, 0x541B


@dataclass(frozen=True)
class Row:
    """One call and the verdict it must get."""

    why: str
    nr: int
    args: tuple[int, ...]
    expected: int
    arch: int = 0xC000003E


def _abi() -> list[Row]:
    return [
        Row("an i386 call (int 0x80) means another call there", READ, (), KILL, arch=AUDIT_ARCH_I386),
        Row("an i386 socketcall", 102, (), KILL, arch=AUDIT_ARCH_I386),
        Row("an x32 call", X32 | READ, (), KILL),
        Row("an x32 socket", X32 | SOCKET, (AF_INET, STREAM, 0), KILL),
        Row("read", READ, (), ALLOW),
        Row("openat", OPENAT, (), ALLOW),
        Row("execve", EXECVE, (), ALLOW),
        Row("mseal, the table's newest call", MSEAL, (), ALLOW),
        Row("the first number after the table", 463, (), ENOSYS),
        Row("a far newer number", 1000, (), ENOSYS),
        Row("the last number below the x32 bit", X32 - 1, (), ENOSYS),
    ]


def _denied() -> list[Row]:
    by_hand = {
        "ptrace": 101,
        "mount": 165,
        "init_module": 175,
        "keyctl": 250,
        "unshare": 272,
        "open_by_handle_at": 304,
        "setns": 308,
        "process_vm_readv": 310,
        "bpf": 321,
        "io_uring_setup": 425,
        "pidfd_getfd": 438,
        "shmget": 29,
    }
    rows = [Row(name, number, (), EPERM) for name, number in by_hand.items()]
    rows += [Row(f"{name} (DENIED_X86_64)", number, (), EPERM) for name, number in DENIED_X86_64.items()]
    return [*rows, Row("clone3: flags seccomp cannot read, so it does not exist", CLONE3, (), ENOSYS)]


def _by_argument() -> list[Row]:
    rows = [
        Row("clone: a fork", CLONE, (SIGCHLD,), ALLOW),
        Row("clone: a thread", CLONE, (CLONE_THREAD_FLAGS,), ALLOW),
        *(Row(f"clone: {flag}", CLONE, (bit | SIGCHLD,), EPERM) for flag, bit in CLONE_NAMESPACES.items()),
        Row("ioctl: TIOCSTI", IOCTL, (0, TIOCSTI), EPERM),
        Row("ioctl: TIOCLINUX", IOCTL, (0, TIOCLINUX), EPERM),
        Row("ioctl: TIOCSTI with the (ignored) high half set", IOCTL, (0, 1 << 32 | TIOCSTI), EPERM),
        Row("ioctl: TCGETS", IOCTL, (0, TCGETS), ALLOW),
        Row("ioctl: FIONREAD", IOCTL, (0, FIONREAD), ALLOW),
        Row("ioctl: fd TIOCSTI, request TCGETS (the request is argument 1)", IOCTL, (TIOCSTI, TCGETS), ALLOW),
        Row("prlimit64 on itself", PRLIMIT64, (0, 7), ALLOW),
        Row("prlimit64 on another process", PRLIMIT64, (1234, 7), EPERM),
        Row("setpriority(PRIO_PROCESS, itself)", SETPRIORITY, (0, 0, 10), ALLOW),
        Row("setpriority(PRIO_PROCESS, another)", SETPRIORITY, (0, 1234, 10), EPERM),
        Row("setpriority(PRIO_PGRP, its own group): `who` is argument 1", SETPRIORITY, (1, 0, 10), ALLOW),
        Row("sched_setaffinity on another process", SCHED_SETAFFINITY, (1, 8, 0), EPERM),
    ]
    for name, (number, index) in ONLY_ON_SELF_X86_64.items():
        itself, another = [1] * 6, [0] * 6
        itself[index], another[index] = 0, 1
        rows += [Row(f"{name} on itself", number, tuple(itself), ALLOW)]
        rows += [Row(f"{name} on pid 1", number, tuple(another), EPERM)]
    return rows


def _socketpairs() -> list[Row]:
    """The same in every network mode: a UNIX stream or seqpacket pair, nothing else."""
    rows: list[Row] = []
    for flags in FLAGS:
        rows += [
            Row(f"socketpair(AF_UNIX, STREAM|{flags:#o})", SOCKETPAIR, (AF_UNIX, STREAM | flags, 0), ALLOW),
            Row(
                f"socketpair(AF_UNIX, SEQPACKET|{flags:#o})",
                SOCKETPAIR,
                (AF_UNIX, SEQPACKET | flags, 0),
                ALLOW,
            ),
            Row(f"socketpair(AF_UNIX, DGRAM|{flags:#o})", SOCKETPAIR, (AF_UNIX, DGRAM | flags, 0), EPERM),
        ]
    return [
        *rows,
        Row("socketpair(AF_UNIX, RAW)", SOCKETPAIR, (AF_UNIX, RAW, 0), EPERM),
        Row("socketpair(AF_INET, STREAM)", SOCKETPAIR, (AF_INET, STREAM, 0), EPERM),
        Row("socketpair(AF_NETLINK, DGRAM)", SOCKETPAIR, (AF_NETLINK, DGRAM, 0), EPERM),
    ]


def _sends(fast_open: int) -> list[Row]:
    """TCP Fast Open sends get `fast_open`; every other send is allowed."""
    rows: list[Row] = []
    for flags, expected in ((0, ALLOW), (MSG_DONTWAIT | MSG_NOSIGNAL, ALLOW), (MSG_FASTOPEN, fast_open)):
        rows += [
            Row(f"sendto flags {flags:#x}", SENDTO, (3, 0, 1, flags, 0, 0), expected),
            Row(f"sendmsg flags {flags:#x}", SENDMSG, (3, 0, flags), expected),
            Row(f"sendmmsg flags {flags:#x}", SENDMMSG, (3, 0, 1, flags), expected),
        ]
    return [
        *rows,
        Row(
            "sendto: MSG_FASTOPEN with others",
            SENDTO,
            (3, 0, 1, MSG_FASTOPEN | MSG_NOSIGNAL, 0, 0),
            fast_open,
        ),
        Row("sendmsg: the flags are argument 2, not 3", SENDMSG, (3, 0, 0, MSG_FASTOPEN), ALLOW),
        Row("sendto: the flags are argument 3, not 2", SENDTO, (3, 0, MSG_FASTOPEN, 0, 0, 0), ALLOW),
    ]


def _sockets_none() -> list[Row]:
    return [
        Row(f"socket({family}, {kind})", SOCKET, (family, kind, 0), EPERM)
        for family in (AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET)
        for kind in (STREAM, DGRAM, RAW)
    ]


def _sockets_open() -> list[Row]:
    rows: list[Row] = []
    for family in (AF_INET, AF_INET6):
        for flags in FLAGS:
            rows += [
                Row(f"socket({family}, STREAM|{flags:#o})", SOCKET, (family, STREAM | flags, 0), ALLOW),
                Row(f"socket({family}, DGRAM|{flags:#o})", SOCKET, (family, DGRAM | flags, 0), ALLOW),
                Row(f"socket({family}, RAW|{flags:#o})", SOCKET, (family, RAW | flags, 1), EPERM),
                Row(f"socket({family}, SOCK_PACKET|{flags:#o})", SOCKET, (family, PACKET | flags, 0), EPERM),
            ]
    return [
        *rows,
        Row("socket(AF_NETLINK, RAW): getaddrinfo asks it", SOCKET, (AF_NETLINK, RAW, 0), ALLOW),
        Row("socket(AF_NETLINK, DGRAM)", SOCKET, (AF_NETLINK, DGRAM | CLOEXEC, 0), ALLOW),
        Row("socket(AF_UNIX, STREAM)", SOCKET, (AF_UNIX, STREAM, 0), EPERM),
        Row("socket(AF_UNIX, DGRAM)", SOCKET, (AF_UNIX, DGRAM, 0), EPERM),
        Row("socket(AF_PACKET, RAW)", SOCKET, (AF_PACKET, RAW, 0), EPERM),
    ]


def _sockets_tcp_only() -> list[Row]:
    rows: list[Row] = []
    for family in (AF_INET, AF_INET6):
        for flags in FLAGS:
            rows += [
                Row(f"socket({family}, STREAM|{flags:#o}, 0)", SOCKET, (family, STREAM | flags, 0), ALLOW),
                Row(
                    f"socket({family}, STREAM|{flags:#o}, TCP)", SOCKET, (family, STREAM | flags, TCP), ALLOW
                ),
                Row(f"socket({family}, DGRAM|{flags:#o})", SOCKET, (family, DGRAM | flags, 0), EPERM),
            ]
        rows += [
            Row(f"socket({family}, STREAM, SCTP)", SOCKET, (family, STREAM, SCTP), EPERM),
            Row(f"socket({family}, STREAM, UDP)", SOCKET, (family, STREAM, UDP), EPERM),
            Row(f"socket({family}, DGRAM, UDP)", SOCKET, (family, DGRAM, UDP), EPERM),
            Row(f"socket({family}, RAW, TCP)", SOCKET, (family, RAW, TCP), EPERM),
            Row(f"socket({family}, SEQPACKET, 0)", SOCKET, (family, SEQPACKET, 0), EPERM),
        ]
    return [
        *rows,
        Row("socket(AF_UNIX, STREAM)", SOCKET, (AF_UNIX, STREAM, 0), EPERM),
        Row("socket(AF_NETLINK, RAW)", SOCKET, (AF_NETLINK, RAW, 0), EPERM),
        Row("socket(AF_PACKET, RAW)", SOCKET, (AF_PACKET, RAW, 0), EPERM),
    ]


def _common() -> list[Row]:
    return [*_abi(), *_denied(), *_by_argument(), *_socketpairs()]


TABLE = {
    NETWORK_NONE: [*_common(), *_sockets_none(), *_sends(fast_open=ALLOW)],
    NETWORK_OPEN: [*_common(), *_sockets_open(), *_sends(fast_open=ALLOW)],
    NETWORK_TCP_ONLY: [*_common(), *_sockets_tcp_only(), *_sends(fast_open=EPERM)],
}

NAMES = {ALLOW: "ALLOW", KILL: "KILL", EPERM: "EPERM", ENOSYS: "ENOSYS"}


def _wrong(program: bytes, rows: list[Row]) -> list[str]:
    return [
        f"{row.why}: {NAMES.get(got, hex(got))}, not {NAMES[row.expected]}"
        for row in rows
        if (got := verdict(program, row.nr, row.args, arch=row.arch)) != row.expected
    ]


@pytest.mark.parametrize("network", sorted(TABLE))
def test_every_call_of_the_table_gets_its_verdict(network: str) -> None:
    assert _wrong(build_filter(network), TABLE[network]) == []


@pytest.mark.parametrize("network", sorted(TABLE))
def test_the_table_takes_every_branch_of_the_filter(network: str) -> None:
    program = build_filter(network)
    trace = Trace()
    for row in TABLE[network]:
        verdict(program, row.nr, row.args, arch=row.arch, trace=trace)
    assert trace.untaken(program) == []


def test_a_jump_gone_wrong_fails_the_table() -> None:
    # What a miscounted offset does: the socket rule's type check sends a UDP socket the
    # other way, and the table names the calls that now get through.
    program = bytearray(build_filter(NETWORK_TCP_ONLY))
    trace = Trace()
    verdict(bytes(program), SOCKET, (AF_INET, DGRAM, 0), trace=trace)
    at = 8 * max(index for index, _ in trace.jumps)  # the last jump a UDP socket takes
    program[at + 2], program[at + 3] = program[at + 3], program[at + 2]  # swap jt and jf
    wrong = _wrong(bytes(program), TABLE[NETWORK_TCP_ONLY])
    assert "socket(2, DGRAM|0o0): ALLOW, not EPERM" in wrong
