-- What one call costs: a trivial C function of the module (`running()` of a
-- scheduler that is not running: it returns nil) against an empty Lua function,
-- each called N times in a numeric `for` loop. Meant for LuaJIT, whose JIT
-- compiles the Lua call into its trace but stops at a call of a classic C
-- function; runs on every Lua.
--
--   luajit bench/lua/ccall.lua DIR [N [lua|c]]          # JIT on
--   luajit -joff bench/lua/ccall.lua DIR [N [lua|c]]    # JIT off
--
-- DIR holds cothread.so; N calls (default 10 000 000). With `lua` or `c` only
-- that loop runs, once, untimed: for callgrind, run it with N = 0 too and
-- divide the difference of the two counts by N:
--
--   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
--     luajit bench/lua/ccall.lua DIR 1000000 c
--
-- Without it both loops run, best of 5 CPU times (os.clock) each, alternating,
-- and the nanoseconds per call are printed.

package.cpath = arg[1] .. "/?.so;" .. package.cpath
local cothread = require "cothread"
local N = math.floor(tonumber(arg[2] or "1e7"))
local only = arg[3]

local c_fn = cothread.new().running
local function lua_fn() end

-- Calls f N times; the result is kept so that no call can be dropped.
local function loop(f)
  local r
  for _ = 1, N do r = f() end
  return r
end

if only then
  loop(assert(({ lua = lua_fn, c = c_fn })[only], "lua or c expected"))
  return
end

local function ns_per_call(f)
  local t0 = os.clock()
  loop(f)
  return (os.clock() - t0) * 1e9 / N
end

local best_lua, best_c = math.huge, math.huge
for _ = 1, 5 do
  best_lua = math.min(best_lua, ns_per_call(lua_fn))
  best_c = math.min(best_c, ns_per_call(c_fn))
end
local name = jit and ("%s (JIT %s)"):format(jit.version, jit.status() and "on" or "off") or _VERSION
print(("%s, %d calls, best of 5: Lua function %.2f ns, C function %.2f ns a call")
  :format(name, N, best_lua, best_c))
