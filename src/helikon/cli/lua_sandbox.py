"""Run an untrusted Lua 5.4 script under three caps: instructions, memory, wall-clock time.

Each call gets a new `LuaRuntime` (lupa, Lua 5.4) that holds no Python object a script can
reach: no `python` module, no builtins, an attribute filter that refuses every attribute.
A trusted prelude (`lua_sandbox.lua`, beside this module) runs first; it sets a count hook,
then takes away what a script must not have, so the script meets a cleaned standard library:

- no I/O and no loading: `os`, `io`, `require`, `dofile`, `loadfile`, `load`, `loadstring`,
  `package`, `string.dump` (so `("").dump` is nil too), `warn` (it writes to stderr);
- no way around the hook: `debug`, `collectgarbage`, and `setmetatable` refuses a metatable
  with `__gc` (Lua 5.4 runs finalizers with hooks off, so no cap could stop one);
- `pcall`, `xpcall`, `coroutine.resume` and `coroutine.wrap` re-raise the cap error once a
  cap is hit, and `coroutine.create`/`wrap` set the hook on the new coroutine (Lua keys a
  hook function by thread: a new coroutine would run unhooked);
- no script code runs where Lua leaves hooks off after an error raised in a hook: `xpcall`
  calls its handler once the failed call has returned, `coroutine.close` is gone and
  `coroutine.wrap` does not close a coroutine that failed (its `<close>` variables stay open,
  as after a failed `coroutine.resume`);
- `print` appends its line to a log the caller gets back; nothing reaches stdout.

Once a cap is hit the hook fires on every instruction, so the call fails for good. A
script's values cross back as one JSON string, encoded in Lua under the same caps, so a
cyclic or exponentially shared table costs the script's budget, not the host's; printed
lines and the cap hit are handed to Python as they happen. Python reads nothing from the
state after the script has run: lupa's own calls into it are unprotected, and Lua aborts the
process on an error there (a memory error, or a metamethod the script left on `_G`, which
lupa's lookup of the global `debug` before each call would run).

lupa releases the GIL while Lua runs (`lua_pcall` is called `with nogil`; the tests see the
event loop tick while a script is inside a long `string.find`); the hook takes the GIL back
for a moment each 10,000 instructions to read the clock.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeAlias

from helikon.core._internal.extras import missing_extra
from helikon.core._internal.json_value import JsonValue
from helikon.core.exceptions import ToolError, UserError

try:
    from lupa import lua54  # pyright: ignore[reportMissingTypeStubs]
except ImportError as exc:  # pragma: no cover - the extra is installed for the test suite
    raise missing_extra("helikon.cli.lua_sandbox needs lupa", "cli") from exc

Cap: TypeAlias = Literal["instructions", "memory", "time"]
"""Which cap a call ran past."""

_STEP = 10_000  # instructions between two hook calls: the cap's grain and the clock's
_LOG_LIMIT = 100_000  # characters of `print` output kept for the caller
_MESSAGE_LIMIT = 2_000  # characters of a script's error message the model reads
_SLACK = 16 * 1024  # bytes free under the cap when the call starts: lupa's own setup allocates
_CHUNK = "<script>"  # the script's chunk name, replaced by its origin in messages
_AT_LINE = re.compile(re.escape(_CHUNK) + r":(\d+): ")
_IN_PRELUDE = re.compile(r"<sandbox>:\d+: ")
_INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True, slots=True)
class LuaLimits:
    """The caps of one script call.

    Attributes:
        max_memory: Bytes the Lua state may allocate beyond its standard library: the
            sandbox's own (about 30 KB), the script, its arguments and what it builds.
        max_instructions: Lua VM instructions per call (counted by a hook, to 10,000).
        timeout: Wall-clock seconds per call.
    """

    max_memory: int = 32 * 1024 * 1024
    max_instructions: int = 10_000_000
    timeout: float = 5.0

    def __post_init__(self) -> None:
        for field, value in (("max_memory", self.max_memory), ("max_instructions", self.max_instructions)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**62:
                raise UserError(f"LuaLimits({field}={value!r}): give a positive whole number (below 2**62)")
        timeout: object = self.timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf:
            raise UserError(f"LuaLimits(timeout={self.timeout!r}): give a positive number of seconds")

    def describe(self, cap: Cap) -> str:
        """What running past `cap` means, with its value."""
        if cap == "instructions":
            return f"the script ran past its instruction cap ({self.max_instructions:,} instructions)"
        if cap == "memory":
            return f"the script ran past its memory cap ({self.max_memory:,} bytes)"
        return f"the script ran past its time limit ({self.timeout:g} s)"


class LuaScriptError(ToolError):
    """A script tool's call failed: a Lua error, a cap, or a value JSON cannot hold.

    The model reads the message as the call's error result.

    Attributes:
        tool: The tool's name.
        origin: Where the script came from (a path, or the `agents.toml` entry).
        line: The script's line Lua named, if any.
        cap: The cap the call ran past, if that is why it failed.
        log: What the script printed before it failed.
    """

    def __init__(
        self,
        problem: str,
        *,
        tool: str,
        origin: str,
        line: int | None = None,
        cap: Cap | None = None,
        log: tuple[str, ...] = (),
    ) -> None:
        where = f"{origin}, line {line}" if line is not None else origin
        super().__init__(f"{tool}: {where}: {problem}")
        self.tool = tool
        self.origin = origin
        self.line = line
        self.cap = cap
        self.log = log


@dataclass(frozen=True, slots=True)
class LuaResult:
    """What a script call gave back: its value as JSON and the lines it printed."""

    value: JsonValue
    log: tuple[str, ...]


def check_lua(source: str, origin: str) -> None:
    """Compile (do not run) a script and look for its global `run` function.

    Compiling catches syntax errors. Without running the script, `run` is found by reading
    its code (comments and strings left out) for `function run(` or `run =`; a call still
    fails clearly if the script defines `run` some other way, or not at all.

    Raises:
        UserError: A syntax error (naming `origin` and the line), or no `run` function.
    """
    runtime = _new_runtime(None)  # nothing runs, so no cap: a long script compiles whole
    compile_error: Any = runtime.execute(
        "local source, name = ...; local _, err = load(source, name, 't'); return err",
        source.encode("utf-8", "replace"),
        f"={_CHUNK}".encode(),
    )
    if compile_error is not None:
        line, problem = _located(_text(compile_error))
        where = f"{origin}, line {line}" if line is not None else origin
        raise UserError(f"{where}: {problem}")
    if not _defines_run(source):
        raise UserError(
            f"{origin}: the script defines no global function run; write `function run(args) ... end`"
        )


def run_lua(source: str, args: JsonValue, *, tool: str, origin: str, limits: LuaLimits) -> LuaResult:
    """Run `source` in a new runtime and call its global `run(args)`; blocking, for a worker thread.

    Raises:
        LuaScriptError: The script failed, ran past a cap, or returned what JSON cannot hold.
    """
    report = _Report()
    runtime = _new_runtime(limits.max_memory)
    # lupa's own calls into the state (building a table, pushing a string) are not protected,
    # and Lua aborts the process on an error there: a memory error included. So the state is
    # set up with the cap lifted, before the script has run; and once it has, nothing here
    # touches the state again (a lookup of a global could run a metamethod the script left).
    runtime.set_max_memory(0)
    call, null = runtime.execute(
        _PRELUDE,
        source.encode("utf-8", "replace"),
        limits.max_instructions,
        min(_STEP, limits.max_instructions),
        time.monotonic() + limits.timeout,
        time.monotonic,
        report.print,
        report.capped,
        name=b"=<sandbox>",
    )
    lua_args = _to_lua(runtime, args, null)
    fail = partial(LuaScriptError, tool=tool, origin=origin)
    if runtime.get_memory_used() + _SLACK > limits.max_memory:  # so the call's own setup fits
        problem = f"the script and its arguments do not fit its memory cap ({limits.max_memory:,} bytes)"
        raise fail(problem, cap="memory")
    runtime.set_max_memory(limits.max_memory)
    try:
        ok, payload = call(lua_args)
    except lua54.LuaMemoryError:
        ok, payload = False, b"not enough memory"
    except lua54.LuaError as exc:  # only a cap's error gets past the prelude's own pcall
        ok, payload = False, str(exc).encode()
    log = tuple(report.lines)
    if report.cap is not None:
        raise fail(limits.describe(report.cap), cap=report.cap, log=log)
    text = _text(payload)
    if not ok:
        if text.endswith("not enough memory"):
            raise fail(limits.describe("memory"), cap="memory", log=log)
        line, problem = _located(text)
        raise fail(problem, line=line, log=log)
    try:
        return LuaResult(value=json.loads(text), log=log)
    except ValueError:  # the prelude's encoder writes JSON; this is a last guard
        raise fail("run returned a value that is not JSON", log=log) from None


class _Report:
    """What the prelude tells Python while the script runs: its printed lines, the cap it hit."""

    __slots__ = ("cap", "lines", "size")

    def __init__(self) -> None:
        self.cap: Cap | None = None
        self.lines: list[str] = []
        self.size = 0

    def print(self, line: object) -> None:
        if self.size > _LOG_LIMIT:
            return
        text = _text(line)
        self.size += len(text)
        if self.size > _LOG_LIMIT:
            text = f"(print output past {_LOG_LIMIT:,} characters left out)"
        self.lines.append(text)

    def capped(self, cap: object) -> None:
        self.cap = "time" if _text(cap) == "time" else "instructions"


def _new_runtime(max_memory: int | None) -> Any:
    runtime_class: Any = lua54.LuaRuntime  # lupa's compiled signature is not visible to type checkers
    return runtime_class(
        encoding=None,  # strings cross as bytes: a script's bytes need not be UTF-8
        max_memory=max_memory,
        register_eval=False,
        register_builtins=False,
        attribute_filter=_refuse,
        unpack_returned_tuples=False,
    )


def _refuse(obj: object, name: object, is_setting: bool) -> object:
    raise AttributeError("no Python object is reachable from a script")


def _to_lua(runtime: Any, value: JsonValue, null: Any) -> Any:
    """A JSON value as Lua values: tables built in the runtime, never Python containers."""
    if value is None:
        return null
    if isinstance(value, str):
        return value.encode("utf-8", "replace")
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value <= _INT64[1]:
        return float(value)  # past Lua's 64-bit integers, as JSON parsers do
    if not isinstance(value, dict | list):
        return value
    table: Any = runtime.table()
    items = value.items() if isinstance(value, dict) else enumerate(value, 1)
    for key, item in items:
        table[key.encode("utf-8", "replace") if isinstance(key, str) else key] = _to_lua(runtime, item, null)
    return table


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _located(message: str) -> tuple[int | None, str]:
    """The script line a Lua message starts with, and the message without it."""
    message = _IN_PRELUDE.sub("", message)
    found = _AT_LINE.match(message)
    if found is not None:
        message = message[found.end() :]
    if len(message) > _MESSAGE_LIMIT:  # error() takes any string: keep the model's context
        message = f"{message[:_MESSAGE_LIMIT]}... ({len(message) - _MESSAGE_LIMIT:,} more characters)"
    return (int(found.group(1)) if found else None), _AT_LINE.sub(r"line \1: ", message)


# Comments and string literals, so that `_defines_run` reads code only.
_NOT_CODE = re.compile(
    r"""
      --\[(?P<c>=*)\[.*?\](?P=c)\]  # a long comment
    | --[^\n]*                     # a comment
    | \[(?P<s>=*)\[.*?\](?P=s)\]    # a long string
    | "(?:\\.|[^"\\])*"            # strings; a compiled script has no newline in one unescaped
    | '(?:\\.|[^'\\])*'
    """,
    re.DOTALL | re.VERBOSE,
)
_RUN_DEFINED = re.compile(r"(?<![\w.:])(?:function\s+run\s*\(|run\s*=(?!=))")


def _defines_run(source: str) -> bool:
    code = _NOT_CODE.sub(lambda found: "\n" * found.group().count("\n") or " ", source)
    return any(not code[: found.start()].rstrip().endswith("local") for found in _RUN_DEFINED.finditer(code))


# The trusted Lua half of the sandbox: the hook, the wrappers, the refusals, the JSON encoder.
_PRELUDE = (Path(__file__).parent / "lua_sandbox.lua").read_text(encoding="utf-8")

__all__ = ["Cap", "LuaLimits", "LuaResult", "LuaScriptError", "check_lua", "run_lua"]
