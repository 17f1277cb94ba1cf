-- Scheduling: schedule/unschedule/scheduled/current/running/iready, every `when` of
-- schedule, the running cothread's registration, halt, step and run ordering.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/sched_spec.lua
--
-- Each test uses a fresh scheduler from cothread.new() so that tests cannot disturb
-- each other; the last block checks the default scheduler (the module table) itself.

local cothread = require "cothread"
local support = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "support.lua")
local ready = support.ready

-- A cothread that appends `name` to `log` each time it is resumed and yields in between
-- (`times` resumptions in all, 1 by default).
local function logger(S, log, name, times)
  return coroutine.create(function()
    for i = 1, times or 1 do
      log[#log + 1] = name
      if i < (times or 1) then S.yield() end
    end
  end)
end

describe("schedule", function()
  local S
  before_each(function() S = cothread.new() end)

  it("returns true when it registers a coroutine and false when it is already registered", function()
    local co = coroutine.create(function() end)
    assert.is_true(S.schedule(co))
    assert.is_false(S.schedule(co))
    assert.is_false(S.schedule(co, "next"))
    assert.same({ co }, ready(S))
  end)

  it("has no effect on an already registered cothread, whatever the when", function()
    local a = coroutine.create(function() end)
    local b = coroutine.create(function() end)
    S.schedule(a)
    S.schedule(b)
    assert.is_false(S.schedule(b, "next"))
    assert.is_false(S.schedule(a, "wait", {}))
    assert.is_false(S.schedule(a, "postpone", 0))
    assert.is_false(S.schedule(a, "delay", 1))
    assert.same({ a, b }, ready(S))
  end)

  it("returns false for a cothread waiting on a signal or postponed", function()
    S.time = function() return 0 end
    local w = coroutine.create(function() end)
    local p = coroutine.create(function() end)
    assert.is_true(S.schedule(w, "wait", "signal"))
    assert.is_true(S.schedule(p, "postpone", 10))
    assert.is_false(S.schedule(w))
    assert.is_false(S.schedule(p))
    assert.same({}, ready(S))
  end)

  it("appends to the ready queue by default ('later')", function()
    local a = coroutine.create(function() end)
    local b = coroutine.create(function() end)
    local c = coroutine.create(function() end)
    S.schedule(a)
    S.schedule(b)
    S.schedule(c, "later")
    assert.same({ a, b, c }, ready(S))
  end)

  it("inserts at the head of the ready queue with 'next'", function()
    local a = coroutine.create(function() end)
    local b = coroutine.create(function() end)
    local c = coroutine.create(function() end)
    S.schedule(a)
    S.schedule(b, "next")
    S.schedule(c, "next")
    assert.same({ c, b, a }, ready(S))
  end)

  it("registers in the queue of a signal with 'wait'", function()
    local log = {}
    local sig = {}
    local w = logger(S, log, "w")
    assert.is_true(S.schedule(w, "wait", sig))
    assert.is_true(S.scheduled(w))
    assert.same({}, ready(S))
    S.run()
    assert.same({}, log)
    assert.is_true(S.notify(sig))
    assert.same({ w }, ready(S))
    S.run()
    assert.same({ "w" }, log)
  end)

  it("registers in the postponed queue with 'postpone'", function()
    local now = 0
    S.time = function() return now end
    local log = {}
    local p = logger(S, log, "p")
    assert.is_true(S.schedule(p, "postpone", 5))
    assert.is_true(S.scheduled(p))
    assert.same({}, ready(S))
    S.step()
    assert.same({}, log)
    now = 4.5
    S.step()
    assert.same({}, log)
    now = 5
    S.step()
    assert.same({ "p" }, log)
    assert.is_false(S.scheduled(p))
  end)

  it("registers in the postponed queue with 'delay', relative to time()", function()
    local now = 100
    S.time = function() return now end
    local log = {}
    local p = logger(S, log, "p")
    assert.is_true(S.schedule(p, "delay", 3))
    now = 102.5
    S.step()
    assert.same({}, log)
    now = 103
    S.step()
    assert.same({ "p" }, log)
  end)

  it("resumes a newly scheduled coroutine's body with the values given to step", function()
    local got
    local co = coroutine.create(function(...) got = table.pack(...) end)
    S.schedule(co)
    S.step(1, nil, "three")
    assert.same({ n = 3, 1, nil, "three" }, got)
  end)
end)

describe("unschedule", function()
  local S
  before_each(function() S = cothread.new() end)

  it("returns false for a coroutine that is not registered", function()
    local co = coroutine.create(function() end)
    assert.is_false(S.unschedule(co))
  end)

  it("removes a cothread from the ready queue and returns true", function()
    local log = {}
    local a, b, c = logger(S, log, "a"), logger(S, log, "b"), logger(S, log, "c")
    S.schedule(a)
    S.schedule(b)
    S.schedule(c)
    assert.is_true(S.unschedule(b))
    assert.is_false(S.unschedule(b))
    assert.same({ a, c }, ready(S))
    S.run()
    assert.same({ "a", "c" }, log)
  end)

  it("removes a cothread waiting on a signal", function()
    local log = {}
    local sig = {}
    local w = logger(S, log, "w")
    S.schedule(w, "wait", sig)
    assert.is_true(S.unschedule(w))
    assert.is_false(S.scheduled(w))
    assert.is_false(S.notify(sig))
    S.run()
    assert.same({}, log)
  end)

  it("removes a postponed cothread", function()
    local now = 0
    S.time = function() return now end
    local idled = false
    S.idle = function() idled = true end
    local log = {}
    local p = logger(S, log, "p")
    S.schedule(p, "postpone", 1)
    assert.is_true(S.unschedule(p))
    now = 2
    S.run()
    assert.same({}, log)
    assert.is_false(idled)
  end)

  it("lets an unscheduled cothread be scheduled again", function()
    local log = {}
    local a = logger(S, log, "a")
    S.schedule(a, "wait", {})
    S.unschedule(a)
    assert.is_true(S.schedule(a))
    S.run()
    assert.same({ "a" }, log)
  end)
end)

describe("scheduled", function()
  local S
  before_each(function() S = cothread.new() end)

  it("is false for a coroutine never scheduled", function()
    assert.is_false(S.scheduled(coroutine.create(function() end)))
  end)

  it("is true while ready, waiting or postponed and false once unscheduled", function()
    S.time = function() return 0 end
    local r = coroutine.create(function() end)
    local w = coroutine.create(function() end)
    local p = coroutine.create(function() end)
    S.schedule(r)
    S.schedule(w, "wait", {})
    S.schedule(p, "postpone", 1)
    assert.is_true(S.scheduled(r))
    assert.is_true(S.scheduled(w))
    assert.is_true(S.scheduled(p))
    S.unschedule(r)
    S.unschedule(w)
    S.unschedule(p)
    assert.is_false(S.scheduled(r))
    assert.is_false(S.scheduled(w))
    assert.is_false(S.scheduled(p))
  end)

  it("is false once the cothread has finished", function()
    local co = coroutine.create(function() end)
    S.schedule(co)
    S.run()
    assert.equal("dead", coroutine.status(co))
    assert.is_false(S.scheduled(co))
  end)

  it("is false after the cothread suspended itself", function()
    local co = coroutine.create(function() S.suspend() end)
    S.schedule(co)
    S.step()
    assert.equal("suspended", coroutine.status(co))
    assert.is_false(S.scheduled(co))
  end)
end)

describe("current", function()
  local S
  before_each(function() S = cothread.new() end)

  it("is nil when the ready queue is empty", function()
    assert.is_nil(S.current())
    S.schedule(coroutine.create(function() end), "wait", {})
    assert.is_nil(S.current())
  end)

  it("is the head of the ready queue", function()
    local a = coroutine.create(function() end)
    local b = coroutine.create(function() end)
    S.schedule(a)
    assert.equal(a, S.current())
    S.schedule(b)
    assert.equal(a, S.current())
    S.schedule(b, "next") -- no effect: already registered
    assert.equal(a, S.current())
    S.unschedule(a)
    assert.equal(b, S.current())
  end)

  it("is the running cothread while it runs", function()
    local seen
    local co
    co = coroutine.create(function() seen = S.current() end)
    S.schedule(coroutine.create(function() end))
    S.schedule(co, "next")
    S.step()
    assert.equal(co, seen)
  end)
end)

describe("running", function()
  local S
  before_each(function() S = cothread.new() end)

  it("is nil outside of the scheduler", function()
    assert.is_nil(S.running())
    S.schedule(coroutine.create(function() end))
    assert.is_nil(S.running())
  end)

  it("is the cothread being resumed, and nil again after step returns", function()
    local seen
    local co = coroutine.create(function() seen = S.running() end)
    S.schedule(co)
    S.step()
    assert.equal(co, seen)
    assert.is_nil(S.running())
  end)

  it("is each cothread in turn during run", function()
    local seen = {}
    local cos = {}
    for i = 1, 3 do
      cos[i] = coroutine.create(function()
        seen[#seen + 1] = S.running()
        S.yield()
        seen[#seen + 1] = S.running()
      end)
      S.schedule(cos[i])
    end
    S.run()
    assert.same({ cos[1], cos[2], cos[3], cos[1], cos[2], cos[3] }, seen)
  end)

  it("is nil inside a coroutine resumed directly, not by the scheduler", function()
    local seen = "unset"
    local co = coroutine.create(function() seen = S.running() end)
    assert(coroutine.resume(co))
    assert.is_nil(seen)
  end)

  it("does not yield", function()
    local log = {}
    local co = coroutine.create(function()
      S.running()
      log[#log + 1] = "after running()"
    end)
    S.schedule(co)
    S.step()
    assert.same({ "after running()" }, log)
    assert.equal("dead", coroutine.status(co))
  end)
end)

describe("iready", function()
  local S
  before_each(function() S = cothread.new() end)

  it("iterates nothing when the ready queue is empty", function()
    local n = 0
    for _ in S.iready() do n = n + 1 end
    assert.equal(0, n)
  end)

  it("iterates the ready queue from head to tail, without waiting or postponed ones", function()
    S.time = function() return 0 end
    local a = coroutine.create(function() end)
    local b = coroutine.create(function() end)
    local c = coroutine.create(function() end)
    local w = coroutine.create(function() end)
    local p = coroutine.create(function() end)
    S.schedule(b)
    S.schedule(w, "wait", {})
    S.schedule(c)
    S.schedule(p, "postpone", 1)
    S.schedule(a, "next")
    assert.same({ a, b, c }, ready(S))
  end)

  it("lists the running cothread first while it runs", function()
    local seen
    local a = coroutine.create(function() seen = ready(S) end)
    local b = coroutine.create(function() end)
    S.schedule(a)
    S.schedule(b)
    S.step()
    assert.same({ a, b }, seen)
  end)
end)

describe("the running cothread", function()
  local S
  before_each(function() S = cothread.new() end)

  it("is registered while it runs: scheduled is true and schedule returns false", function()
    local results = {}
    local co
    co = coroutine.create(function()
      results.scheduled = S.scheduled(co)
      results.schedule = S.schedule(co)
      results.current = S.current()
    end)
    S.schedule(co)
    S.step()
    assert.is_true(results.scheduled)
    assert.is_false(results.schedule)
    assert.equal(co, results.current)
  end)

  it("goes where its yield operation says even if it unscheduled itself", function()
    local log = {}
    local co
    co = coroutine.create(function()
      log[#log + 1] = "first"
      S.unschedule(co)
      S.yield()
      log[#log + 1] = "second"
    end)
    S.schedule(co)
    S.step()
    assert.is_true(S.scheduled(co))
    assert.same({ co }, ready(S))
    S.step()
    assert.same({ "first", "second" }, log)
  end)

  it("goes where its yield operation says even if it rescheduled itself elsewhere", function()
    local sig = {}
    local co
    co = coroutine.create(function()
      S.unschedule(co)
      S.schedule(co, "wait", sig)
      S.yield()
    end)
    S.schedule(co)
    S.step()
    assert.same({ co }, ready(S))
    assert.is_false(S.notify(sig))
  end)

  it("is left out by suspend even if it scheduled itself again while running", function()
    local co
    co = coroutine.create(function()
      S.unschedule(co)
      S.schedule(co, "next")
      S.suspend()
    end)
    S.schedule(co)
    S.step()
    assert.is_false(S.scheduled(co))
    assert.same({}, ready(S))
  end)

  it("can be unscheduled while running and then finishes normally", function()
    local co
    co = coroutine.create(function()
      assert(S.unschedule(co))
      return "done"
    end)
    S.schedule(co)
    assert.equal("done", S.step())
    assert.is_false(S.scheduled(co))
    assert.equal("dead", coroutine.status(co))
  end)
end)

describe("halt", function()
  local S
  before_each(function() S = cothread.new() end)

  it("keeps the cothread at the head of the ready queue", function()
    local a = coroutine.create(function() S.halt() end)
    local b = coroutine.create(function() end)
    S.schedule(a)
    S.schedule(b)
    S.step()
    assert.same({ a, b }, ready(S))
  end)

  it("makes the cothread the head even if another was inserted with 'next' meanwhile", function()
    local other = coroutine.create(function() end)
    local a = coroutine.create(function()
      S.schedule(other, "next")
      S.halt()
    end)
    local b = coroutine.create(function() end)
    S.schedule(a)
    S.schedule(b)
    S.step()
    assert.same({ a, other, b }, ready(S))
    assert.equal(a, S.current())
  end)

  it("makes run return right after it, leaving the rest of the queue", function()
    local log = {}
    local a = coroutine.create(function()
      log[#log + 1] = "a1"
      S.halt()
      log[#log + 1] = "a2"
    end)
    local b = logger(S, log, "b")
    S.schedule(b)
    S.schedule(a)
    S.run()
    assert.same({ "b", "a1" }, log)
    assert.same({ a }, ready(S))
    S.run()
    assert.same({ "b", "a1", "a2" }, log)
    assert.same({}, ready(S))
  end)

  it("makes run return even when other cothreads are ready", function()
    local log = {}
    local a = coroutine.create(function()
      log[#log + 1] = "a1"
      S.halt()
      log[#log + 1] = "a2"
    end)
    local b = logger(S, log, "b", 2)
    S.schedule(a)
    S.schedule(b)
    S.run()
    assert.same({ "a1" }, log)
    assert.same({ a, b }, ready(S))
    S.run()
    assert.same({ "a1", "a2", "b", "b" }, log)
  end)
end)

describe("step", function()
  local S
  before_each(function() S = cothread.new() end)

  it("returns its arguments unchanged when the ready queue is empty", function()
    assert.same({ n = 3, 1, nil, "x" }, table.pack(S.step(1, nil, "x")))
    assert.same({ n = 0 }, table.pack(S.step()))
  end)

  it("returns its arguments when only waiting cothreads exist", function()
    S.schedule(coroutine.create(function() end), "wait", {})
    assert.same({ n = 2, "a", "b" }, table.pack(S.step("a", "b")))
  end)

  it("resumes only the head of the ready queue", function()
    local log = {}
    S.schedule(logger(S, log, "a", 2))
    S.schedule(logger(S, log, "b", 2))
    S.step()
    assert.same({ "a" }, log)
    S.step()
    assert.same({ "a", "b" }, log)
    S.step()
    assert.same({ "a", "b", "a" }, log)
  end)

  it("never idles: with only postponed cothreads not due it returns its arguments", function()
    S.time = function() return 0 end
    local idled = false
    S.idle = function() idled = true end
    S.schedule(coroutine.create(function() end), "postpone", 10)
    assert.same({ n = 1, "x" }, table.pack(S.step("x")))
    assert.is_false(idled)
  end)
end)

describe("run", function()
  local S
  before_each(function() S = cothread.new() end)

  it("returns its arguments unchanged when nothing is ready", function()
    assert.same({ n = 3, nil, 2, nil }, table.pack(S.run(nil, 2, nil)))
  end)

  it("resumes the ready cothreads in order until both queues are empty", function()
    local log = {}
    S.schedule(logger(S, log, "a", 3))
    S.schedule(logger(S, log, "b", 1))
    S.schedule(logger(S, log, "c", 2))
    S.run()
    assert.same({ "a", "b", "c", "a", "c", "a" }, log)
    assert.same({}, ready(S))
  end)

  it("returns when only cothreads waiting on signals remain", function()
    local log = {}
    local sig = {}
    local w = coroutine.create(function()
      log[#log + 1] = "w1"
      S.wait(sig)
      log[#log + 1] = "w2"
    end)
    S.schedule(w)
    S.run()
    assert.same({ "w1" }, log)
    assert.is_true(S.scheduled(w))
    S.notify(sig)
    S.run()
    assert.same({ "w1", "w2" }, log)
  end)

  it("resumes cothreads scheduled by cothreads during the same run", function()
    local log = {}
    local b = logger(S, log, "b")
    local c = logger(S, log, "c")
    local a = coroutine.create(function()
      log[#log + 1] = "a1"
      S.schedule(b)
      S.schedule(c, "next")
      S.yield()
      log[#log + 1] = "a2"
    end)
    S.schedule(a)
    S.run()
    assert.same({ "a1", "c", "b", "a2" }, log)
  end)

  it("does not resume a cothread that another one unscheduled during the run", function()
    local log = {}
    local b = logger(S, log, "b")
    local a = coroutine.create(function()
      log[#log + 1] = "a"
      S.unschedule(b)
    end)
    local c = logger(S, log, "c")
    S.schedule(a)
    S.schedule(b)
    S.schedule(c)
    S.run()
    assert.same({ "a", "c" }, log)
    assert.equal("suspended", coroutine.status(b))
  end)

  it("orders cothreads by every when: next, later, wait, postpone and delay", function()
    local now = 0
    S.time = function() return now end
    S.idle = function(t) now = t end
    local log = {}
    local sig = {}
    S.schedule(logger(S, log, "later1"))
    S.schedule(logger(S, log, "delay2"), "delay", 2)
    S.schedule(logger(S, log, "wait"), "wait", sig)
    S.schedule(logger(S, log, "postpone1"), "postpone", 1)
    S.schedule(logger(S, log, "later2"), "later")
    S.schedule(logger(S, log, "next"), "next")
    S.schedule(coroutine.create(function()
      log[#log + 1] = "notifier"
      S.notify(sig)
    end))
    S.run()
    assert.same({ "next", "later1", "later2", "notifier", "wait", "postpone1", "delay2" }, log)
  end)
end)

describe("the default scheduler (the module table)", function()
  it("has the scheduler functions", function()
    for _, name in ipairs { "new", "schedule", "unschedule", "scheduled", "current", "running",
                            "iready", "step", "run", "halt", "yield", "suspend", "wait",
                            "notify", "onall", "onany", "postpone", "delay", "plugin",
                            "time", "idle", "error" } do
      assert.is_function(cothread[name], name)
    end
    assert.is_table(cothread.trap)
  end)

  it("schedules and runs cothreads", function()
    local log = {}
    local a = logger(cothread, log, "a", 2)
    local b = logger(cothread, log, "b", 2)
    assert.is_true(cothread.schedule(a))
    assert.is_true(cothread.schedule(b))
    assert.is_true(cothread.scheduled(a))
    assert.equal(a, cothread.current())
    cothread.run()
    assert.same({ "a", "b", "a", "b" }, log)
    assert.is_nil(cothread.current())
    assert.is_false(cothread.scheduled(a))
  end)

  it("runs a cothread waiting on a signal once notified", function()
    local sig = {}
    local got
    local co = coroutine.create(function() got = cothread.wait(sig) end)
    cothread.schedule(co)
    cothread.run()
    assert.is_true(cothread.notify(sig))
    cothread.run("value")
    assert.equal("value", got)
    assert.is_false(cothread.scheduled(co))
  end)
end)

describe("a cothread's life outside the scheduler's hands", function()
  it("closed with coroutine.close while scheduled: forgotten, run goes on", function()
    if not support.has.close then return assert.is_nil(coroutine.close) end -- Lua 5.4's
    local S = cothread.new()
    local co = coroutine.create(function() S.yield() end)
    local other = 0
    S.schedule(co)
    S.schedule(coroutine.create(function() for _ = 1, 3 do other = other + 1; S.yield() end end))
    S.step()
    assert.is_true(coroutine.close(co))
    assert.is_false(S.scheduled(co), "closed: no longer scheduled")
    assert.is_true(S.schedule(coroutine.create(function() end)))
    S.run()
    assert.equal(3, other)
  end)

  it("closed while postponed, or while waiting for I/O: run neither raises nor blocks", function()
    if not support.has.close then return assert.is_nil(coroutine.close) end -- Lua 5.4's
    local socket = require "cothread.socket"
    local S = cothread.new()
    local sleeper = coroutine.create(function() S.delay(0.01) end)
    local reader
    local server = assert(socket.bind("127.0.0.1", 0))
    reader = coroutine.create(function() server:accept() end) -- nobody connects
    S.schedule(sleeper)
    S.schedule(reader)
    S.step()
    S.step()
    coroutine.close(sleeper)
    coroutine.close(reader)
    local ok, err = pcall(S.run)
    assert.is_true(ok, err)
    server:close()
  end)

  it("ended under coroutine.resume while registered: forgotten", function()
    local S = cothread.new()
    local co = coroutine.create(function() coroutine.yield() end)
    S.schedule(co)
    coroutine.resume(co)
    coroutine.resume(co) -- ends it
    assert.equal("dead", coroutine.status(co))
    assert.is_true(pcall(S.run))
    assert.is_false(S.scheduled(co))
  end)

  it("belongs to one scheduler at a time", function()
    local A, B = cothread.new(), cothread.new()
    local co = coroutine.create(function() A.yield() end)
    assert.is_true(A.schedule(co))
    local ok, err = pcall(B.schedule, co)
    assert.is_false(ok)
    assert.matches("coroutine scheduled by another scheduler", err)
    assert.is_true(A.unschedule(co))
    assert.is_true(B.schedule(co), "free again once A let go")
    B.run()
  end)

  it("a custom integer clock near math.maxinteger: delay(1) does not run at once", function()
    if not support.has.integers then return assert.is_nil(math.maxinteger) end -- Lua 5.3's
    local S = cothread.new()
    local t = math.maxinteger - 1
    S.time = function() return t end
    local woke = false
    local co = coroutine.create(function() S.delay(1); woke = true end)
    S.schedule(co)
    S.step()
    S.step()
    assert.is_false(woke)
    assert.is_true(S.scheduled(co), "still postponed")
  end)
end)
