"""`helikon run`: one question to one agent, for scripts; `--watch` asks again on every change."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.exceptions import RunError, UserError
from .registry import Registry
from .store import open_store, store_path


def run_once(
    agents: Path,
    agent: str | None,
    question: str,
    *,
    as_json: bool = False,
    session: str | None = None,
    store: Path | None = None,
) -> int:
    """Run `question` on the agent; 0 with the answer on stdout, 1 when the run failed."""
    registry = Registry.load(agents)
    name = agent or registry.default()
    built = registry.agent(name)  # a disabled or unknown agent fails here, before any work
    try:
        result = asyncio.run(_run(built, question, session, store_path(agents, store)))
    except RunError as exc:
        if as_json:
            print(json.dumps({"agent": name, "status": "failed", "error": exc.error.message}))
        else:
            print(f"helikon: the run failed: {exc.error.message}", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps(_result_json(name, session, result), ensure_ascii=False))
    else:
        output = result.final_output
        print(output if isinstance(output, str) else json.dumps(output, ensure_ascii=False))
    return 0


async def _run(agent: Any, question: str, session: str | None, store: Path) -> Any:
    if session is None:
        return await agent.run(question)
    from .. import RunContext
    from ..sessions.sqlite import SqliteSession

    db: Any = await open_store(store)
    try:
        opened = await SqliteSession.open(db, session)
        return await agent.run(question, context=RunContext.ephemeral(None).with_session(opened))
    finally:
        await db.aclose()


def _result_json(agent: str, session: str | None, result: Any) -> dict[str, Any]:
    from pydantic_core import to_jsonable_python

    usage = result.usage
    return {
        "agent": agent,
        "status": "succeeded",
        "output": to_jsonable_python(result.final_output),
        "session": session,
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "requests": usage.requests,
        },
    }


def run_watching(agents: Path, agent: str | None, question: str, *, as_json: bool = False) -> int:
    """Run now, then again each time the sidecar or a file it uses is saved; Ctrl-C stops."""
    from watchfiles import watch

    while True:
        watched = _watched(agents)
        before = _stamps(watched)
        try:
            run_once(agents, agent, question, as_json=as_json)
        except UserError as exc:  # a broken save: say so, and wait for the next one
            print(f"helikon: {exc}", file=sys.stderr)
        print(f"-- watching {len(watched)} file(s); Ctrl-C stops", file=sys.stderr, flush=True)
        try:
            # The watcher starts when first iterated: a save made before that is caught by
            # comparing stamps each second (an empty set is a timeout).
            for changes in watch(
                *{path.parent for path in watched},
                watch_filter=_only(watched),
                debounce=300,
                rust_timeout=1000,
                yield_on_timeout=True,
            ):
                if changes or _stamps(watched) != before:
                    break
        except KeyboardInterrupt:
            return 0


def _stamps(paths: set[Path]) -> dict[Path, tuple[int, int] | None]:
    stamps: dict[Path, tuple[int, int] | None] = {}
    for path in paths:
        try:
            stat = path.stat()
            stamps[path] = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            stamps[path] = None
    return stamps


def _watched(agents: Path) -> set[Path]:
    from .sidecar import load_sidecar

    try:
        return set(load_sidecar(agents).files)
    except UserError:
        return {agents.absolute()}  # a broken sidecar: watch it until it is fixed


def _only(paths: set[Path]) -> Callable[[Any, str], bool]:
    names = {str(path) for path in paths}

    def watched(change: Any, path: str) -> bool:
        return str(Path(path).absolute()) in names

    return watched


__all__ = ["run_once", "run_watching"]
