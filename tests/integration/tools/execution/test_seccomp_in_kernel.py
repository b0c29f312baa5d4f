"""The seccomp filter loaded in the kernel gives each call the verdict the tests' BPF interpreter gives.

So the interpreter the rule table runs in (`tests/unit/tools/execution/test_seccomp_rules.py`)
is the kernel's reading of the program. A child process loads each network mode's filter
(`no_new_privs`, then `seccomp`) and makes calls whose refusal is harmless and whose
allowance fails harmlessly (a bad descriptor, a NULL pointer, a pid that is not there);
the errno each gets is the kernel's verdict.
"""

from __future__ import annotations

import errno
import json
import platform
import signal
import subprocess
import sys
import textwrap

import pytest

from helikon.tools.execution.os_sandbox._seccomp import (
    NETWORK_NONE,
    NETWORK_OPEN,
    NETWORK_TCP_ONLY,
    build_filter,
)
from seccomp_interpreter import verdict

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(platform.machine() != "x86_64", reason="the filter has an x86-64 table only"),
]

ALLOW, KILL = 0x7FFF0000, 0x80000000
EPERM, ENOSYS = 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS

CASES = [
    ("read(-1)", 0, (-1, 0, 0)),
    ("socket(AF_INET, STREAM)", 41, (2, 1, 0)),
    ("socket(AF_INET6, STREAM|NONBLOCK, TCP)", 41, (10, 1 | 0o4000, 6)),
    ("socket(AF_INET, STREAM, SCTP)", 41, (2, 1, 132)),
    ("socket(AF_INET, DGRAM)", 41, (2, 2, 0)),
    ("socket(AF_INET6, DGRAM|CLOEXEC)", 41, (10, 2 | 0o2000000, 0)),
    ("socket(AF_UNIX, STREAM)", 41, (1, 1, 0)),
    ("socket(AF_NETLINK, RAW)", 41, (16, 3, 0)),
    ("socket(AF_INET, RAW|NONBLOCK, ICMP)", 41, (2, 3 | 0o4000, 1)),
    ("socketpair(AF_UNIX, STREAM|CLOEXEC, NULL)", 53, (1, 1 | 0o2000000, 0, 0)),
    ("socketpair(AF_UNIX, DGRAM, NULL)", 53, (1, 2, 0, 0)),
    ("socketpair(AF_INET, STREAM, NULL)", 53, (2, 1, 0, 0)),
    ("sendto(-1, flags 0)", 44, (-1, 0, 0, 0, 0, 0)),
    ("sendto(-1, MSG_FASTOPEN)", 44, (-1, 0, 0, 0x20000000, 0, 0)),
    ("sendmsg(-1, MSG_FASTOPEN)", 46, (-1, 0, 0x20000000)),
    ("ioctl(-1, TIOCSTI)", 16, (-1, 0x5412, 0)),
    ("ioctl(-1, TCGETS)", 16, (-1, 0x5401, 0)),
    ("prlimit64(another pid, NOFILE, NULL, NULL)", 302, (999_999, 7, 0, 0)),
    ("prlimit64(itself, NOFILE, NULL, NULL)", 302, (0, 7, 0, 0)),
    ("setpriority(PRIO_PROCESS, another pid)", 141, (0, 999_999, 0)),
    ("unshare(0)", 272, (0,)),
    ("ptrace(an unknown request)", 101, (0x7FFF, 0, 0, 0)),
    ("clone3(NULL, 0)", 435, (0, 0)),
    ("a number past the table", 1000, ()),
]

_LOAD = """
import ctypes, json, sys

class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

libc = ctypes.CDLL(None, use_errno=True)
program = bytes.fromhex(sys.argv[1])
buffer = ctypes.create_string_buffer(program, len(program))
prog = Prog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
assert libc.prctl(38, 1, 0, 0, 0) == 0, "PR_SET_NO_NEW_PRIVS"
assert libc.syscall(317, 1, 0, ctypes.byref(prog)) == 0, "seccomp(SECCOMP_SET_MODE_FILTER)"
"""

_CALLS = """
results = []
for nr, args in json.loads(sys.argv[2]):
    ctypes.set_errno(0)
    done = libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(arg) for arg in args))
    results.append(0 if done >= 0 else ctypes.get_errno())
print(json.dumps(results))
"""


def _in_the_kernel(program: bytes, script: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", textwrap.dedent(_LOAD + script), program.hex(), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _unsigned(arg: int) -> int:
    return arg & 0xFFFF_FFFF_FFFF_FFFF


@pytest.mark.parametrize("network", [NETWORK_NONE, NETWORK_TCP_ONLY, NETWORK_OPEN])
def test_the_kernel_gives_each_call_the_interpreters_verdict(network: str) -> None:
    program = build_filter(network)
    done = _in_the_kernel(program, _CALLS, json.dumps([[nr, list(args)] for _, nr, args in CASES]))
    assert done.returncode == 0, done.stderr
    disagree: list[str] = []
    for (why, nr, args), got in zip(CASES, json.loads(done.stdout), strict=True):
        expected = verdict(program, nr, [_unsigned(arg) for arg in args])
        if expected == ALLOW:
            agrees = got not in (errno.EPERM, errno.ENOSYS)
        else:
            agrees = expected in (EPERM, ENOSYS) and got == expected & 0xFFFF
        if not agrees:
            disagree.append(f"{why}: the interpreter says {expected:#x}, the kernel errno {got}")
    assert disagree == []


def test_a_call_through_another_abi_kills_the_process_in_the_kernel_as_in_the_interpreter() -> None:
    program = build_filter(NETWORK_OPEN)
    x32_getpid = 0x40000000 | 39
    assert verdict(program, x32_getpid) == KILL
    done = _in_the_kernel(program, f"libc.syscall(ctypes.c_long({x32_getpid}))\nprint('survived')")
    assert done.returncode == -signal.SIGSYS, (done.returncode, done.stdout, done.stderr)
