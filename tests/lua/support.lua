-- Helpers shared by the specs: load with
--   local support = dofile(debug.getinfo(1, "S").source:match("^@(.*[/\\])") .. "support.lua")
local cothread = require "cothread"

local support = {}

-- Runs f(...) in a new cothread of S, at the end of the ready queue; returns it.
function support.go(S, f, ...)
  local co = coroutine.create(f)
  S.schedule(co, "later", ...)
  return co
end

-- The ready queue of scheduler S, head to tail, as a list.
function support.ready(S)
  local list = {}
  for co in S.iready() do list[#list + 1] = co end
  return list
end

-- CPU seconds used by this process while f runs, and the wall time.
function support.cost(f)
  local c0, t0 = os.clock(), cothread.time()
  f()
  return os.clock() - c0, cothread.time() - t0
end

-- A connected TCP pair on 127.0.0.1 (blocking calls, outside cothreads):
-- client, accepted.
function support.tcp_pair()
  local socket = require "cothread.socket"
  local server = assert(socket.bind("127.0.0.1", 0))
  local _, port = server:getsockname()
  local c = assert(socket.connect("127.0.0.1", port))
  server:settimeout(5)
  local a = assert(server:accept())
  server:close()
  return c, a
end

-- Runs f(S) in a cothread of S (a new scheduler if nil) while another cothread
-- ticks every millisecond until f returns; runs S to its end and returns the
-- number of ticks taken meanwhile.
function support.ticking(f, S)
  S = S or cothread.new()
  local done, ticks = false, 0
  support.go(S, function()
    f(S)
    done = true
  end)
  support.go(S, function()
    while not done do
      ticks = ticks + 1
      S.delay(0.001)
    end
  end)
  S.run()
  assert(done, "f did not finish")
  return ticks
end

-- A new scheduler whose clock is `clock.now` (from `start`, default 0); its idle
-- records each wake time in `clock.idled` and jumps the clock to it.
function support.clocked(start)
  local S = cothread.new()
  local clock = { now = start or 0, idled = {} }
  S.time = function() return clock.now end
  S.idle = function(t)
    clock.idled[#clock.idled + 1] = t
    clock.now = t
  end
  return S, clock
end

-- Runs tests/lua/<script> (with the module's directory and `...` as arguments)
-- in a child lua5.4 whose descriptor limit is raised to `limit`. Returns its
-- output and whether it succeeded; nil if the limit cannot be raised here.
function support.child(script, limit, ...)
  local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
  local lua = os.getenv("COTHREAD_LUA") or "lua5.4"
  local dir = os.getenv("COTHREAD_LUA_DIR") or "build/lua"
  local args = {}
  for i = 1, select("#", ...) do args[i] = string.format("%q", tostring(select(i, ...))) end
  local cmd = string.format("ulimit -n %d 2>/dev/null || exit 77; exec %q %q %q %s 2>&1",
    limit, lua, here .. script, dir, table.concat(args, " "))
  local f = assert(io.popen(cmd))
  local out = f:read("*a")
  local ok, how, code = f:close()
  if how == "exit" and code == 77 then return nil end
  return out, ok
end

-- The shell command that runs the chunk `src` in a child of the running
-- interpreter ($COTHREAD_LUA), the module's directory first on its cpath,
-- stderr joined to stdout.
function support.chunk_command(src)
  local lua = os.getenv("COTHREAD_LUA") or "lua5.4"
  local dir = os.getenv("COTHREAD_LUA_DIR") or "build/lua"
  return string.format("%q -e %q 2>&1", lua,
    string.format("package.cpath = %q .. package.cpath\n", dir .. "/?.so;") .. src)
end

-- Runs the chunk `src` so (chunk_command); its output.
function support.chunk(src)
  local p = assert(io.popen(support.chunk_command(src)))
  local out = p:read("*a")
  p:close()
  return out
end

-- What the running Lua has that older versions lack (doc/lua.md: the differences):
-- coroutine.close and to-be-closed variables (5.4); integers and math.maxinteger (5.3).
support.has = {
  close = coroutine.close ~= nil,
  integers = math.type ~= nil,
}
support.maxinteger = math.maxinteger or 2 ^ 53
-- Lua 5.1 itself, not LuaJIT: it cannot yield across pcall, metamethods or
-- iterators (doc/lua.md: the differences).
support.lua51 = _VERSION == "Lua 5.1" and jit == nil

-- Is `msg` Lua's own error for a yield that cannot be made? Its words differ:
-- "attempt to yield from outside a coroutine" (5.2 on, in the main thread),
-- "attempt to yield across metamethod/C-call boundary" (5.1 anywhere),
-- "attempt to yield across C-call boundary" (LuaJIT).
function support.is_yield_error(msg)
  msg = tostring(msg)
  return msg:find("attempt to yield from outside a coroutine", 1, true) ~= nil
    or msg:find("attempt to yield across", 1, true) ~= nil
end

-- Calls `f` when the collector finalizes a fresh object: a table's __gc
-- (5.2 on); Lua 5.1 and LuaJIT finalize only userdata, a `newproxy` there.
function support.on_gc(f)
  if newproxy then
    local p = newproxy(true)
    getmetatable(p).__gc = f
  else
    setmetatable({}, { __gc = f })
  end
end

-- Runs `src`, a chunk with to-be-closed variables, with `...` and returns its
-- results. A version without them refuses the syntax: checked, then nil.
function support.tbc(src, ...)
  local chunk, err = (loadstring or load)(src, "=tbc") -- Lua 5.1 loads a string with loadstring
  if not support.has.close then
    assert(chunk == nil, "a Lua before 5.4 compiled a to-be-closed variable")
    return nil
  end
  return assert(chunk, err)(...)
end

return support
