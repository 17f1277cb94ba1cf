-- Benchmark of the Lua module `cothread`, each figure next to a baseline written in
-- plain Lua and measured in the same process:
--
--   (a) switch: 1000 cothreads each doing 300 `yield()`s under `run()`, against a bare
--       round robin of 1000 coroutines driven by `coroutine.resume` that call
--       `coroutine.yield("yield")` 300 times (a dead coroutine leaves the round
--       robin). Unit: one switch, i.e. one resume and the yield or end that
--       follows it (301 per coroutine: 300 yields and the final resume).
--       Target: ratio cothread/bare <= 0.6 on Lua 5.1-5.4, <= 1.0 on LuaJIT.
--       If the directory holds switch_floor.so (switch_floor.c; versions.sh
--       builds it), the same round robin in C over a C `yield` is timed too:
--       the floor of any module that yields from C. The loops are
--       switch_loops.lua's.
--   (b) notify: a signal queue of 100 and of 100 000 waiters (suspended in `wait(a)`)
--       moved back and forth with `notify(a, "wait", b)` / `notify(b, "wait", a)`.
--       Unit: one notify. It must be flat: the ratio 100000/100 is printed. Baseline:
--       moving as many entries between two Lua arrays with `table.move` (a Lua loop
--       where the version has none: 5.1, 5.2). Both loops run for at least 0.1 s of
--       CPU time per repetition.
--   (c) timers: 100 000 cothreads that each call `delay(d)` once (d uniform in
--       [0, 1 ms), same seeded values on both sides) and end; the whole `run()`.
--       Unit: one cothread. Baseline: resume every bare coroutine (it yields
--       `"delay", d`), collect {wake = d, co} records, `table.sort` them by wake time
--       and resume them in that order (no clock reads, no sleeping).
--
-- Every figure is the best of REPS repetitions (default 5), ours and the baseline
-- alternating, each preceded by a full `collectgarbage()`. Setup (creating and
-- scheduling the coroutines) is outside the timed part. Each measurement of ours uses
-- a fresh scheduler from `cothread.new()`. Timing uses `os.clock()`, the process's CPU
-- time: it leaves out sleeping in `idle` (the baseline never sleeps) and is less
-- disturbed by other processes on a shared machine.
--
-- Runs on Lua 5.1 to 5.4 and LuaJIT, each with the module built for it. Run from
-- the repository root, after building (cmake --build build); the third argument
-- `switch` runs (a) only (bench/lua/versions.sh runs that for every Lua):
--
--   lua5.4 bench/lua/bench.lua <directory holding cothread.so> [REPS [switch]]
--   lua5.4 bench/lua/bench.lua build/lua

local dir = arg[1]
if not dir or dir == "" then
  io.stderr:write("usage: lua bench.lua <directory holding cothread.so> [repetitions [switch]]\n")
  os.exit(2)
end
package.cpath = dir .. "/?.so;" .. package.cpath

local cothread = require "cothread"
local REPS = math.floor(tonumber(arg[2] or "5") or 5)
local SWITCH_ONLY = arg[3] == "switch"

-- The Lua running this: `_VERSION`, or LuaJIT's version and whether its JIT is on.
local lua_name = _VERSION
if jit then lua_name = ("%s (JIT %s)"):format(jit.version, jit.status() and "on" or "off") end
local SWITCH_TARGET = jit and 1.0 or 0.6

local clock = os.clock
local create, resume = coroutine.create, coroutine.resume
local unpack = table.unpack or unpack

-- CPU seconds taken by f(), after a full garbage collection.
local function timed(f)
  collectgarbage()
  local t0 = clock()
  f()
  return clock() - t0
end

