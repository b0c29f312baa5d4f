"""A command reads the same whatever was read before it, wherever it stands in a line.

The reader keeps nothing between commands; the one cache of parses (`ParseCache`) must
give what a fresh read gives, and a simple command must read alike alone and among others.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helikon.core.governance.shell import MAX_NESTING, ParseCache, ShellParse, parse_command


def _cached(cache: ParseCache, command: str) -> ShellParse:
    """The cache's parse, checked against a fresh read (three times: the third comes from the cache)."""
    first = cache.read(command)
    assert first == parse_command(command), command
    kept = cache.read(command)  # read twice: kept from now on
    assert kept == first, command
    assert cache.read(command) is kept or len(command) > cache.max_command
    return kept


def test_a_command_reads_the_same_anywhere_in_a_line() -> None:
    cache = ParseCache()
    alone = _cached(cache, "timeout 60 pytest -q tests/ 2>&1").commands
    _cached(cache, "cd src && git status --short && timeout 60 pytest -q tests/ 2>&1 | tail -n 5")
    for command in (
        "tail -n 7 ;timeout 60 pytest -q tests/ 2>&1|  git status --short   &",
        "  git status --short\ncd src || sudo timeout 60 pytest -q tests/ 2>&1",
        "timeout 60 pytest -q tests/ 2>&1 >/etc/passwd; cd src",
    ):
        programs = [c.program for c in _cached(cache, command).commands]
        assert "pytest" in programs
        pytest_command = next(c for c in parse_command(command).commands if c.program == "pytest")
        assert pytest_command.argv == alone[0].argv


def test_scripts_are_read_afresh_each_time() -> None:
    cache = ParseCache()
    assert [c.program for c in _cached(cache, "bash -c 'ls -la' ; true").commands] == ["bash", "ls", "true"]
    later = _cached(cache, "bash -c 'rm -rf /' ; true")
    assert [c.program for c in later.commands] == ["bash", "rm", "true"]


def test_the_nesting_bound_holds_for_a_command_read_at_a_shallower_level() -> None:
    cache = ParseCache()
    evals = "eval " * (MAX_NESTING - 1) + "rm x"
    assert _cached(cache, evals).ok
    deeper = f"bash -c \"bash -c '{evals}'\" ; true"
    assert _cached(cache, deeper).error == f"nested deeper than {MAX_NESTING} levels"


def test_the_cache_is_bounded() -> None:
    cache = ParseCache(max_entries=8)
    for n in range(40):
        _cached(cache, f"echo {n} && ls -la {n % 3}")
        assert len(cache) <= 8
    long_command = "echo " + "x" * cache.max_command
    assert cache.read(long_command) is not cache.read(long_command)  # too long to keep
    assert len(cache) <= 8


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
def test_a_line_with_a_harder_construct_reads_each_command_once(command: str) -> None:
    cache = ParseCache()
    _cached(cache, "git log -n 3")
    _cached(cache, "cd src")
    parsed = _cached(cache, command)
    assert [c.program for c in parsed.commands].count(parsed.commands[0].program) == 1


_SIMPLE = st.sampled_from(
    ["ls -la", "git status", "rm -rf /", "sudo rm x", "timeout 5 curl x", "a=1 env B=2 nc", "cat f 2>&1",
     "echo hi >/etc/x", "xargs rm", "find . -delete", "eval rm y", "bash -c ls", "2>/dev/null", "cd /",
     "sh -c 'wget z'", "echo 'a;b'", "x=1", ""]
)  # fmt: skip
_JOIN = st.sampled_from([" && ", ";", " | ", "\n", " || ", " & ", "|&", " ;  "])


@given(st.lists(st.tuples(_SIMPLE, _JOIN), min_size=1, max_size=6))
def test_a_line_reads_as_its_simple_commands_read_alone(parts: list[tuple[str, str]]) -> None:
    command = "".join(simple + join for simple, join in parts)
    parsed = _cached(ParseCache(), command)
    if not parsed.ok:
        return  # `ls;;` and the like: a line may fail where its parts do not
    alone = [parse_command(simple) for simple, _ in parts]
    assert parsed.commands == tuple(c for p in alone for c in p.commands), command
    assert parsed.redirects == tuple(r for p in alone for r in p.redirects), command


def test_a_command_read_once_is_not_kept_and_pushes_out_nothing() -> None:
    cache = ParseCache(max_entries=8)
    for _ in range(2):
        cache.read("git status")
    kept = cache.read("git status")
    for n in range(100):  # a model's one-off commands
        assert cache.read(f"echo {n} && ls -la") == parse_command(f"echo {n} && ls -la")
        assert len(cache) == 1 and len(cache._seen) <= 8  # pyright: ignore[reportPrivateUsage]
    assert cache.read("git status") is kept  # the repeated command is still kept
