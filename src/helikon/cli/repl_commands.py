"""The REPL's slash commands: `/help` lists them; each is a small function of the `Repl`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..core.exceptions import HelikonError

if TYPE_CHECKING:
    from .repl import Repl

QUIT = object()
"""What `/quit` returns: the loop ends."""

Command = Callable[["Repl", str], Awaitable[object]]


async def _help(repl: Repl, arg: str) -> None:
    for name, (_, text) in COMMANDS.items():
        repl.say(f"  /{name:<9} {text}")


async def _agents(repl: Repl, arg: str) -> None:
    registry = repl.live.current
    for name, spec in registry.sidecar.agents.items():
        mark = "*" if name == repl.agent else " "
        why = f"  (disabled: {registry.disabled[name]})" if name in registry.disabled else ""
        repl.say(f" {mark} {name}  {spec.description}{why}".rstrip())


async def _agent(repl: Repl, arg: str) -> None:
    if not arg:
        repl.say(f"the agent is {repl.agent}; /agent NAME picks another")
        return
    repl.live.current.agent(arg)  # unknown or disabled: the message says so
    repl.agent = arg
    repl.say(f"now talking to {arg}")


async def _reload(repl: Repl, arg: str) -> None:
    repl.live.reload()


async def _clear(repl: Repl, arg: str) -> None:
    from ..sessions.sqlite import SqliteSession

    name = datetime.now(UTC).strftime("chat-%Y%m%d-%H%M%S-%f")
    repl.session = await SqliteSession.open(repl.db, name)
    repl.say(f"new session {name} (the last one is kept: /sessions)")


async def _session(repl: Repl, arg: str) -> None:
    from .transcript import active_entries, transcript_lines

    entries = active_entries(await repl.session.events())
    repl.say(f"session {repl.session.session_id}: {len(entries)} events on its active branch")
    for line in transcript_lines(entries):
        repl.say(f"  {line}")


async def _sessions(repl: Repl, arg: str) -> None:
    from ..sessions.sqlite import SqliteSession

    for info in await SqliteSession.list_sessions(repl.db, limit=50):
        mark = "*" if info.session_id == repl.session.session_id else " "
        repl.say(f" {mark} {info.session_id}  {info.event_count} events  {info.updated:%Y-%m-%d %H:%M}")


async def _fork(repl: Repl, arg: str) -> None:
    from ..core.session.branches import head_of

    events = [entry.event for entry in await repl.session.events()]
    if not events:
        repl.say("nothing to fork yet")
        return
    fork = await repl.session.fork(head_of(events), session_id=arg or None)
    repl.say(f"forked {repl.session.session_id} into {fork.session_id}; now in the fork")
    repl.session = fork


async def _rewind(repl: Repl, arg: str) -> None:
    from ..core.session.branches import event_parents

    turns = int(arg) if arg.isdigit() and int(arg) > 0 else 1
    entries = await repl.session.events()
    events = [entry.event for entry in entries]
    parents, head = event_parents(events)
    starts: list[int] = []  # the first event of each turn on the active branch, newest first
    seq = head
    while seq >= 0:
        if events[seq].type == "turn_opened":
            starts.append(seq)
        seq = parents[seq]
    if len(starts) < turns:
        repl.say(f"the conversation has {len(starts)} turn(s): nothing rewound")
        return
    await repl.session.rewind(parents[starts[turns - 1]])
    repl.say(f"rewound {turns} turn(s); the turns are kept off the active branch (/fork keeps a copy first)")


async def _usage(repl: Repl, arg: str) -> None:
    from .transcript import active_entries

    totals = {"requests": 0, "input_tokens": 0, "output_tokens": 0}
    for entry in active_entries(await repl.session.events()):
        usage = getattr(entry.event, "usage", None)
        if entry.event.type == "assistant_message" and usage is not None:
            for key in totals:
                totals[key] += getattr(usage, key)
    repl.say(
        f"session {repl.session.session_id}: {totals['requests']} model call(s), "
        f"{totals['input_tokens']:,} input + {totals['output_tokens']:,} output tokens"
    )


async def _decide(repl: Repl, approve: bool, reason: str) -> None:
    from .. import Approve, Deny

    requests = await repl.pending()
    if not requests:
        repl.say("no call waits for a decision")
        return
    decision: Any = Approve() if approve else Deny(reason or "the person said no")
    await repl.resume({request.request_id: decision for request in requests})
    await repl.ask_pending()


async def _approve(repl: Repl, arg: str) -> None:
    await _decide(repl, True, "")


async def _deny(repl: Repl, arg: str) -> None:
    await _decide(repl, False, arg)


async def _quit(repl: Repl, arg: str) -> object:
    return QUIT


COMMANDS: dict[str, tuple[Command, str]] = {
    "help": (_help, "this list"),
    "agents": (_agents, "the sidecar's agents (* is the current one)"),
    "agent": (_agent, "NAME: talk to another agent, in the same session"),
    "reload": (_reload, "load agents.toml again now (saves reload by themselves)"),
    "clear": (_clear, "start a new session (the current one is kept)"),
    "session": (_session, "the current session's conversation"),
    "sessions": (_sessions, "the saved sessions"),
    "fork": (_fork, "[NAME]: copy the session into a new one and continue there"),
    "rewind": (_rewind, "[N]: take the last N turns (default 1) off the conversation"),
    "usage": (_usage, "model calls and tokens of this session"),
    "approve": (_approve, "approve the calls a paused run waits on"),
    "deny": (_deny, "[REASON]: deny them (the model reads the reason)"),
    "quit": (_quit, "leave (so does Ctrl-D)"),
}


async def run_command(repl: Repl, line: str) -> object:
    """Run one `/command arg`; an unknown one or a failing one says so and the REPL goes on."""
    name, _, arg = line[1:].partition(" ")
    entry = COMMANDS.get(name)
    if entry is None:
        repl.say(f"no command /{name}: /help lists them", "red")
        return None
    try:
        return await entry[0](repl, arg.strip())
    except HelikonError as exc:
        repl.say(f"helikon: {exc}", "red")
        return None


__all__ = ["COMMANDS", "QUIT", "run_command"]