-- Best (smallest) of REPS results of each function given, taking them in turn.
-- Each function does its own setup, times its work with `timed` and returns
-- nanoseconds per unit.
local function best(...)
  local fs, b = { ... }, {}
  for i = 1, #fs do b[i] = math.huge end
  for _ = 1, REPS do
    for i = 1, #fs do b[i] = math.min(b[i], fs[i]()) end
  end
  return unpack(b, 1, #fs)
end

local function row(what, ns, extra)
  print(("  %-46s %10.1f ns%s"):format(what, ns, extra or ""))
end

local function ratio(what, r, extra)
  local fmt = r < 0.01 and "  %-46s %10.3g%s" or "  %-46s %10.3f%s"
  print(fmt:format(what, r, extra or ""))
end

print(("cothread %s, %s, clock: os.clock (process CPU time), best of %d")
  :format(cothread.version, lua_name, REPS))

-------------------------------------------------------------------------------
-- (a) switch
-------------------------------------------------------------------------------
do
  local N, YIELDS = 1000, 300
  local units = N * (YIELDS + 1)            -- switches: 300 yields + the final resume
  local loops = dofile((arg[0]:match("^(.*/)") or "./") .. "switch_loops.lua")

  -- ns per switch of the loop that make(N, YIELDS) sets up.
  local function per_switch(make)
    return function()
      return timed(make(N, YIELDS)) * 1e9 / units
    end
  end
  local ours = per_switch(function(n, y) return loops.cothread(cothread, n, y) end)
  local base = per_switch(loops.bare)
  local have_floor, floor = pcall(require, "switch_floor")

  local o, b, f
  if have_floor then
    o, b, f = best(ours, base, per_switch(function(n, y) return loops.floor(floor, n, y) end))
  else
    o, b = best(ours, base)
  end
  print(("(a) switch: %d cothreads x %d yields, ns per switch"):format(N, YIELDS))
  row("cothread.run + yield()", o)
  row("coroutine.resume round robin", b)
  ratio(("ratio cothread/bare (target <= %.1f)"):format(SWITCH_TARGET), o / b,
    o / b <= SWITCH_TARGET and "  ok" or "  ABOVE TARGET")
  if have_floor then
    row("switch_floor.c: lua_resume in C, C yield", f)
    ratio("ratio floor/bare (any module yielding from C)", f / b)
  end
end
if SWITCH_ONLY then return end

-------------------------------------------------------------------------------
-- (b) notify
-------------------------------------------------------------------------------
do
  local BUDGET = 0.1                          -- CPU seconds per timing

  -- table.move, or the same copy in Lua where the version lacks it (5.1, 5.2).
  local move = table.move or function(a1, f, e, t, a2)
    for i = 0, e - f do a2[t + i] = a1[f + i] end
    return a2
  end
  local MOVE = table.move and "table.move" or "a Lua copy loop"

  -- Calls step() until BUDGET CPU seconds have passed (after a full collection);
  -- returns nanoseconds per unit, one call of step() doing `units` units.
  local function per_unit(step, units)
    collectgarbage()
    local calls, t0, t = 0, clock(), 0
    repeat
      step()
      calls = calls + 1
      t = clock() - t0
    until t >= BUDGET
    return t * 1e9 / (calls * units)
  end

  local function measure(n)
    local function ours()
      local s = cothread.new()
      local wait, notify = s.wait, s.notify
      local a, b = {}, {}
      local done = 0
      local function body()
        wait(a)
        done = done + 1
      end
      for _ = 1, n do s.schedule(create(body)) end
      s.run()                                 -- every cothread now waits on a
      local ns = per_unit(function()
        for _ = 1, 500 do
          notify(a, "wait", b)
          notify(b, "wait", a)
        end
      end, 1000)
      assert(notify(a), "the waiters are not on a")
      s.run()
      assert(done == n, "not every waiter was moved")
      return ns
    end

    -- Two arrays with explicit lengths: moving copies the n entries with table.move
    -- and sets the source's length to 0 (its stale slots are overwritten next time).
    local function base()
      local qa, qb = {}, {}
      for i = 1, n do qa[i] = create(function() end); qb[i] = false end
      local na, nb = n, 0
      local rounds = math.max(1, math.floor(50000 / n))
      local ns = per_unit(function()
        for _ = 1, rounds do
          move(qa, 1, na, nb + 1, qb); nb = nb + na; na = 0
          move(qb, 1, nb, na + 1, qa); na = na + nb; nb = 0
        end
      end, 2 * rounds)
      assert(na == n and nb == 0)
      return ns
    end

    return best(ours, base)
  end

  print("(b) notify, whole queue moved to another signal, ns per notify")
  local o1, b1 = measure(100)
  local o2, b2 = measure(100000)
  row("notify, 100 waiters", o1)
  row(MOVE .. " of 100 entries", b1)
  ratio("ratio cothread/" .. MOVE .. ", 100", o1 / b1)
  row("notify, 100 000 waiters", o2)
  row(MOVE .. " of 100 000 entries", b2)
  ratio("ratio cothread/" .. MOVE .. ", 100 000", o2 / b2)
  ratio("ratio notify 100 000 / 100 (flat: ~1)", o2 / o1)
end

-------------------------------------------------------------------------------
-- (c) timers
-------------------------------------------------------------------------------
do
  local N = 100000
  math.randomseed(42)
  local delays = {}
  for i = 1, N do delays[i] = math.random() * 1e-3 end

  local function ours()
    local s = cothread.new()
    local delay = s.delay
    local done = 0
    for i = 1, N do
      local d = delays[i]
      s.schedule(create(function()
        delay(d)
        done = done + 1
      end))
    end
    local t = timed(s.run)
    assert(done == N, "not every cothread finished")
    return t * 1e9 / N
  end

  local function base()
    local yield = coroutine.yield
    local done = 0
    local cos = {}
    for i = 1, N do
      local d = delays[i]
      cos[i] = create(function()
        yield("delay", d)
        done = done + 1
      end)
    end
    local t = timed(function()
      local due = {}
      for i = 1, N do
        local co = cos[i]
        local _, op, d = resume(co)
        assert(op == "delay")
        due[i] = { wake = d, co = co }
      end
      table.sort(due, function(x, y) return x.wake < y.wake end)
      for i = 1, N do resume(due[i].co) end
    end)
    assert(done == N, "not every coroutine finished")
    return t * 1e9 / N
  end

  local o, b = best(ours, base)
  print(("(c) timers: %d cothreads, delay(0..1 ms) once each, ns per cothread"):format(N))
  row("cothread.run with delay()", o)
  row("resume + table.sort by wake + resume", b)
  ratio("ratio cothread/bare", o / b)
end
