"""A run's events on a terminal (rich): the answer as Markdown while it streams, tool calls in brief.

A tool call is one line, `> name(arguments)`, and its result one more, folded to
`TOOL_RESULT_CHARS` (`< result…`); an error result is marked `!`. The answer streams
into a live Markdown view that stays on screen once the message is complete.
"""

from __future__ import annotations

import json
from typing import Any

from ..core._internal.extras import missing_extra
from .transcript import TOOL_RESULT_CHARS

try:
    from rich.console import Console
    from rich.live import Live
    from rich.markdown import Markdown
    from rich.text import Text
except ImportError as exc:
    raise missing_extra("the REPL's output needs rich", "cli") from exc


def brief(text: str, limit: int = TOOL_RESULT_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with `…`."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class EventPrinter:
    """Prints one run's events as they come; `paused` holds a paused run's pending calls."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.paused: tuple[Any, ...] = ()
        self.failed: str | None = None
        self._text = ""
        self._live: Live | None = None

    def show(self, event: Any) -> None:
        """Render one `AgentEvent`."""
        kind = event.type
        if kind == "token_delta":
            self._stream(event.text)
        elif kind == "message_output":
            self._stream("", final=event.item.text)
            self._end_text()
        elif kind == "tool_call_item":
            self._end_text()
            args = json.dumps(event.item.args, ensure_ascii=False)
            self.console.print(Text(f"> {event.item.name}({brief(args, 60)})", style="cyan"))
        elif kind == "tool_output_item":
            text = "".join(getattr(part, "text", "") or "" for part in event.item.content)
            mark, style = ("!", "red") if event.item.is_error else ("<", "dim")
            self.console.print(Text(f"  {mark} {brief(text)}", style=style))
        elif kind == "agent_updated":
            self._end_text()
            self.console.print(Text(f"-> {event.agent}", style="magenta"))
        elif kind == "run_failed":
            self._end_text()
            self.failed = event.error.message
            self.console.print(Text(f"run failed: {event.error.message}", style="bold red"))
        elif kind == "run_paused":
            self._end_text()
            self.paused = tuple(event.pending)
        elif kind == "run_completed":
            self._end_text()

    def close(self) -> None:
        """End a live view left open (a run that stopped mid-message)."""
        self._end_text()

    def _stream(self, delta: str, final: str | None = None) -> None:
        self._text = final if final is not None else self._text + delta
        if not self._text:
            return
        if self._live is None:
            self._live = Live(
                Markdown(self._text), console=self.console, refresh_per_second=12, vertical_overflow="visible"
            )
            self._live.start()
        else:
            self._live.update(Markdown(self._text))

    def _end_text(self) -> None:
        if self._live is not None:
            self._live.update(Markdown(self._text), refresh=True)
            self._live.stop()
            self._live = None
        self._text = ""


__all__ = ["EventPrinter", "brief"]
