"""A session declares `durable` and `supports_ids`; the runner reads them and never guesses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from helikon import LlmAgent, MemorySession, RunConfig, RunContext, UserError
from helikon.core.session import (
    ConversationSnapshot,
    SequenceId,
    Session,
    SessionEntry,
    SessionEvent,
    check_session,
)
from helikon.core.session.branches import Branching
from helikon.core.session.compaction import CompactingSession
from helikon.core.session.turn import is_durable
from helikon.runtime import AsyncioRunner
from helikon.sessions.postgres import PostgresSession
from helikon.sessions.redis import RedisSession
from helikon.sessions.sqlite import SqliteSession
from helikon.testing import MockModel, text_turn


class Undeclared:
    """The three methods of the protocol, and neither flag."""

    def __init__(self) -> None:
        self.inner = MemorySession()  # an `inner` is no declaration: the runner does not look for one

    async def append(self, events: Sequence[SessionEvent]) -> None:
        await self.inner.append(events)

    async def events(self, since: SequenceId | None = None) -> list[SessionEntry]:
        return await self.inner.events(since)

    async def snapshot(self) -> ConversationSnapshot:
        return await self.inner.snapshot()


class EventsOnly(Undeclared):
    """Declares a durable store whose `append` takes only the events."""

    durable = True
    supports_ids = False

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[dict[str, Any]] = []

    async def append(self, events: Sequence[SessionEvent], **kwargs: Any) -> None:
        self.calls.append(kwargs)
        await self.inner.append(events)


def agent() -> LlmAgent[None]:
    return LlmAgent(name="a", model=MockModel.with_scripts([text_turn("ok")]))


def ctx(session: Any) -> RunContext[None]:
    return RunContext.ephemeral(None).with_session(session)


@pytest.mark.parametrize("config", [None, RunConfig(durable=True), RunConfig(durable=False)])
async def test_a_session_that_declares_nothing_is_refused_with_what_to_declare(
    config: RunConfig | None,
) -> None:
    session = Undeclared()
    with pytest.raises(UserError, match="Undeclared does not declare durable and supports_ids") as caught:
        await AsyncioRunner[None]().run(agent(), "hi", ctx(session), config)
    assert "durable = False" in str(caught.value) and "supports_ids = True" in str(caught.value)
    assert len(session.inner) == 0  # refused before anything was read or written


def test_a_flag_that_is_not_a_bool_is_named() -> None:
    class Vague(Undeclared):
        durable = "yes"
        supports_ids = True

    with pytest.raises(UserError, match="Vague does not declare durable as a bool"):
        check_session(Vague())
    with pytest.raises(UserError, match="does not declare durable"):
        is_durable(Vague())  # pyright: ignore[reportArgumentType]


async def test_the_runner_follows_the_declarations_not_the_signature() -> None:
    session = EventsOnly()
    result = await AsyncioRunner[None]().run(agent(), "hi", ctx(session))
    assert result.final_output == "ok"
    kinds = [entry.event.type for entry in await session.events()]
    assert kinds[0] == "turn_opened" and kinds[-1] == "turn_closed"  # durable: written as it goes
    assert session.calls and all(call == {} for call in session.calls)  # no ids, no expected_seq


async def test_a_memory_session_subclass_inherits_the_flags_and_may_change_them() -> None:
    class Durable(MemorySession):
        __slots__ = ()
        durable = True

    session = Durable()
    await AsyncioRunner[None]().run(agent(), "hi", ctx(session))
    assert (await session.events())[0].event.type == "turn_opened"
    plain = MemorySession()
    await AsyncioRunner[None]().run(agent(), "hi", ctx(plain))
    assert "turn_opened" not in [e.event.type for e in await plain.events()]


def test_a_wrapper_declares_what_its_inner_session_does() -> None:
    model = MockModel.with_scripts([])
    wrapped = CompactingSession(EventsOnly(), model, threshold=100)
    assert (wrapped.durable, wrapped.supports_ids) == (True, False)
    memory = CompactingSession(MemorySession(), model, threshold=100)
    assert (memory.durable, memory.supports_ids) == (False, True)
    with pytest.raises(UserError, match="Undeclared does not declare durable and supports_ids"):
        CompactingSession(Undeclared(), model, threshold=100)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ("backend", "durable"),
    [(MemorySession, False), (SqliteSession, True), (PostgresSession, True), (RedisSession, True)],
)
def test_every_backend_declares_both_flags(backend: type[Session], durable: bool) -> None:
    assert (backend.durable, backend.supports_ids) == (durable, True)
    assert Session in backend.__mro__ and Branching in backend.__mro__  # Branching mixes into the protocol


async def test_the_objects_of_one_stored_log_declare_one_key(tmp_path: Any) -> None:
    from helikon.core.session import SharedLog
    from helikon.sessions.sqlite import SqliteDatabase

    db = await SqliteDatabase.open(tmp_path / "log.db")
    try:
        first = await SqliteSession.open(db, "chat")
        again = SqliteSession.open_without_migrate(db, "chat")
        other = SqliteSession.open_without_migrate(db, "other")
        assert isinstance(first, SharedLog)
        assert first.log_key == again.log_key == (db, "chat")
        assert other.log_key != first.log_key
        wrapped = CompactingSession(first, MockModel([]), threshold=1000)
        assert wrapped.log_key == first.log_key  # a wrapper writes its inner session's log
    finally:
        await db.aclose()
    memory = MemorySession()
    assert not isinstance(memory, SharedLog)  # known by the object itself
    assert CompactingSession(memory, MockModel([]), threshold=1000).log_key == (memory, "")
    assert not isinstance(Undeclared(), SharedLog)  # an `inner` attribute is no declaration
