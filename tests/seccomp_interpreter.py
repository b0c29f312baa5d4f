"""A classic-BPF interpreter for seccomp filters, for the tests: the verdict a filter gives one system call.

It runs the instructions seccomp filters are written in (`LD|W|ABS`; `JEQ`, `JGT`, `JGE`,
`JSET` against a constant; `AND` with a constant; `RET` a constant) over a
`struct seccomp_data`, as the kernel does, and records in a `Trace` which instructions ran
and which way each jump went, so a test can show that its table of calls took every branch.
The opcodes are written out here from `linux/bpf_common.h`, not taken from the assembler
under test; `test_seccomp_in_kernel.py` checks this interpreter against the kernel.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_I386 = 0x40000003

SOCK_FILTER = struct.Struct("=HBBI")  # code, jt, jf, k
SECCOMP_DATA = struct.Struct("=iIQ6Q")  # nr, arch, instruction_pointer, args[6]

# class | size | mode, or class | op | source (BPF_K, a constant: 0x00)
_LD_W_ABS = 0x00 | 0x00 | 0x20
_ALU_AND_K = 0x04 | 0x50
_RET_K = 0x06
_JUMPS: dict[int, Callable[[int, int], bool]] = {
    0x05 | 0x10: lambda a, k: a == k,  # JEQ
    0x05 | 0x20: lambda a, k: a > k,  # JGT
    0x05 | 0x30: lambda a, k: a >= k,  # JGE
    0x05 | 0x40: lambda a, k: a & k != 0,  # JSET
}


@dataclass
class Trace:
    """What ran: the index of every instruction executed, and (index, taken) for every jump."""

    executed: set[int] = field(default_factory=set)
    jumps: set[tuple[int, bool]] = field(default_factory=set)

    def untaken(self, program: bytes) -> list[str]:
        """Every instruction of `program` that never ran, and every jump branch never taken."""
        missing: list[str] = []
        for index, (code, _, _, k) in enumerate(instructions(program)):
            if index not in self.executed:
                missing.append(f"instruction {index} ({code:#x}, k={k:#x}) never ran")
            elif code in _JUMPS:
                missing += [
                    f"jump {index} ({code:#x}, k={k:#x}) never went the {'true' if way else 'false'} way"
                    for way in (True, False)
                    if (index, way) not in self.jumps
                ]
        return missing


def instructions(program: bytes) -> list[tuple[int, int, int, int]]:
    """The program's `struct sock_filter`s as (code, jt, jf, k)."""
    assert len(program) % SOCK_FILTER.size == 0, "a program is a whole number of instructions"
    return [SOCK_FILTER.unpack_from(program, at) for at in range(0, len(program), SOCK_FILTER.size)]


def verdict(
    program: bytes,
    nr: int,
    args: Sequence[int] = (),
    *,
    arch: int = AUDIT_ARCH_X86_64,
    trace: Trace | None = None,
) -> int:
    """The action `program` returns for system call `nr` with `args` (each 64 bits) on `arch`."""
    data = SECCOMP_DATA.pack(nr, arch, 0, *args, *[0] * (6 - len(args)))
    code_of = instructions(program)
    trace = trace if trace is not None else Trace()
    a = 0
    pc = 0
    while True:
        assert 0 <= pc < len(code_of), f"the program ran off its end (to {pc})"
        code, jt, jf, k = code_of[pc]
        trace.executed.add(pc)
        if code == _RET_K:
            return k
        if code == _LD_W_ABS:
            # The kernel accepts only aligned loads inside seccomp_data (seccomp_check_filter).
            assert k % 4 == 0 and k + 4 <= SECCOMP_DATA.size, f"load at {pc} of offset {k}"
            (a,) = struct.unpack_from("=I", data, k)
            pc += 1
        elif code == _ALU_AND_K:
            a &= k
            pc += 1
        elif code in _JUMPS:
            taken = _JUMPS[code](a, k)
            trace.jumps.add((pc, taken))
            pc += 1 + (jt if taken else jf)
        else:
            raise AssertionError(f"instruction {pc}: opcode {code:#x} is not one a seccomp filter here uses")
