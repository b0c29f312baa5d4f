-- The sandbox's trusted prelude: `helikon.cli.lua_sandbox` runs it first in each new runtime.
--
-- It takes the script's source, the instruction cap, the hook's step, the deadline and three
-- Python functions (the clock, where printed lines go, whom to tell which cap was hit), all
-- reachable from this file's locals only. It sets the count hook, wraps or removes what a
-- script must not have, and returns `call(args)` and the `null` sentinel. Everything a script
-- could replace is captured as a local first.

local source, cap, step, deadline, clock, log, on_cap = ...
local G, sethook, load, next, type, error, pcall, select, tostring, rawget, rawequal =
  _G, debug.sethook, load, next, type, error, pcall, select, tostring, rawget, rawequal
local setmetatable, mtype, huge, format, find, gsub, byte, concat, sort = setmetatable, math.type,
  math.huge, string.format, string.find, string.gsub, string.byte, table.concat, table.sort
local create, resume, main = coroutine.create, coroutine.resume, coroutine.running()
local CAP = "the script ran past a cap"  -- what a script's pcall sees before it re-raises
local count, capped = 0, false

-- The caps. Every `step` instructions the hook counts and reads the clock; once a cap is hit
-- it fires on every instruction and fails each one, so nothing the script does gets further.
local function hook()
  if not capped then
    count = count + step
    if count >= cap then capped = "instructions" elseif clock() > deadline then capped = "time" end
    if not capped then return end
    on_cap(capped)
    sethook(main, hook, "", 1)  -- from now on every instruction fails, in any thread
    sethook(hook, "", 1)
  end
  error(CAP, 0)
end
sethook(hook, "", step)

-- An error raised in a hook leaves hooks off until the nearest pcall catches it: code Lua runs
-- in between (a message handler, a dead coroutine's __close) would run unhooked. So no script
-- code runs there: xpcall calls its handler after the failed call returns, coroutine.wrap does
-- not close a failed coroutine, and coroutine.close is gone.
local function settle(...)
  if capped then error(CAP, 0) end
  return ...
end
local function handled(handler, ok, ...)
  if ok or capped then return ok, ... end
  local _, result = pcall(handler, (...))
  return false, result
end
G.pcall = function(...) return settle(pcall(...)) end
G.xpcall = function(f, handler, ...) return settle(handled(handler, pcall(f, ...))) end
local function hooked(co)
  sethook(co, hook, "", capped and 1 or step)
  return co
end
local function unwrap(ok, ...)
  if capped then error(CAP, 0) end
  if ok then return ... end
  error((...), 0)
end
coroutine.create = function(f) return hooked(create(f)) end
coroutine.resume = function(...) return settle(resume(...)) end
coroutine.close = nil
coroutine.wrap = function(f)
  local co = hooked(create(f))
  return function(...) return unwrap(resume(co, ...)) end
end
-- Lua 5.4 runs finalizers with hooks off: a __gc that loops would outlive every cap.
G.setmetatable = function(t, mt)
  if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
    error("setmetatable: a metatable with __gc is refused (a finalizer would run past the caps)", 2)
  end
  return setmetatable(t, mt)
end
-- print collects its lines for the caller: the process's stdout may be an MCP stdio channel.
G.print = function(...)
  local parts = {}
  for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
  log(concat(parts, "\t"))
end
-- JSON null, as a value a table can hold (nil would end an array or drop a key).
local null = setmetatable({}, {
  __metatable = "null",
  __tostring = function() return "null" end,
  __newindex = function() error("null is read-only", 2) end,
})
G.null = null
for _, name in next, {"os", "io", "require", "dofile", "loadfile", "load", "loadstring", "package",
                       "debug", "collectgarbage", "python", "warn"} do
  G[name] = nil
end
string.dump = nil

-- JSON out: written here, under the caps; tables are read raw (metatables are not asked).
local out, n, path, seen = {}, 0, {}, {}
local escapes = {['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n",
                 ["\r"] = "\\r", ["\t"] = "\\t"}
local function escape(c) return escapes[c] or format("\\u%04x", byte(c)) end
local function put(s) n = n + 1; out[n] = s end
local function fail(what, why)
  local at = "result"
  for i = 1, #path do
    local k = path[i]
    if type(k) == "number" then at = at .. "[" .. k .. "]"
    elseif find(k, "^[%a_][%w_]*$") then at = at .. "." .. k
    else at = at .. format("[%q]", k) end
  end
  error("run returned " .. what .. " at " .. at .. (why or ", which JSON cannot hold"), 0)
end
local encode
local function encode_table(t)
  if seen[t] then fail("a table that contains itself") end
  if #path >= 200 then fail("tables nested deeper than 200 levels") end
  seen[t] = true
  local keys, size, max, array = {}, 0, 0, true
  for k in next, t do
    size = size + 1
    keys[size] = k
    if mtype(k) == "integer" and k >= 1 then
      if k > max then max = k end
    else
      array = false
    end
  end
  if array and max == size then
    put("[")
    for i = 1, size do
      if i > 1 then put(",") end
      path[#path + 1] = i; encode(rawget(t, i)); path[#path] = nil
    end
    put("]")
  else
    for i = 1, size do
      local k = keys[i]
      if type(k) ~= "string" then
        fail("a table with a " .. type(k) .. " key (" .. tostring(k) .. ")",
             ": an object's keys must all be strings")
      end
    end
    sort(keys)
    put("{")
    for i = 1, size do
      if i > 1 then put(",") end
      encode(keys[i]); put(":")
      path[#path + 1] = keys[i]; encode(rawget(t, keys[i])); path[#path] = nil
    end
    put("}")
  end
  seen[t] = nil
end
function encode(v)
  local kind = type(v)
  if kind == "nil" or rawequal(v, null) then put("null")
  elseif kind == "boolean" then put(v and "true" or "false")
  elseif kind == "string" then put('"' .. gsub(v, '[%c"\\]', escape) .. '"')
  elseif mtype(v) == "integer" then put(format("%d", v))
  elseif kind == "number" then
    if v ~= v or v == huge or v == -huge then fail("NaN or infinity") end
    local s = format("%.17g", v)
    put(find(s, "[.e]") and s or s .. ".0")
  elseif kind == "table" then encode_table(v)
  else fail("a " .. kind) end
end

-- The call: load the script as text only (no bytecode), run it, call run(args), encode.
local function main_call(args)
  local chunk, err = load(source, "=<script>", "t")
  if not chunk then error(err, 0) end
  chunk()
  local run = G.run
  if type(run) ~= "function" then error("the script defines no global function run(args)", 0) end
  encode((run(args)))
  return concat(out, "", 1, n)
end
-- Errors come back as strings made here: lupa shows an error that is no string as an empty
-- message. Only a cap's error (raised again by the hook) gets past this pcall.
local function call(args)
  local ok, result = pcall(main_call, args)
  if ok or type(result) == "string" then return ok, result end
  if type(result) == "number" then return false, tostring(result) end
  return false, "error() was called with a " .. type(result) .. " value"
end
return call, null
