-- Time: cothread.time and cothread.idle (custom and default), the postponed queue's
-- order, idle calls by run, postpone/delay in the past.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/time_spec.lua

local cothread = require "cothread"
local support = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "support.lua")
local ready, clocked = support.ready, support.clocked

local function logger(log, name)
  return coroutine.create(function() log[#log + 1] = name end)
end

describe("a custom time", function()
  it("decides when a postponed cothread becomes ready", function()
    local S, clock = clocked()
    local log = {}
    S.schedule(logger(log, "p"), "postpone", 2)
    S.step()
    assert.same({}, log)
    clock.now = 1.999
    S.step()
    assert.same({}, log)
    clock.now = 2
    S.step()
    assert.same({ "p" }, log)
  end)

  it("takes effect at once when assigned", function()
    local S = cothread.new()
    local log = {}
    S.time = function() return 0 end
    S.schedule(logger(log, "p"), "postpone", 50)
    S.step()
    assert.same({}, log)
    S.time = function() return 50 end
    S.step()
    assert.same({ "p" }, log)
  end)

  it("assigned by a cothread takes effect within the same run", function()
    local S = cothread.new()
    local log = {}
    local idled = {}
    S.time = function() return 0 end
    S.idle = function(t) idled[#idled + 1] = t end
    S.schedule(coroutine.create(function()
      S.delay(10)         -- wakes at 0 + 10 by the first clock
      log[#log + 1] = "woke"
    end))
    S.schedule(coroutine.create(function()
      S.time = function() return 10 end
    end))
    S.run()
    assert.same({ "woke" }, log)
    assert.same({}, idled)
  end)

  it("is used by delay when the cothread yields", function()
    local S, clock = clocked(1000)
    S.schedule(coroutine.create(function() S.delay(0.5) end))
    S.run()
    assert.same({ 1000.5 }, clock.idled)
  end)
end)

describe("the postponed queue", function()
  it("makes cothreads ready in wake-time order, ties in postpone order", function()
    local S, clock = clocked()
    local log = {}
    S.schedule(logger(log, "a3"), "postpone", 3)
    S.schedule(logger(log, "b1"), "postpone", 1)
    S.schedule(logger(log, "c2"), "postpone", 2)
    S.schedule(logger(log, "d1"), "postpone", 1)
    S.schedule(logger(log, "e3"), "delay", 3)
    S.schedule(logger(log, "f1"), "postpone", 1)
    clock.now = 10
    S.run()
    assert.same({ "b1", "d1", "f1", "c2", "a3", "e3" }, log)
    assert.same({}, clock.idled)
  end)

  it("orders cothreads postponed by yielding the same way", function()
    local S, clock = clocked()
    local log = {}
    local function sleeper(name, t)
      return coroutine.create(function()
        S.postpone(t)
        log[#log + 1] = name
      end)
    end
    S.schedule(sleeper("x5", 5))
    S.schedule(sleeper("y4", 4))
    S.schedule(sleeper("z5", 5))
    S.schedule(sleeper("w4", 4))
    S.run()
    assert.same({ "y4", "w4", "x5", "z5" }, log)
    assert.same({ 4, 5 }, clock.idled)
  end)

  it("moves due cothreads to the end of the ready queue before step resumes the head", function()
    local S, clock = clocked()
    local log = {}
    local r = logger(log, "r")
    local p = logger(log, "p")
    S.schedule(p, "postpone", 1)
    S.schedule(r)
    clock.now = 1
    S.step()
    assert.same({ "r" }, log)
    assert.same({ p }, ready(S))
  end)

  it("moves only the due cothreads", function()
    local S, clock = clocked()
    local p1 = logger({}, "p1")
    local p2 = logger({}, "p2")
    local r = coroutine.create(function() S.yield() end)
    S.schedule(p1, "postpone", 1)
    S.schedule(p2, "postpone", 2)
    S.schedule(r)
    clock.now = 1.5
    S.step()
    assert.same({ p1, r }, ready(S))
  end)
end)

describe("run with only postponed cothreads", function()
  it("calls idle with the earliest wake time", function()
    local S, clock = clocked()
    local log = {}
    S.schedule(logger(log, "p7"), "postpone", 7)
    S.schedule(logger(log, "p3"), "postpone", 3)
    S.schedule(logger(log, "p5"), "postpone", 5)
    S.run()
    assert.same({ 3, 5, 7 }, clock.idled)
    assert.same({ "p3", "p5", "p7" }, log)
  end)

  it("does not call idle while cothreads are ready", function()
    local S, clock = clocked()
    local log = {}
    S.schedule(logger(log, "p"), "postpone", 1)
    S.schedule(coroutine.create(function()
      for _ = 1, 3 do
        log[#log + 1] = "r"
        S.yield()
      end
    end))
    S.run()
    assert.same({ "r", "r", "r", "p" }, log)
    assert.same({ 1 }, clock.idled)
  end)

  it("does not call idle for a cothread already due", function()
    local S, clock = clocked(10)
    local log = {}
    S.schedule(logger(log, "p"), "postpone", 5)
    S.run()
    assert.same({ "p" }, log)
    assert.same({}, clock.idled)
  end)

  it("calls idle again while time has not reached the wake time", function()
    local S = cothread.new()
    local now = 0
    local idled = {}
    S.time = function() return now end
    S.idle = function(t)
      idled[#idled + 1] = t
      now = now + 1
    end
    local log = {}
    S.schedule(logger(log, "p"), "postpone", 3)
    S.run()
    assert.same({ "p" }, log)
    assert.same({ 3, 3, 3 }, idled)
  end)

  it("uses an idle assigned at once, even by a cothread during the run", function()
    local S = cothread.new()
    local now = 0
    local calls = {}
    S.time = function() return now end
    S.idle = function(t) calls[#calls + 1] = "old"; now = t end
    S.schedule(coroutine.create(function()
      S.idle = function(t) calls[#calls + 1] = "new " .. t; now = t end
      S.delay(4)
    end))
    S.run()
    assert.same({ "new 4" }, calls)
  end)

  it("goes on with cothreads that idle made ready", function()
    local S = cothread.new()
    local now = 0
    local log = {}
    local calls = 0
    S.time = function() return now end
    S.idle = function(t)
      calls = calls + 1
      if calls == 1 then
        S.schedule(coroutine.create(function() log[#log + 1] = "made ready by idle" end))
      else
        now = t
      end
    end
    S.schedule(logger(log, "p"), "postpone", 5)
    S.run()
    assert.same({ "made ready by idle", "p" }, log)
    assert.equal(2, calls)
  end)

  it("returns when the postponed queue is empty, leaving signal waiters", function()
    local S, clock = clocked()
    local log = {}
    S.schedule(logger(log, "w"), "wait", {})
    S.schedule(logger(log, "p"), "postpone", 2)
    S.run()
    assert.same({ "p" }, log)
    assert.same({ 2 }, clock.idled)
  end)
end)

describe("postpone in the past and delay <= 0", function()
  local cases = {
    { "postpone(time() - 10)", function(S) S.postpone(S.time() - 10) end },
    { "postpone(time())", function(S) S.postpone(S.time()) end },
    { "postpone(-math.huge)", function(S) S.postpone(-math.huge) end },
    { "delay(0)", function(S) S.delay(0) end },
    { "delay(-1)", function(S) S.delay(-1) end },
  }
  for _, case in ipairs(cases) do
    local name, sleep = case[1], case[2]

    it(name .. " runs the cothread after the ones already ready, without idling", function()
      local S, clock = clocked(100)
      local log = {}
      S.schedule(coroutine.create(function()
        log[#log + 1] = "p1"
        sleep(S)
        log[#log + 1] = "p2"
      end))
      S.schedule(logger(log, "r1"))
      S.schedule(logger(log, "r2"))
      S.run()
      assert.same({ "p1", "r1", "r2", "p2" }, log)
      assert.same({}, clock.idled)
    end)
  end

  it("scheduling with 'delay', 0 makes the cothread ready after those already ready", function()
    local S, clock = clocked(5)
    local log = {}
    S.schedule(logger(log, "d"), "delay", 0)
    S.schedule(logger(log, "r"))
    S.run()
    assert.same({ "r", "d" }, log)
    assert.same({}, clock.idled)
  end)
end)

describe("the default time", function()
  local S
  before_each(function() S = cothread.new() end)

  it("is a function returning a float", function()
    assert.is_function(S.time)
    local t = S.time()
    assert.is_number(t)
    if math.type then assert.equal("float", math.type(t)) end -- no integers before Lua 5.3
  end)

  it("never goes back", function()
    local last = S.time()
    for _ = 1, 10000 do
      local t = S.time()
      assert(t >= last, "time went back")
      last = t
    end
  end)

  it("counts seconds", function()
    local t0 = S.time()
    assert(os.execute("sleep 0.3"))
    local dt = S.time() - t0
    assert(dt >= 0.29, "elapsed " .. dt .. " s for a 0.3 s sleep")
    assert(dt < 3, "elapsed " .. dt .. " s for a 0.3 s sleep")
  end)

  it("is not os.time (it has sub-second resolution)", function()
    local t0 = S.time()
    local t1 = t0
    for _ = 1, 1e7 do
      t1 = S.time()
      if t1 ~= t0 then break end
    end
    assert(t1 > t0, "time() did not change")
    assert(t1 - t0 < 0.01, "smallest step of time() is " .. (t1 - t0) .. " s")
  end)
end)

describe("the default idle", function()
  local S
  before_each(function() S = cothread.new() end)

  it("sleeps until the given time without spinning", function()
    local t0 = S.time()
    local c0 = os.clock()
    S.idle(t0 + 0.3)
    local elapsed = S.time() - t0
    local cpu = os.clock() - c0
    assert(elapsed >= 0.3 - 1e-3, "idle returned after " .. elapsed .. " s, before 0.3 s")
    assert(elapsed < 2, "idle returned after " .. elapsed .. " s")
    assert(cpu < 0.1, "idle used " .. cpu .. " s of CPU time in 0.3 s")
  end)

  it("returns at once for a time already past", function()
    local t0 = S.time()
    S.idle(t0 - 5)
    assert(S.time() - t0 < 0.1)
  end)

  it("lets run wait for a delayed cothread without spinning", function()
    local log = {}
    S.schedule(coroutine.create(function()
      S.delay(0.25)
      log[#log + 1] = "woke"
    end))
    local t0 = S.time()
    local c0 = os.clock()
    S.run()
    local elapsed = S.time() - t0
    local cpu = os.clock() - c0
    assert.same({ "woke" }, log)
    assert(elapsed >= 0.25 - 1e-3, "run returned after " .. elapsed .. " s, before 0.25 s")
    assert(elapsed < 2, "run returned after " .. elapsed .. " s")
    assert(cpu < 0.1, "run used " .. cpu .. " s of CPU time in 0.25 s")
  end)

  it("with a custom time calls that time repeatedly until it reaches the given time", function()
    local n = 0
    S.time = function()
      n = n + 1
      return n
    end
    local wall = os.time()
    local c0 = os.clock()
    local target = S.time() + 5
    S.idle(target)
    assert(n >= target, "time() reached only " .. n .. ", idle was given " .. target)
    assert(os.time() - wall <= 1, "idle slept instead of calling the custom time")
    assert(os.clock() - c0 < 0.5)
  end)

  it("with a custom time lets run reach a postponed cothread", function()
    local n = 0
    S.time = function()
      n = n + 1
      return n
    end
    local log = {}
    S.schedule(coroutine.create(function()
      S.postpone(n + 5)
      log[#log + 1] = "woke at " .. n
    end))
    local wall = os.time()
    S.run()
    assert.equal(1, #log)
    assert(n >= 5)
    assert(os.time() - wall <= 1, "idle slept instead of calling the custom time")
  end)
end)
