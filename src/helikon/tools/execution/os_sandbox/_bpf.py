"""A classic-BPF assembler whose jumps name labels: the seccomp filter is written with it.

A program is a list of instructions and `Label`s. A conditional jump names where it goes
when its test is true (`jt`) and when it is false (`jf`) by label, or `None` for the next
instruction; `assemble` counts the offsets. Inserting an instruction then moves no jump to
the wrong place, which with hand-counted offsets could turn a refusal into an allow.

`assemble` refuses (`ValueError`) a label defined twice, a jump to a label that is not
defined, one that goes backward (classic BPF jumps forward only), one to a label that ends
the program (no instruction there), and one farther than a jump's 8-bit offset reaches.

Example: `[load(NR), jeq(41, jf="other"), ret(RET_EPERM), Label("other"), ret(RET_ALLOW)]`
refuses system call 41 and allows every other one.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

# Opcodes (linux/bpf_common.h): the class | size | mode, or class | op | source.
LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS: A = the 32-bit word at offset k
JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K: A == k
JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K: A >= k
JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K: A & k != 0
AND_K = 0x54  # BPF_ALU | BPF_AND | BPF_K: A = A & k
RET_K = 0x06  # BPF_RET | BPF_K: return k

MAX_JUMP = 255  # a jump's offset is one byte


@dataclass(frozen=True, slots=True)
class Insn:
    """One instruction: its opcode, its constant, and the labels its jump goes to (None: the next)."""

    code: int
    k: int
    jt: str | None = None
    jf: str | None = None


@dataclass(frozen=True, slots=True)
class Label:
    """A name for the instruction that follows it."""

    name: str


def load(offset: int) -> Insn:
    """A = the 32-bit word at `offset` of the input (for seccomp: of `struct seccomp_data`)."""
    return Insn(LD_W_ABS, offset)


def jeq(k: int, jt: str | None = None, jf: str | None = None) -> Insn:
    """If A == k go to `jt`, else to `jf`."""
    return Insn(JEQ_K, k, jt, jf)


def jge(k: int, jt: str | None = None, jf: str | None = None) -> Insn:
    """If A >= k go to `jt`, else to `jf`."""
    return Insn(JGE_K, k, jt, jf)


def jset(k: int, jt: str | None = None, jf: str | None = None) -> Insn:
    """If A & k is not 0 go to `jt`, else to `jf`."""
    return Insn(JSET_K, k, jt, jf)


def and_(k: int) -> Insn:
    """A = A & k."""
    return Insn(AND_K, k)


def ret(k: int) -> Insn:
    """Stop and return `k` (for seccomp: the action)."""
    return Insn(RET_K, k)


def assemble(program: Sequence[Insn | Label]) -> bytes:
    """The program as packed `struct sock_filter`s, every label a jump names resolved to its offset."""
    where: dict[str, int] = {}  # label -> the index of the instruction it names
    count = 0
    for item in program:
        if isinstance(item, Label):
            if item.name in where:
                raise ValueError(f"BPF label {item.name!r} is defined twice")
            where[item.name] = count
        else:
            count += 1
    packed: list[bytes] = []
    for item in program:
        if isinstance(item, Insn):
            index = len(packed)
            jt = _offset(item.jt, index, where, count)
            jf = _offset(item.jf, index, where, count)
            packed.append(struct.pack("=HBBI", item.code, jt, jf, item.k))
    return b"".join(packed)


def _offset(label: str | None, index: int, where: dict[str, int], count: int) -> int:
    """How many instructions the jump at `index` to `label` skips."""
    if label is None:
        return 0
    if label not in where:
        raise ValueError(f"BPF jump at {index} to {label!r}: no such label")
    target = where[label]
    if target <= index:
        raise ValueError(f"BPF jump at {index} to {label!r} goes backward; classic BPF jumps forward only")
    if target == count:
        raise ValueError(
            f"BPF jump at {index} to {label!r}: the label ends the program, no instruction is there"
        )
    if target - index - 1 > MAX_JUMP:
        raise ValueError(
            f"BPF jump at {index} to {label!r} skips {target - index - 1} instructions; at most 255"
        )
    return target - index - 1


__all__ = ["Insn", "Label", "and_", "assemble", "jeq", "jge", "jset", "load", "ret"]
