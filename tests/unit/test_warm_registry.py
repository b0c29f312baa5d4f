"""The in-process registry of projections (`helikon.core.session._log_cache.WARM`): what it hands out."""

from __future__ import annotations

from helikon.core.items import TextPart
from helikon.core.session import SequenceId, SessionEntry, UserMessageEvent, project
from helikon.core.session._log_cache import LogCache, WarmProjections, start_warm

LOG = [UserMessageEvent(content=(TextPart(text=f"m{i}"),)) for i in range(10)]  # one stored log


def entries(start: int, stop: int) -> list[SessionEntry]:
    return [SessionEntry(SequenceId(i), LOG[i]) for i in range(start, stop)]


def test_a_remembered_projection_is_recalled_only_as_of_what_it_folded() -> None:
    store, registry = object(), WarmProjections(size=2)
    log = LogCache()
    log.extend(entries(0, 5))
    assert log.snapshot() is not None
    registry.remember(store, "s", log)
    warm = registry.recall(store, "s")
    assert warm is not None and warm.as_of_seq == 4
    assert registry.recall(object(), "s") is None  # another store

    # A new cache continues it with the fetched tail (the event at as_of_seq first, checked).
    fresh = LogCache()
    assert start_warm(fresh, warm, entries(4, 7))
    assert fresh.snapshot() == project([e.event for e in entries(0, 7)])
    assert not start_warm(LogCache(), warm, entries(5, 7))  # the folded event is not there

    # Its owner folded on without remembering: not handed out until it remembers again.
    log.extend(entries(5, 6))
    log.snapshot()
    assert registry.recall(store, "s") is None
    registry.remember(store, "s", log)
    again = registry.recall(store, "s")
    assert again is not None and again.as_of_seq == 5

    # Bounded: the least recently used session goes.
    for name in ("t", "u"):
        other = LogCache()
        other.extend(entries(0, 1))
        other.snapshot()
        registry.remember(store, name, other)
    assert registry.recall(store, "s") is None
