"""`SwarmAgent`: a pool of `LlmAgent`s with handoffs between every pair.

Each member gets a `transfer_to_<slug>` tool for every other member; the run is the
ordinary handoff-driven loop, starting at the entry member and ending the moment the
active member answers instead of handing off. `max_handoffs` bounds a swarm that keeps
passing the conversation around (`RunConfig.max_agent_depth` is the hard bound under it).

Example:
    ```python
    from helikon import LlmAgent, SwarmAgent
    from helikon.testing import MockModel, text_turn, tool_call_turn

    triage = LlmAgent(
        name="triage",
        model=MockModel.with_scripts([tool_call_turn("transfer_to_budgeting", {})]),
    )
    budgeting = LlmAgent(
        name="budgeting",
        description="Monthly budgets and cutting spending.",
        model=MockModel.with_scripts([text_turn("Cut dining out by a third.")]),
    )
    swarm = SwarmAgent(name="support", members=[triage, budgeting], max_handoffs=4)
    # or in the builder form: SwarmAgent.builder().name("support").member(triage)...build()
    assert swarm.run_sync("I overspend every month").final_output == "Cut dining out by a third."
    ```
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Never, Self, TypeVar

from .._internal.sync import run_sync
from ..agent import LlmAgent
from ..context import RunConfig, RunContext
from ..events import AgentError, AgentEvent, AgentUpdated, HandoffItem, RunFailed, RunStarted, TokenUsage
from ..exceptions import UserError
from ..handoff import Handoff
from ..input import RunInput, to_agent_input
from ..result import RunResult, RunStream
from ..run.sink import forward
from ..session.turn import in_turn, needs_turn, on_session

if TYPE_CHECKING:
    from ..approvals import Approver, Decision
    from ..input import AgentInput
    from ..run.sink import EventSink
    from ..session import Session

Ctx = TypeVar("Ctx")


class SwarmBuildError(UserError):
    """A swarm that cannot work: no members, two with one name, or an unknown entry."""


class SwarmAgent(Generic[Ctx]):
    """A pool of `LlmAgent` members with full-mesh handoffs; the first to answer wins.

    Args:
        name: The swarm's name.
        members: The `LlmAgent`s (unique names). Each keeps its own tools and handoffs and
            gains a transfer tool to every other member.
        description: What the swarm does (for agents that hand off to it).
        entry: The member that takes the first turn; the first member by default.
        max_handoffs: Fail with `MaxHandoffsExceeded` once the conversation has been
            handed off more than this many times; unbounded (but for
            `RunConfig.max_agent_depth`) by default.

    Raises:
        SwarmBuildError: No members, two members with one name, or an unknown `entry`.
    """

    __slots__ = ("description", "entry", "max_handoffs", "members", "name", "run_config")

    def __init__(
        self,
        *,
        name: str,
        members: Sequence[LlmAgent[Ctx]],
        description: str = "",
        entry: str | None = None,
        max_handoffs: int | None = None,
        run_config: RunConfig | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise SwarmBuildError(f"SwarmAgent(name={name!r}): give the swarm a non-empty name")
        if not members:
            raise SwarmBuildError(f"SwarmAgent({name!r}) has no members: add at least one LlmAgent")
        names: list[str] = []
        for member in members:
            if not isinstance(member, LlmAgent):
                raise SwarmBuildError(
                    f"SwarmAgent({name!r}): {member!r} is not an LlmAgent (only LlmAgents can hand off)"
                )
            if member.name in names:
                raise SwarmBuildError(f"SwarmAgent({name!r}): two members are named {member.name!r}")
            names.append(member.name)
        if entry is not None and entry not in names:
            raise SwarmBuildError(f"SwarmAgent({name!r}): entry {entry!r} is not a member (members: {names})")
        if max_handoffs is not None and (
            isinstance(max_handoffs, bool) or not isinstance(max_handoffs, int) or max_handoffs < 0
        ):
            raise SwarmBuildError(f"SwarmAgent(max_handoffs={max_handoffs!r}): give a count >= 0, or None")
        self.name = name
        self.description = description
        self.members = _mesh(members)
        self.entry = entry if entry is not None else names[0]
        self.max_handoffs = max_handoffs
        self.run_config = run_config or RunConfig()

    @staticmethod
    def builder() -> SwarmBuilder[Any]:
        """Start building a swarm: `.name()`, `.member()`..., then `.build()`."""
        return SwarmBuilder()

    def __repr__(self) -> str:
        return f"SwarmAgent(name={self.name!r}, members={list(self.members)}, entry={self.entry!r})"

    def run(
        self,
        input: RunInput,
        *misplaced: Never,  # run(ctx, input), context first: an error that shows the right call
        context: RunContext[Ctx] | None = None,
        config: RunConfig | None = None,
        session: Session | None = None,
    ) -> RunStream:
        """Run the swarm from its entry member; the stream is the handoff chain's events.

        `session` (or a durable session on the context) is read and written once for the
        swarm, as `LlmAgent.run` says.
        """
        ctx: RunContext[Any] = context if context is not None else RunContext.ephemeral(None)
        if session is not None:
            ctx = on_session(ctx, session)
        given = to_agent_input(input, *misplaced)
        if needs_turn(ctx, session is not None):
            return RunStream(drive=in_turn(self, given, ctx, config or self.run_config), agent=self)
        return RunStream(self._events(given, ctx, config or self.run_config), agent=self, input=given)

    def drive(
        self, input: AgentInput, context: RunContext[Ctx], config: RunConfig | None, sink: EventSink
    ) -> Coroutine[Any, Any, None]:
        """The run itself, its events written to `sink`: what a runner (and `run`) calls."""
        return forward(self._events(input, context, config or self.run_config), sink)

    def run_sync(
        self,
        input: RunInput,
        *misplaced: Never,
        context: RunContext[Ctx] | None = None,
        config: RunConfig | None = None,
        session: Session | None = None,
    ) -> RunResult[str]:
        """`run` to completion from synchronous code (on the thread's loop; not inside a running one)."""
        return run_sync(lambda: self.run(input, *misplaced, context=context, config=config, session=session))

    def resume(
        self,
        session: Session,
        decisions: Mapping[str, Decision] | None = None,
        *,
        deny_rest: bool = False,
        by: Approver = None,
        context: RunContext[Ctx] | None = None,
        config: RunConfig | None = None,
    ) -> RunStream[str]:
        """Decide the requests a member's paused run waits on and go on with it (see `LlmAgent.resume`).

        The swarm's run is its entry member's, handing off: the entry member resumes it,
        and the member that paused goes on where it stopped.
        """
        entry = self.members[self.entry]
        return entry.resume(
            session, decisions, deny_rest=deny_rest, by=by, context=context, config=config or self.run_config
        )

    async def _events(
        self, input: AgentInput, ctx: RunContext[Any], config: RunConfig
    ) -> AsyncIterator[AgentEvent]:
        yield RunStarted(agent=self.name)
        yield AgentUpdated(agent=self.entry)
        limit = self.max_handoffs
        handoffs = 0
        events = self.members[self.entry].run(input, context=ctx, config=config).__aiter__()
        try:
            async for event in events:
                if isinstance(event, RunStarted):
                    continue  # the swarm's own RunStarted stands for the run
                if isinstance(event, HandoffItem):
                    handoffs += 1
                    if limit is not None and handoffs > limit:
                        error = AgentError(
                            kind="max_handoffs_exceeded",
                            message=f"swarm {self.name!r}: more than max_handoffs={limit} handoffs",
                            limit=limit,
                        )
                        yield RunFailed(error=error, usage=TokenUsage())
                        return
                yield event
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()  # stops the active member's run (and its model stream) now


class SwarmBuilder(Generic[Ctx]):
    """Collects a swarm's keywords one by one; `build()` calls `SwarmAgent(...)`, which checks them.

    Example:
        ```python
        from helikon import LlmAgent, SwarmAgent
        from helikon.testing import MockModel, text_turn

        triage = LlmAgent(name="triage", model=MockModel.with_scripts([text_turn("Hi!")]))
        investing = LlmAgent(name="investing", model=MockModel.with_scripts([]))
        swarm = (
            SwarmAgent.builder()
            .name("support_swarm")
            .description("Personal-finance support.")
            .member(triage)
            .member(investing)
            .entry("triage")
            .max_handoffs(6)
            .build()
        )
        assert list(swarm.members) == ["triage", "investing"] and swarm.max_handoffs == 6
        ```
    """

    __slots__ = ("_fields", "_members")

    def __init__(self) -> None:
        self._fields: dict[str, Any] = {}
        self._members: list[LlmAgent[Ctx]] = []

    def name(self, name: str) -> Self:
        """The swarm's name (required)."""
        self._fields["name"] = name
        return self

    def description(self, description: str) -> Self:
        """What the swarm does."""
        self._fields["description"] = description
        return self

    def member(self, agent: LlmAgent[Ctx]) -> Self:
        """Add a member; the first one added is the entry unless `entry` says otherwise."""
        self._members.append(agent)
        return self

    def members(self, agents: Sequence[LlmAgent[Ctx]]) -> Self:
        """Add several members, in order."""
        self._members.extend(agents)
        return self

    def entry(self, name: str) -> Self:
        """The member that takes the first turn."""
        self._fields["entry"] = name
        return self

    def max_handoffs(self, limit: int | None) -> Self:
        """Fail with `MaxHandoffsExceeded` past this many handoffs."""
        self._fields["max_handoffs"] = limit
        return self

    def run_config(self, config: RunConfig) -> Self:
        """The default `RunConfig` of the swarm's runs."""
        self._fields["run_config"] = config
        return self

    def build(self) -> SwarmAgent[Ctx]:
        """The swarm.

        Raises:
            SwarmBuildError: no name, no members, two with one name, or an unknown entry.
        """
        if "name" not in self._fields:
            raise SwarmBuildError("SwarmAgent.builder(): call .name(...) before .build()")
        return SwarmAgent(members=self._members, **self._fields)


def _mesh(members: Sequence[LlmAgent[Ctx]]) -> dict[str, LlmAgent[Ctx]]:
    """Copies of the members, each with a handoff to every other copy (its own handoffs kept)."""
    copies = {m.name: m.with_handoffs(m.handoffs) for m in members}
    for member in members:
        own = {h.target for h in member.handoffs}
        mesh = [Handoff[Ctx].to(copies[n]) for n in copies if n != member.name and n not in own]
        copies[member.name]._install_handoffs([*member.handoffs, *mesh])  # pyright: ignore[reportPrivateUsage]
    return copies


__all__ = ["SwarmAgent", "SwarmBuildError", "SwarmBuilder"]
