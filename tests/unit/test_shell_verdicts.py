"""The shell matcher gives the verdicts recorded in `tests/fixtures/shell_verdicts.jsonl`.

The records were made by the matcher before its rewrite for readability (one reader, no
module caches): every command of the bypass corpora and the property tests, and a few
thousand generated ones, must still parse, resolve and trip the guards exactly as then.
See `tests/shell_verdicts.py` for what is recorded and how to record again.
"""

from __future__ import annotations

from helikon.core.governance.shell import ParseCache
from shell_verdicts import read_fixture, record


def test_every_recorded_command_gets_the_recorded_verdict() -> None:
    changed = [e["command"] for e in read_fixture() if record(e["command"]) != e]
    assert not changed, f"{len(changed)} verdicts changed, the first: {changed[:5]!r}"


def test_a_cached_read_gives_the_recorded_parse() -> None:
    cache = ParseCache(max_entries=64)
    for expected in read_fixture():
        command = expected["command"]
        first = cache.read(command)
        assert cache.read(command) == first
        assert (first.error or None) == expected["parse"].get("error"), command


def test_the_fixture_covers_the_corpora() -> None:
    recorded = {entry["command"] for entry in read_fixture()}
    assert len(recorded) > 4000
    assert "sudo rm -rf /" in recorded
