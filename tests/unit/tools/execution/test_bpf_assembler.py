"""The BPF assembler counts each jump from its label, and refuses a program whose jumps cannot be right."""

from __future__ import annotations

import struct

import pytest

from helikon.tools.execution.os_sandbox._bpf import JEQ_K, Insn, Label, assemble, jeq, jge, load, ret
from seccomp_interpreter import instructions, verdict

ALLOW, EPERM = 0x7FFF0000, 0x00050001


def test_a_jump_skips_what_lies_between_it_and_its_label() -> None:
    program = assemble(
        [
            load(0),
            jeq(41, jt="deny", jf="allow"),
            ret(EPERM),
            Label("deny"),
            ret(EPERM),
            Label("allow"),
            ret(ALLOW),
        ]
    )
    assert instructions(program)[1] == (JEQ_K, 1, 2, 41)
    assert (verdict(program, 41), verdict(program, 0)) == (EPERM, ALLOW)


def test_no_label_is_the_next_instruction() -> None:
    assert instructions(assemble([jeq(1), ret(EPERM)]))[0] == (JEQ_K, 0, 0, 1)


def test_an_instruction_inserted_before_a_label_moves_no_jump_to_the_wrong_place() -> None:
    rule = [load(0), jeq(41, jf="other"), ret(EPERM), Label("other"), ret(ALLOW)]
    longer = [load(0), jeq(41, jf="other"), load(0), ret(EPERM), Label("other"), ret(ALLOW)]
    assert verdict(assemble(rule), 0) == verdict(assemble(longer), 0) == ALLOW


def test_two_labels_may_name_one_instruction() -> None:
    program = assemble([jeq(1, jt="a", jf="b"), Label("a"), Label("b"), ret(ALLOW)])
    assert instructions(program)[0] == (JEQ_K, 0, 0, 1)


def test_the_farthest_jump_is_255_instructions() -> None:
    program = assemble([jge(0, jt="far"), *[ret(EPERM)] * 255, Label("far"), ret(ALLOW)])
    assert instructions(program)[0][1] == 255
    with pytest.raises(ValueError, match="skips 256 instructions; at most 255"):
        assemble([jge(0, jt="far"), *[ret(EPERM)] * 256, Label("far"), ret(ALLOW)])


@pytest.mark.parametrize(
    ("program", "error"),
    [
        ([jeq(1, jf="nowhere"), ret(EPERM)], "no such label"),
        ([Label("a"), ret(ALLOW), Label("a"), ret(ALLOW)], "defined twice"),
        ([load(0), Label("back"), jeq(1, jt="back"), ret(ALLOW)], "goes backward"),
        ([Label("top"), jeq(1, jt="top"), ret(ALLOW)], "goes backward"),
        ([jeq(1, jt="end"), ret(ALLOW), Label("end")], "ends the program"),
    ],
    ids=["unknown label", "duplicate label", "backward jump", "jump to itself", "label past the end"],
)
def test_a_program_whose_jumps_cannot_be_right_is_refused(program: list[Insn | Label], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        assemble(program)


def test_an_instruction_is_a_packed_sock_filter() -> None:
    assert assemble([ret(ALLOW)]) == struct.pack("=HBBI", 0x06, 0, 0, ALLOW)
