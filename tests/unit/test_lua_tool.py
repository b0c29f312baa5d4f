"""`LuaTool`: the sandboxed Lua script tool of `agents.toml`, on a real lupa runtime.

Every refusal and cap is shown holding on a script written to get past it, and the last
section shows the same scripts getting past a plain runtime: the tests test something.
No test measures time: the wall-clock tests assert which cap stopped the script.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from typing import Any

import pytest
from lupa import lua54  # pyright: ignore[reportMissingTypeStubs]

from helikon import LlmAgent, RunContext, ToolContext, UserError
from helikon.cli import lua_sandbox, lua_tool
from helikon.cli.lua_tool import LuaLimits, LuaScriptError, LuaTool, check_lua
from helikon.core.items import ToolResult
from helikon.core.tools import Tool, ToolEffect, ToolOutput
from helikon.testing import MockModel, text_turn, tool_call_turn

ORIGIN = "tools/lookup.lua"
FAST = LuaLimits(max_instructions=1_000_000)
SMALL = LuaLimits(max_memory=4 * 1024 * 1024, max_instructions=10**9, timeout=60.0)


def make(source: str, *, limits: LuaLimits = FAST, name: str = "lookup") -> LuaTool:
    schema: Any = {"type": "object", "properties": {}}
    return LuaTool(
        name=name, description="Look up.", schema=schema, source=source, origin=ORIGIN, limits=limits
    )


async def call(tool: LuaTool, args: Any = None) -> ToolOutput:
    ctx = ToolContext(RunContext.ephemeral(None), call_id="c1", tool_name=tool.name, max_agent_depth=1)
    return await tool.invoke(ctx, {} if args is None else args)


async def value_of(source: str, args: Any = None) -> Any:
    return (await call(make(source), args)).value


async def failure(source: str, args: Any = None, *, limits: LuaLimits = FAST) -> LuaScriptError:
    with pytest.raises(LuaScriptError) as info:
        await call(make(source, limits=limits), args)
    message = str(info.value)
    for internal in ("lupa", "Traceback", "stack traceback", "<python>", "<script>", "<sandbox>"):
        assert internal not in message, message
    return info.value


# --- the convention: JSON in, JSON out --------------------------------------------------------


async def test_args_arrive_as_tables_and_the_result_returns_as_json(
    capfd: pytest.CaptureFixture[str],
) -> None:
    source = """
    function run(args)
      print("looking up", args.category, #args.months)
      print(args.missing, args.note == null, null)
      local total = 0
      for _, month in ipairs(args.months) do total = total + month.spent end
      return {
        category = args.category,
        total = total,
        average = total / #args.months,
        months = args.months,
        flags = {true, false, null},
        nested = {deeper = {deepest = "ok"}},
        nothing = nil,
      }
    end
    """
    months = [{"month": "2025-01", "spent": 120}, {"month": "2025-02", "spent": 81}]
    output = await call(make(source), {"category": "Dining", "months": months, "note": None})
    assert output.value == {
        "category": "Dining",
        "total": 201,
        "average": 100.5,
        "months": months,
        "flags": [True, False, None],
        "nested": {"deeper": {"deepest": "ok"}},
    }
    assert output.metadata == {"log": ["looking up\tDining\t2", "nil\ttrue\tnull"]}
    assert capfd.readouterr() == ("", "")  # print never reaches the process's stdout (or stderr)


@pytest.mark.parametrize(
    ("lua", "expected"),
    [
        ('"plain text"', "plain text"),
        ("42", 42),
        ("2.5", 2.5),
        ("2^53", 2.0**53),
        ("nil", None),
        ("null", None),
        ("true", True),
        ("{}", []),
        ("{{}, {x = {}}}", [[], {"x": []}]),
        ('"Zo\\u{EB} \\"quoted\\"\\n\\t\\1"', 'Zoë "quoted"\n\t\x01'),
        ('"\\255"', "\ufffd"),
        ("1, 2", 1),
    ],
)
async def test_return_values_convert_to_json(lua: str, expected: Any) -> None:
    value = await value_of(f"function run(args) return {lua} end")
    assert (value, type(value)) == (expected, type(expected))


async def test_a_string_result_reaches_the_model_as_it_is() -> None:
    output = await call(make('function run(args) return "3 matches" end'))
    assert output.to_parts()[0].text == "3 matches"  # pyright: ignore[reportAttributeAccessIssue]


async def test_json_values_arrive_as_lua_values() -> None:
    source = """
    function run(args)
      return {math.type(args.int), math.type(args.float), math.type(args.huge), type(args.flag),
              args.text, #args.list, args.list[2] == null, type(args.obj), args.obj["a b"]}
    end
    """
    args = {"int": 1, "float": 1.5, "huge": 2**70, "flag": False, "text": "Zoë", "list": [1, None, 3]}
    args["obj"] = {"a b": "spaced"}
    value = await value_of(source, args)
    assert value == ["integer", "float", "float", "boolean", "Zoë", 3, True, "table", "spaced"]


async def test_coroutines_and_pcall_still_work_for_ordinary_scripts() -> None:
    source = """
    function run(args)
      local gen = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(i * i) end end)
      local ok, err = pcall(error, "bad", 0)
      local ok2, err2 = xpcall(function() error("worse", 0) end, function(e) return "handled " .. e end)
      return {gen(), gen(), gen(), ok, err, ok2, err2}
    end
    """
    assert await value_of(source) == [1, 4, 9, False, "bad", False, "handled worse"]


async def test_each_call_gets_a_fresh_runtime() -> None:
    tool = make(
        "calls = (calls or 0) + 1\nfunction run(args) leaked = (leaked or 0) + 1 return {calls, leaked} end"
    )
    assert (await call(tool)).value == [1, 1]
    assert (await call(tool)).value == [1, 1]


async def test_the_tool_is_a_read_only_tool() -> None:
    tool = make("function run(args) end")
    assert isinstance(tool, Tool)
    assert tool.effect is ToolEffect.READ_ONLY
    assert tool.output_schema is None
    assert (tool.name, tool.description, tool.schema) == (
        "lookup",
        "Look up.",
        {"type": "object", "properties": {}},
    )


# --- values JSON cannot hold ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("lua", "message"),
    [
        ("print", "run returned a function at result, which JSON cannot hold"),
        ("{items = {1, coroutine.create(print)}}", "run returned a thread at result.items[2]"),
        (
            "(function() local t = {} t.me = t return {t} end)()",
            "a table that contains itself at result[1].me",
        ),
        ("{[true] = 1}", "a table with a boolean key (true) at result: an object's keys must all be strings"),
        ("{1, 2, x = 3}", "a table with a number key (1) at result: an object's keys must all be strings"),
        ("{[0] = 1}", "a table with a number key (0) at result"),
        ("{x = {['a b'] = 0/0}}", 'run returned NaN or infinity at result.x["a b"]'),
        ("math.huge", "run returned NaN or infinity at result"),
    ],
)
async def test_a_value_json_cannot_hold_is_a_clear_error(lua: str, message: str) -> None:
    error = await failure(f"function run(args) return {lua} end")
    assert str(error).startswith(f"lookup: {ORIGIN}: run returned")
    assert message in str(error)
    assert error.cap is None


async def test_a_shared_table_is_no_cycle() -> None:
    assert await value_of("function run(args) local t = {1} return {t, t} end") == [[1], [1]]


async def test_the_encoder_does_not_use_what_the_script_changed() -> None:
    source = """
    function run(args)
      string.format, string.gsub, string.find = nil, nil, nil
      getmetatable("").__index = {}
      return {text = "a\\nb", number = 1.5}
    end
    """
    assert await value_of(source) == {"text": "a\nb", "number": 1.5}


# --- script errors ---------------------------------------------------------------------------


async def test_a_runtime_error_names_the_tool_the_origin_and_the_line() -> None:
    error = await failure("function run(args)\n  local month = nil\n  return month.spent\nend")
    assert str(error) == f"lookup: {ORIGIN}, line 3: attempt to index a nil value (local 'month')"
    assert (error.tool, error.origin, error.line, error.cap) == ("lookup", ORIGIN, 3, None)


async def test_the_log_survives_a_failure() -> None:
    error = await failure('function run(args) print("before") error("stop") end')
    assert str(error) == f"lookup: {ORIGIN}, line 1: stop"
    assert error.log == ("before",)


async def test_a_long_error_message_and_a_long_log_are_cut() -> None:
    source = 'function run(args) for i = 1, 30 do print(("x"):rep(5000)) end error(("y"):rep(10000)) end'
    error = await failure(source)
    assert str(error).endswith("... (8,000 more characters)")
    assert len(str(error)) < 2_100
    assert len(error.log) == 21 and error.log[-1] == "(print output past 100,000 characters left out)"


async def test_an_error_with_a_table_value_does_not_confuse_the_wrappers() -> None:
    caught = "function run(args) local ok, e = pcall(error, {code = 7}) return {ok, e.code} end"
    assert await value_of(caught) == [False, 7]
    error = await failure("function run(args) error({code = 7}) end")
    assert str(error) == f"lookup: {ORIGIN}: error() was called with a table value"
    # A script raising the words of the cap error is not taken for a cap.
    error = await failure('function run(args) error("the script ran past a cap", 0) end')
    assert error.cap is None


async def test_a_script_without_run_fails_at_call_time_too() -> None:
    tool = make("run = nil  -- check_lua sees `run =`, but run is no function\n")
    with pytest.raises(LuaScriptError, match="the script defines no global function run"):
        await call(tool)


# --- refused globals --------------------------------------------------------------------------

REFUSED = [
    "os",
    "io",
    "require",
    "dofile",
    "loadfile",
    "load",
    "loadstring",
    "package",
    "debug",
    "collectgarbage",
    "python",
    "warn",
    "string.dump",
    '("").dump',
    'getmetatable("").__index.dump',
    "_G.os",
    "_ENV.io",
    "coroutine.close",
]


# Everything a script can reach from the globals: the names it meets and the kinds of value.
WALK = """
    function run(args)
      local seen, names, kinds = {}, {}, {}
      local function walk(v)
        kinds[type(v)] = true
        if type(v) ~= "table" or seen[v] then return end
        seen[v] = true
        for k, x in next, v do
          if type(k) == "string" then names[k] = true end
          walk(k); walk(x)
        end
        walk(getmetatable(v))
      end
      walk(_G); walk(getmetatable("")); walk(getmetatable(null))
      local out = {names = {}, kinds = {}}
      for k in next, names do out.names[#out.names + 1] = k end
      for k in next, kinds do out.kinds[#out.kinds + 1] = k end
      table.sort(out.names); table.sort(out.kinds)
      return out
    end
    """
REFUSED_NAMES = {"os", "io", "require", "dofile", "loadfile", "load", "loadstring", "package", "debug"}
REFUSED_NAMES |= {"collectgarbage", "python", "warn", "dump", "getregistry", "sethook", "getupvalue"}


@pytest.mark.parametrize("expression", REFUSED)
async def test_a_refused_global_is_nil(expression: str) -> None:
    assert await value_of(f"function run(args) return type({expression}) end") == "nil"


async def test_nothing_reachable_from_the_globals_is_refused_or_a_python_object() -> None:
    found = await value_of(WALK)
    assert {"string", "math", "print", "pcall"} <= set(found["names"])
    assert REFUSED_NAMES.isdisjoint(found["names"])
    assert set(found["kinds"]) <= {"boolean", "function", "nil", "number", "string", "table"}  # no userdata


async def test_metatable_tricks_reach_nothing_refused() -> None:
    source = """
    function run(args)
      setmetatable(_G, {__index = function(t, k) return rawget(t, k) end})
      local via_string = getmetatable("").__index
      return {type(os), type(via_string.dump), type(rawget(_G, "debug")), via_string == string}
    end
    """
    assert await value_of(source) == ["nil", "nil", "nil", True]


async def test_null_cannot_be_changed() -> None:
    error = await failure("function run(args) null.x = 1 end")
    assert str(error) == f"lookup: {ORIGIN}, line 1: null is read-only"
    assert await value_of("function run(args) return {getmetatable(null), tostring(null)} end") == [
        "null",
        "null",
    ]


# --- the instruction cap -----------------------------------------------------------------------

LOOP = "while true do end"
SPIN = f"function() {LOOP} end"
SPINS = {
    "a loop": LOOP,
    "a loop at the top level": f"end {LOOP} function _()",
    "a pcall spin": f"while true do pcall({SPIN}) end",
    "a nested pcall spin": f"pcall(function() while true do pcall({SPIN}) end end)",
    "an xpcall spin": f"while true do xpcall({SPIN}, function(e) return e end) end",
    "an xpcall handler spin": f"xpcall(function() error('x') end, {SPIN})",
    "an xpcall handler spin after the cap": f"xpcall({SPIN}, {SPIN})",
    "a coroutine.resume spin": f"while true do coroutine.resume(coroutine.create({SPIN})) end",
    "a coroutine.wrap spin": f"while true do pcall(coroutine.wrap({SPIN})) end",
    "a wrapped coroutine's __close spin": (
        f"coroutine.wrap(function() local x <close> = setmetatable({{}}, {{__close = {SPIN}}}) {LOOP} end)()"
    ),
    "a __close spin": f"local x <close> = setmetatable({{}}, {{__close = {SPIN}}}) error('x')",
    "a tostring spin": f"while true do pcall(tostring, setmetatable({{}}, {{__tostring = {SPIN}}})) end",
    "a sort spin": f"table.sort({{3, 2, 1}}, {SPIN})",
    "a gsub spin": f'while true do pcall(string.gsub, "aaa", "a", {SPIN}) end',
}


@pytest.mark.parametrize("body", SPINS.values(), ids=SPINS.keys())
async def test_a_spin_stops_at_the_instruction_cap(body: str) -> None:
    error = await failure(f"function run(args) {body} end")
    assert str(error) == f"lookup: {ORIGIN}: the script ran past its instruction cap (1,000,000 instructions)"
    assert error.cap == "instructions"


async def test_the_default_instruction_cap_names_its_value() -> None:
    error = await failure("function run(args) while true do end end", limits=LuaLimits())
    assert (
        str(error) == f"lookup: {ORIGIN}: the script ran past its instruction cap (10,000,000 instructions)"
    )


async def test_a_finalizer_is_refused_because_no_hook_runs_inside_one() -> None:
    for metatable in (
        "{__gc = function() while true do end end}",
        "(function() local mt = {} rawset(mt, '__gc', print) return mt end)()",
    ):
        error = await failure(f"function run(args) setmetatable({{}}, {metatable}) end")
        assert str(error) == (
            f"lookup: {ORIGIN}, line 1: setmetatable: a metatable with __gc is refused "
            "(a finalizer would run past the caps)"
        )
    # A __gc added after setmetatable marks nothing for finalization (Lua checks at the call).
    later = f"function run(args) local mt = {{}} setmetatable({{}}, mt) mt.__gc = {SPIN} return 1 end"
    assert await value_of(later) == 1


# --- the memory cap ----------------------------------------------------------------------------

MEMORY_BOMBS = {
    "a gigabyte string.rep": 'return string.rep("x", 2^30)',
    "a doubling string": 'local s = "x" while true do s = s .. s end',
    "a table bomb": "local t = {} local i = 0 while true do i = i + 1 t[i] = {i} end",
    "a table.concat bomb": 'local t = {} for i = 1, 1e6 do t[i] = "xxxxxxxxxx" end return table.concat(t)',
    "a bomb retried under pcall": (
        'local s = "x" while true do if not pcall(function() s = s .. s end) then s = s .. s end end'
    ),
}


@pytest.mark.parametrize("body", MEMORY_BOMBS.values(), ids=MEMORY_BOMBS.keys())
async def test_a_memory_bomb_stops_at_the_memory_cap(body: str) -> None:
    error = await failure(f"function run(args) {body} end", limits=SMALL)
    assert str(error) == f"lookup: {ORIGIN}: the script ran past its memory cap (4,194,304 bytes)"
    assert error.cap == "memory"


async def test_a_terabyte_string_rep_is_refused_by_lua_itself() -> None:
    # string.rep refuses results past 2 GiB before it allocates: a clear error, no cap needed.
    error = await failure('function run(args) return string.rep("x", 2^40) end', limits=SMALL)
    assert str(error) == f"lookup: {ORIGIN}, line 1: resulting string too large"


async def test_a_refused_allocation_leaves_the_script_running() -> None:
    source = 'function run(args) local ok, err = pcall(string.rep, "x", 2^30) return {ok, err} end'
    assert (await call(make(source, limits=SMALL))).value == [False, "not enough memory"]


async def test_deep_recursion_fails_loudly_within_its_caps() -> None:
    error = await failure(
        "local function f(n) return f(n + 1) + 1 end\nfunction run(args) return f(1) end",
        limits=LuaLimits(max_instructions=10**9, timeout=60.0),
    )
    assert error.cap == "memory" or "stack overflow" in str(error), str(error)


# --- the wall clock ----------------------------------------------------------------------------


async def test_a_busy_loop_stops_at_the_time_limit() -> None:
    error = await failure(
        "function run(args) while true do end end", limits=LuaLimits(max_instructions=10**12, timeout=0.5)
    )
    assert str(error) == f"lookup: {ORIGIN}: the script ran past its time limit (0.5 s)"
    assert error.cap == "time"


async def test_a_long_call_into_c_leaves_the_event_loop_free(monkeypatch: pytest.MonkeyPatch) -> None:
    # A backtracking pattern keeps Lua inside string.find for seconds, where no hook runs. The
    # script prints just before it goes in: the loop ticking between then and the worker's end
    # shows lupa released the GIL, and the call returning before the worker ends shows the
    # awaited timeout ended it.
    entered, left = threading.Event(), threading.Event()
    real_print, real_run = lua_sandbox._Report.print, lua_tool.run_lua

    def print_(report: Any, line: object) -> None:
        real_print(report, line)
        entered.set()

    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return real_run(*args, **kwargs)
        finally:
            left.set()

    monkeypatch.setattr(lua_sandbox._Report, "print", print_)
    monkeypatch.setattr(lua_tool, "run_lua", run)
    inside = 0

    async def ticker() -> None:
        nonlocal inside
        while not left.is_set():
            await asyncio.sleep(0.01)
            inside += entered.is_set() and not left.is_set()

    ticking = asyncio.create_task(ticker())
    source = 'function run(args) print("in") return string.find(("a"):rep(54), ("a*"):rep(6) .. "b") end'
    error = await failure(source, limits=LuaLimits(timeout=0.2))
    returned_inside = entered.is_set() and not left.is_set()
    assert await asyncio.to_thread(left.wait, 300)  # the worker ends by itself once string.find returns
    await ticking
    assert str(error) == f"lookup: {ORIGIN}: the script ran past its time limit (0.2 s)"
    assert error.cap == "time"
    assert returned_inside
    assert inside > 0


# --- check_lua and the limits --------------------------------------------------------------------


def test_check_lua_names_the_origin_and_the_line_of_a_syntax_error() -> None:
    with pytest.raises(UserError) as info:
        check_lua("function run(args)\n  return args.x +\nend\n", "agents.toml [tools.lookup] inline")
    assert str(info.value) == "agents.toml [tools.lookup] inline, line 3: unexpected symbol near 'end'"


@pytest.mark.parametrize(
    "source",
    [
        "x = 1",
        "local function run(args) end",
        "-- function run(args) end",
        "--[==[\nfunction run(args) end\n]==]",
        'note = "function run(args) end"',
        "note = [[\nrun = 1\n]]",
        "M = {}\nfunction M.run(args) end",
    ],
)
def test_check_lua_wants_a_global_run_function(source: str) -> None:
    with pytest.raises(UserError, match=r"^tools/lookup\.lua: the script defines no global function run"):
        check_lua(source, ORIGIN)


@pytest.mark.parametrize(
    "source", ["function run(args) end", "run = function(args) end", "local x\nfunction  run (a) end"]
)
def test_check_lua_accepts_a_global_run(source: str) -> None:
    check_lua(source, ORIGIN)


def test_check_lua_refuses_bytecode() -> None:
    with pytest.raises(UserError, match="attempt to load a binary chunk"):
        check_lua("\x1bLua function run() end", ORIGIN)


def test_a_tool_checks_its_script_when_it_is_made() -> None:
    with pytest.raises(UserError, match=r"^tools/lookup\.lua, line 1: "):
        make("function run(args) return = end")


@pytest.mark.parametrize(
    "limits",
    [
        {"max_memory": 0},
        {"max_instructions": -1},
        {"max_instructions": 1.5},
        {"timeout": 0},
        {"timeout": True},
    ],
)
def test_limits_must_be_positive(limits: dict[str, Any]) -> None:
    with pytest.raises(UserError, match="LuaLimits"):
        LuaLimits(**limits)


# --- what would abort the process --------------------------------------------------------------

# lupa's own calls into a Lua state are unprotected: an error there (a memory error, or one a
# metamethod raises) makes Lua abort the whole process. Each case runs in a child process, so
# a regression fails this test instead of killing the suite.
ABORTS = {
    "a metamethod on _G that fails": (
        "setmetatable(_G, {__index = function() error('boom', 0) end}) function run() return 1 end",
        None,
        "1",
    ),
    "a metamethod on _G that spins": (
        "function run() setmetatable(_G, {__index = function() while true do end end}) return x end",
        None,
        "lookup: tools/lookup.lua: the script ran past its instruction cap (1,000,000 instructions)",
    ),
    "a global debug.traceback that spins": (
        "function run() debug = {traceback = function() while true do end end} error('x', 0) end",
        None,
        "lookup: tools/lookup.lua: x",
    ),
    "arguments larger than the memory cap": (
        "function run(args) return #args.items end",
        {"items": ["x" * 100] * 5_000},
        "lookup: tools/lookup.lua: the script and its arguments do not fit its memory cap (65,536 bytes)",
    ),
    "memory kept full when the call ends": (
        "function run() keep = {} while true do keep[#keep + 1] = {} end end",
        None,
        "lookup: tools/lookup.lua: the script ran past its memory cap (65,536 bytes)",
    ),
}
CHILD = """
import asyncio, json, sys
from helikon import RunContext, ToolContext
from helikon.cli.lua_tool import LuaLimits, LuaScriptError, LuaTool

source, args = json.loads(sys.stdin.read())
limits = LuaLimits(max_memory=64 * 1024, max_instructions=1_000_000)
tool = LuaTool(
    name="lookup", description="", schema={}, source=source, origin="tools/lookup.lua", limits=limits
)
ctx = ToolContext(RunContext.ephemeral(None), call_id="c1", tool_name="lookup", max_agent_depth=1)
try:
    print(json.dumps(asyncio.run(tool.invoke(ctx, args or {})).value))
except LuaScriptError as exc:
    print(exc)
"""


@pytest.mark.parametrize(("source", "args", "expected"), ABORTS.values(), ids=ABORTS.keys())
def test_nothing_a_script_leaves_behind_aborts_the_process(source: str, args: Any, expected: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=json.dumps([source, args]),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.strip() == expected


# --- through the run ---------------------------------------------------------------------------


async def test_a_failed_call_reaches_the_model_as_an_error_result() -> None:
    tool = make("function run(args) while true do end end")
    model = MockModel.with_scripts([tool_call_turn("lookup", {}), text_turn("Sorry.")])
    result = await LlmAgent(name="a", model=model, tools=[tool]).run("Look it up")
    assert result.final_output == "Sorry."
    [answer] = [m for m in model.requests[-1].messages if isinstance(m, ToolResult)]
    assert answer.is_error
    assert (
        "lookup: tools/lookup.lua: the script ran past its instruction cap (1,000,000 instructions)"
        in answer.text
    )


# --- the same scripts on an unconfined runtime ---------------------------------------------------


def plain_runtime() -> Any:
    """A lupa runtime as it comes: the whole standard library, the `python` module, no caps."""
    runtime_class: Any = lua54.LuaRuntime
    return runtime_class()


def test_a_plain_count_hook_does_not_stop_a_pcall_spin() -> None:
    # The cap without its wrappers: a hook that raises every 1,000 instructions. pcall swallows
    # each raise; after 50 the test ends the script by failing every instruction.
    runtime: Any = plain_runtime()
    with pytest.raises(lua54.LuaError, match="test over"):
        runtime.execute(
            """
            fired = 0
            debug.sethook(function()
              fired = fired + 1
              if fired == 50 then debug.sethook(function() error("test over", 0) end, "", 1) end
              error("instruction cap", 0)
            end, "", 1000)
            while true do pcall(function() while true do end end) end
            """
        )
    assert runtime.globals().fired == 50  # 49 cap errors swallowed: the script was still running


def test_a_plain_runtime_exposes_os_io_and_python() -> None:
    runtime: Any = plain_runtime()
    assert runtime.execute("return type(os), type(io), type(python), type(string.dump)") == (
        "table",
        "table",
        "table",
        "function",
    )


def test_a_plain_runtime_shows_the_walk_python_objects_and_refused_names() -> None:
    runtime: Any = plain_runtime()
    runtime.execute(WALK.replace("getmetatable(null)", "nil"))
    found = runtime.globals().run(None)
    assert "userdata" in set(found["kinds"].values())  # python.none, a Python object
    assert REFUSED_NAMES - {"loadstring"} <= set(found["names"].values())  # 5.1's name, not in 5.4


def test_a_plain_runtime_prints_to_the_process_stdout(capfd: pytest.CaptureFixture[str]) -> None:
    plain_runtime().execute('print("hello from Lua")')
    assert capfd.readouterr().out == "hello from Lua\n"
