-- One side of bench.lua's switch benchmark, run once and untimed, for counting
-- instructions under callgrind: 100 coroutines each yielding YIELDS times,
-- either as cothreads under `run()` (`cothread`) or in a bare round robin of
-- `coroutine.resume` (`bare`), the same loops as bench.lua's part (a).
--
--   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
--     lua5.4 bench/lua/switch.lua DIR YIELDS cothread|bare
--
-- Run it with YIELDS = 2030 and 30 and divide the difference of the two
-- counts by 100 * 2000 switches (bench/lua/versions.sh does, with
-- COT_BENCH_COUNT=1). Runs on Lua 5.1 to 5.4 and LuaJIT.

package.cpath = arg[1] .. "/?.so;" .. package.cpath
local cothread = require "cothread"
local YIELDS = math.floor(assert(tonumber(arg[2]), "YIELDS expected"))
local side = arg[3]
local N = 100
local create, resume = coroutine.create, coroutine.resume

local done = 0
if side == "cothread" then
  local s = cothread.new()
  local yield = s.yield
  local function body()
    for _ = 1, YIELDS do yield() end
    done = done + 1
  end
  for _ = 1, N do s.schedule(create(body)) end
  s.run()
elseif side == "bare" then
  local yield = coroutine.yield
  local function body()
    for _ = 1, YIELDS do yield("yield") end
    done = done + 1
  end
  local q = {}
  for i = 1, N do q[i] = create(body) end
  local n = N
  while n > 0 do
    local live = 0
    for i = 1, n do
      local co = q[i]
      local ok, op = resume(co)
      if op == "yield" then
        live = live + 1
        q[live] = co
      elseif not ok then
        error(op)
      end
    end
    for i = live + 1, n do q[i] = nil end
    n = live
  end
else
  error("cothread or bare expected")
end
assert(done == N, "not every coroutine finished")
