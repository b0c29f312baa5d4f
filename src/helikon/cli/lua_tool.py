"""The script tool of `agents.toml`'s `[tools.NAME]` entries: a Lua function the model can call.

The script defines a global `function run(args)`; the model's JSON arguments arrive as Lua
tables and `run`'s return value goes back as JSON (docs/script-tools.md has the rules). Each
call runs in a new sandboxed runtime under `LuaLimits` (`helikon.cli.lua_sandbox` says what
a script cannot reach and how each cap holds).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

from helikon.core._internal.json_value import JsonObject, JsonValue
from helikon.core.context import ToolContext
from helikon.core.tools import ToolEffect, ToolOutput

from .lua_sandbox import LuaLimits, LuaResult, LuaScriptError, check_lua, run_lua

# How long past `LuaLimits.timeout` the caller waits for the worker thread. The hook stops a
# script at the timeout itself; only a long call into C (a string.find with a pathological
# pattern) outlasts it, since no hook runs until that call returns.
_GRACE = 0.5


class LuaTool:
    """A `Tool` whose body is a Lua 5.4 script; it reads and writes nothing (`READ_ONLY`).

    A failed call (a Lua error, a cap, a return value JSON cannot hold) raises
    `LuaScriptError`, which the model reads as the call's error result. What the script
    printed is in the output's `metadata["log"]`, which the model does not see.

    Example:
        ```python
        import asyncio

        from helikon import RunContext, ToolContext
        from helikon.cli.lua_tool import LuaTool

        add = LuaTool(
            name="add",
            description="Add two numbers.",
            schema={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
            source='function run(args) print("adding") return {sum = args.a + args.b} end',
            origin="example",
        )
        ctx = ToolContext(RunContext.ephemeral(None), call_id="c1", tool_name="add", max_agent_depth=1)
        output = asyncio.run(add.invoke(ctx, {"a": 1, "b": 2}))
        assert output.value == {"sum": 3}
        assert output.metadata == {"log": ["adding"]}
        ```
    """

    __slots__ = (
        "_limits",
        "_source",
        "description",
        "effect",
        "name",
        "needs_approval",
        "origin",
        "output_schema",
        "schema",
    )

    def __init__(
        self,
        *,
        name: str,
        description: str,
        schema: JsonObject,
        source: str,
        origin: str,
        limits: LuaLimits = LuaLimits(),  # noqa: B008 - frozen, so one shared default is safe
        needs_approval: bool = False,
    ) -> None:
        """Check the script (see `check_lua`) and keep it for the calls.

        Args:
            name: The name the model calls.
            description: What the tool does, for the model.
            schema: JSON Schema of the arguments object.
            source: The Lua script; it defines a global `function run(args)`.
            origin: Where the script came from, named in errors (e.g. `tools/lookup.lua`).
            limits: The caps of each call.
            needs_approval: Every call waits for a person's decision (see `helikon.core.approvals`).

        Raises:
            UserError: The script does not compile or defines no `run`.
        """
        check_lua(source, origin)
        self.name = name
        self.description = description
        self.schema = schema
        self.origin = origin
        self.output_schema: JsonObject | None = None
        self.effect = ToolEffect.READ_ONLY
        self._source = source
        self._limits = limits
        self.needs_approval = needs_approval

    async def invoke(self, ctx: ToolContext[Any], args: JsonValue) -> ToolOutput:
        """Run the script's `run(args)` in a new runtime, off the event loop.

        Raises:
            LuaScriptError: The script failed, ran past a cap, or returned what JSON cannot hold.
        """
        result = await self._in_worker(args)
        return ToolOutput(result.value, metadata={"log": list(result.log)})

    async def _in_worker(self, args: JsonValue) -> LuaResult:
        """The call, in a daemon thread awaited with the time limit plus `_GRACE`.

        lupa releases the GIL while Lua runs, so the event loop stays free. A thread still in
        a C call past the wait is left behind, holding one core until the call returns; then
        the script ends, or the next hook call (at most 10,000 instructions on) stops it, and
        the thread ends with its result dropped. A daemon thread, not `asyncio.to_thread`:
        the default executor's threads are joined when the loop and the interpreter shut
        down, so one stuck thread would hang the CLI's exit.
        """
        loop = asyncio.get_running_loop()
        done: asyncio.Future[LuaResult] = loop.create_future()

        def work() -> None:
            outcome: LuaResult | BaseException
            try:
                outcome = run_lua(self._source, args, tool=self.name, origin=self.origin, limits=self._limits)
            except BaseException as exc:  # handed to the awaiting task, raised there
                outcome = exc
            with contextlib.suppress(RuntimeError):  # the loop closed while the script ran: nobody waits
                loop.call_soon_threadsafe(_settle, done, outcome)

        threading.Thread(target=work, name=f"lua-tool {self.name}", daemon=True).start()
        try:
            # On timeout `done` is cancelled, so a late outcome is dropped (see `_settle`).
            return await asyncio.wait_for(done, self._limits.timeout + _GRACE)
        except TimeoutError:
            raise LuaScriptError(
                self._limits.describe("time"), tool=self.name, origin=self.origin, cap="time"
            ) from None


def _settle(done: asyncio.Future[LuaResult], outcome: LuaResult | BaseException) -> None:
    if done.done():  # the caller stopped waiting (timeout, cancellation)
        return
    if isinstance(outcome, BaseException):
        done.set_exception(outcome)
    else:
        done.set_result(outcome)


__all__ = ["LuaLimits", "LuaScriptError", "LuaTool", "check_lua"]
