"""Run a script in a child process whose kernel refuses one system call, as a kernel without a feature would.

A seccomp filter installed first in the child makes the call fail with `errno` (`ENOSYS`:
"not built in", `EPERM`: refused by a container's profile), or *pretend to succeed* without
doing anything (errno 0). The filter is inherited by everything the child starts, as a
real kernel's refusal would be. The OS sandbox's fail-closed tests use it, and the tests of
the tier a kernel without pid namespaces gets.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

_HERE = str(Path(__file__).parent)

_REFUSE = textwrap.dedent(
    """
    import ctypes, sys
    from helikon.tools.execution.os_sandbox._bpf import Label, assemble, jeq, load, ret
    from helikon.tools.execution.os_sandbox._seccomp import RET_ALLOW

    number, errno, index, value = (int(arg) for arg in sys.argv[1:5])
    del sys.argv[1:5]
    match = [jeq(number, jf="allow")]
    if index >= 0:  # only when argument `index` is `value` (prctl's option, a call's flags)
        match += [load(16 + 8 * index), jeq(value, jf="allow")]
    program = assemble([load(0), *match, ret(0x00050000 | errno), Label("allow"), ret(RET_ALLOW)])

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(program)
    assert libc.prctl(38, 1, 0, 0, 0) == 0
    fprog = Prog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    assert libc.syscall(317, 1, 0, ctypes.byref(fprog)) == 0  # seccomp(SECCOMP_SET_MODE_FILTER)
    del buffer, fprog, program
    """
)


def run_refusing(
    script: str, syscall: int, errno: int, *args: str, arg: tuple[int, int] = (-1, 0), timeout: float = 120
) -> str:
    """What `script` prints, run with `args` in a process where `syscall` returns `-errno`.

    With `arg=(index, value)`, only the calls whose argument `index` (low 32 bits) is
    `value` are refused. The script can import `exec_helpers`.
    """
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _REFUSE + script,
            str(syscall),
            str(errno),
            *(str(part) for part in arg),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([_HERE, *sys.path])},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
