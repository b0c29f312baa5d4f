"""The fast reader keeps each simple command it has read: a kept one must read as a fresh one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helikon.core.governance.shell import MAX_NESTING, ShellParse, _parse_cached, parse_command
from helikon.core.governance.shell import _lex as _shell_lex
from helikon.core.governance.shell._parse import Parser


def _fresh(command: str) -> ShellParse:
    """The parse with no simple command kept from before (and the full reader's, compared)."""
    saved = [dict(table) for table in _shell_lex._SEGMENTS_SEEN]
    for table in _shell_lex._SEGMENTS_SEEN:
        table.clear()
    try:
        _parse_cached.cache_clear()
        fresh = parse_command(command)
    finally:
        for table, before in zip(_shell_lex._SEGMENTS_SEEN, saved, strict=True):
            table.clear()
            table.update(before)
        _parse_cached.cache_clear()
    Parser.fast = False
    try:
        full = parse_command(command)
    finally:
        Parser.fast = True
        _parse_cached.cache_clear()
    assert fresh == full, command
    return fresh


@pytest.fixture(autouse=True)
def _no_cached_parses() -> None:
    _parse_cached.cache_clear()  # each parse below reads its command, not a cached result


def test_a_kept_command_reads_the_same_anywhere_in_a_line() -> None:
    parse_command("cd src && git status --short && timeout 60 pytest -q tests/ 2>&1 | tail -n 5")
    assert "timeout 60 pytest -q tests/ 2>&1" in _shell_lex._SEGMENTS_SEEN[0]
    for command in (
        "tail -n 7 ;timeout 60 pytest -q tests/ 2>&1|  git status --short   &",
        "  git status --short\ncd src || sudo timeout 60 pytest -q tests/ 2>&1",
        "timeout 60 pytest -q tests/ 2>&1 >/etc/passwd; cd src",
    ):
        _parse_cached.cache_clear()
        assert parse_command(command) == _fresh(command)


def test_quoted_text_is_never_kept_so_scripts_are_always_read() -> None:
    assert [c.program for c in parse_command("bash -c 'ls -la' ; true").commands] == ["bash", "ls", "true"]
    later = parse_command("bash -c 'rm -rf /' ; true")
    assert [c.program for c in later.commands] == ["bash", "rm", "true"]
    assert not any("\\" in key for table in _shell_lex._SEGMENTS_SEEN for key in table)


def test_the_nesting_bound_holds_for_a_command_kept_at_a_shallower_level() -> None:
    evals = "eval " * (MAX_NESTING - 1) + "rm x"
    assert parse_command(evals).ok  # kept at level 0
    deeper = f"bash -c \"bash -c '{evals}'\" ; true"
    assert parse_command(deeper).error == f"nested deeper than {MAX_NESTING} levels"
    assert _fresh(deeper).error == parse_command(deeper).error


def test_the_table_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_shell_lex, "_SEGMENTS_SEEN_MAX", 8)
    for n in range(40):
        parse_command(f"echo {n} && ls -la {n % 3}")
        assert len(_shell_lex._SEGMENTS_SEEN[0]) <= 8
    assert parse_command("echo 1 && ls -la 1") == _fresh("echo 1 && ls -la 1")


@pytest.mark.parametrize(
    "command",
    [
        "git log -n 3 && if true; then rm x; fi",  # a reserved word in the second command
        "git log -n 3 ; ls # rm -rf /",  # a comment
        "cd src && a[1]=x rm y",  # an assignment with a subscript
        "echo hi | rm {a,b} && ls",  # a brace list
        "bash -c 'ls -la' && if true; then rm x; fi",  # after a script read one level down
    ],
)
def test_a_line_declined_midway_reads_as_the_full_reader_reads_it(command: str) -> None:
    # The first commands are resolved (and kept) before a later one makes the fast path
    # decline: what they added is taken back, and the full reader reads the whole line.
    parse_command("git log -n 3")
    parse_command("cd src")
    parsed = parse_command(command)
    assert parsed == _fresh(command)
    assert [c.program for c in parsed.commands].count(parsed.commands[0].program) == 1


_SIMPLE = st.sampled_from(
    ["ls -la", "git status", "rm -rf /", "sudo rm x", "timeout 5 curl x", "a=1 env B=2 nc", "cat f 2>&1",
     "echo hi >/etc/x", "xargs rm", "find . -delete", "eval rm y", "bash -c ls", "2>/dev/null", "cd /",
     "sh -c 'wget z'", "echo 'a;b'", "x=1", ""]
)  # fmt: skip
_JOIN = st.sampled_from([" && ", ";", " | ", "\n", " || ", " & ", "|&", " ;  "])


@given(st.lists(st.tuples(_SIMPLE, _JOIN), min_size=1, max_size=6))
def test_kept_commands_agree_with_fresh_reads(parts: list[tuple[str, str]]) -> None:
    command = "".join(simple + join for simple, join in parts)
    _parse_cached.cache_clear()
    assert parse_command(command) == _fresh(command), command
