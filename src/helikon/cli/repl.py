"""`helikon repl`: talk to the sidecar's agents, with saved sessions and hot reload.

Each line you type is a turn of the current agent, built afresh from the definitions
current when the turn starts (a save mid-turn takes effect from the next one). The
conversation lives in the local SQLite store (`.helikon/sessions.db` by the sidecar), so
`--resume` (the most recent session) or `--session NAME` continues it after a restart. A
run paused for approval asks at the prompt; `/approve` and `/deny` decide what is still
open. Ctrl-C stops the turn in flight (the turn is kept, closed as cancelled); Ctrl-D or
`/quit` leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core._internal.extras import missing_extra
from ..core.exceptions import HelikonError, UserError
from .live import LiveRegistry
from .render import EventPrinter, brief
from .store import open_store, store_path

try:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.patch_stdout import patch_stdout
    from rich.console import Console
except ImportError as exc:
    raise missing_extra("the REPL needs prompt_toolkit", "cli") from exc


class Repl:
    """One REPL: its registry, store, session and agent; `commands` handles the slash commands."""

    def __init__(
        self, live: LiveRegistry, db: Any, session: Any, agent: str, console: Console, history: Path
    ) -> None:
        self.live = live
        self.db = db
        self.history = history
        self.session = session
        self.agent = agent
        self.console = console
        self.prompt: PromptSession[str] | None = None

    def say(self, text: str, style: str | None = None) -> None:
        """A line of the REPL's own (not the agent's)."""
        self.console.print(text, style=style, markup=False, highlight=False)

    # --- turns ------------------------------------------------------------------------------

    async def turn(self, text: str) -> None:
        """Run `text` on the current agent, then ask about any call it paused on."""
        try:
            agent = self.live.current.agent(self.agent)
        except UserError as exc:
            self.say(f"helikon: {exc}", "red")
            return
        from .. import RunContext

        context = RunContext.ephemeral(None).with_session(self.session)

        def start(cancel: Any) -> Any:
            return agent.run(text, context=context.with_cancel(cancel))

        await self._follow(start)
        await self.ask_pending()

    async def resume(self, decisions: dict[str, Any]) -> None:
        """Resume the session's paused run with `decisions`."""
        agent = self.live.current.agent(self.agent)
        from .. import RunContext

        def start(cancel: Any) -> Any:
            context = RunContext.ephemeral(None).with_session(self.session).with_cancel(cancel)
            return agent.resume(self.session, decisions, by="repl", context=context)

        await self._follow(start)

    async def _follow(self, start: Any) -> None:
        """Print a run's events; Ctrl-C cancels it (the session keeps the turn, closed as cancelled)."""
        from .. import CancellationToken

        cancel = CancellationToken()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, cancel.cancel)
        printer = EventPrinter(self.console)
        try:
            async for event in start(cancel):
                printer.show(event)
        except HelikonError as exc:  # resume refused (stale decisions, nothing to resume)
            self.say(f"helikon: {exc}", "red")
        finally:
            printer.close()
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)

    async def pending(self) -> list[Any]:
        """The calls the session's paused run still waits on (read from the log)."""
        from ..core.session.paused import read_paused

        paused = read_paused(await self.session.events())
        return paused.undecided() if paused is not None else []

    async def ask_pending(self) -> None:
        """Put each open approval request to the person at the prompt, then resume."""
        from .. import Approve, Deny

        while requests := await self.pending():
            decisions: dict[str, Any] = {}
            for request in requests:
                args = brief(str(request.args), 60)
                question = f"approve {request.tool}({args})? {request.prompt or ''} [y/N] "
                try:
                    answer = await self._ask(question)
                except (EOFError, KeyboardInterrupt):
                    self.say("left paused: /approve or /deny decides it later", "yellow")
                    return
                yes = answer.strip().lower() in ("y", "yes")
                decisions[request.request_id] = Approve() if yes else Deny("the person said no")
            await self.resume(decisions)

    async def _ask(self, question: str) -> str:
        if self.prompt is None:
            self.prompt = PromptSession()
        return await self.prompt.prompt_async(question)

    # --- the loop ---------------------------------------------------------------------------

    async def loop(self) -> None:
        """Read lines until `/quit` or Ctrl-D."""
        from .repl_commands import QUIT, run_command

        self.prompt = PromptSession(history=FileHistory(str(self.history)))
        watcher = asyncio.ensure_future(self.live.watch())
        try:
            with patch_stdout(raw=True):
                await self.ask_pending()  # a resumed session may be waiting on a person
                while True:
                    try:
                        line = await self.prompt.prompt_async(f"{self.agent}> ")
                    except KeyboardInterrupt:
                        continue
                    except EOFError:
                        return
                    line = line.strip()
                    if not line:
                        continue
                    if line.startswith("/"):
                        if await run_command(self, line) is QUIT:
                            return
                    else:
                        await self.turn(line)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher


async def open_session(db: Any, name: str | None, resume: bool) -> tuple[Any, bool]:
    """The session to talk in: `name`, the most recent (`resume`), or a new one; and whether it has events."""
    from ..sessions.sqlite import SqliteSession

    if name is None and resume:
        recent = await SqliteSession.list_sessions(db, limit=1)
        name = recent[0].session_id if recent else None
    if name is None:
        name = datetime.now(UTC).strftime("chat-%Y%m%d-%H%M%S")
    session = await SqliteSession.open(db, name)
    return session, bool(await session.events())


def run_repl(agents: Path, agent: str | None, session: str | None, resume: bool, store: Path | None) -> int:
    """`helikon repl`: 0 when left with /quit or Ctrl-D."""
    if session is not None and resume:
        raise UserError("give --session NAME or --resume, not both")
    console = Console(highlight=False)
    live = LiveRegistry(agents, report=lambda line: console.print(line, style="yellow", markup=False))
    name = agent or live.current.default()
    live.current.agent(name)  # an unknown or disabled agent: say so now
    for other, why in live.current.disabled.items():
        console.print(f"(agent {other!r} is disabled: {why})", style="yellow", markup=False)

    async def main() -> None:
        database = store_path(agents, store)
        db: Any = await open_store(database)
        try:
            opened, existing = await open_session(db, session, resume)
            repl = Repl(live, db, opened, name, console, database.parent / "repl_history")
            state = "continuing" if existing else "new"
            repl.say(
                f"helikon repl: agent {name}, session {opened.session_id} ({state}); /help lists the commands"
            )
            if existing:
                from .transcript import active_entries, transcript_lines

                for line in list(transcript_lines(active_entries(await opened.events())))[-6:]:
                    repl.say(line, "dim")
            await repl.loop()
        finally:
            await db.aclose()

    asyncio.run(main())
    return 0


__all__ = ["Repl", "open_session", "run_repl"]
