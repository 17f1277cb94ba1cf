-- One side of bench.lua's switch benchmark, run once and untimed, for counting
-- instructions under callgrind: 100 coroutines each yielding YIELDS times, as
-- cothreads under `run()` (`cothread`), in a bare round robin of
-- `coroutine.resume` (`bare`) or in switch_floor.c's round robin in C
-- (`floor`: DIR holds switch_floor.so too). The loops are switch_loops.lua's,
-- as in bench.lua.
--
--   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
--     lua5.4 bench/lua/switch.lua DIR YIELDS cothread|bare|floor
--
-- Run it with YIELDS = 2030 and 30 and divide the difference of the two
-- counts by 100 * 2000 switches (bench/lua/versions.sh does, with
-- COT_BENCH_COUNT=1). Runs on Lua 5.1 to 5.4 and LuaJIT.

package.cpath = arg[1] .. "/?.so;" .. package.cpath
local loops = dofile((arg[0]:match("^(.*/)") or "./") .. "switch_loops.lua")
local YIELDS = math.floor(assert(tonumber(arg[2]), "YIELDS expected"))
local side, N = arg[3], 100

local go
if side == "cothread" then
  go = loops.cothread(require "cothread", N, YIELDS)
elseif side == "bare" then
  go = loops.bare(N, YIELDS)
elseif side == "floor" then
  go = loops.floor(require "switch_floor", N, YIELDS)
else
  error("cothread, bare or floor expected")
end
go()
