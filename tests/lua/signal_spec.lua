-- Signals: wait/notify with every when (including moving waiters to another signal and
-- postpone/delay), notify's result, order kept; combined signals onall/onany.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/signal_spec.lua

local cothread = require "cothread"
local support = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "support.lua")
local ready, clocked = support.ready, support.clocked

-- Schedules a cothread that waits on `sig` and, once resumed, appends `name` to `log`.
local function waiter(S, log, name, sig)
  local co = coroutine.create(function() log[#log + 1] = name end)
  assert(S.schedule(co, "wait", sig))
  return co
end

-- A ready cothread that appends `name` to `log`.
local function readyone(S, log, name, when)
  local co = coroutine.create(function() log[#log + 1] = name end)
  assert(S.schedule(co, when))
  return co
end

describe("notify", function()
  local S, clock
  before_each(function() S, clock = clocked() end)

  it("returns false when nobody waits on the signal", function()
    assert.is_false(S.notify({}))
    assert.is_false(S.notify("nobody"))
  end)

  it("returns true when it moved waiters, and false on a second notify", function()
    local log = {}
    local sig = {}
    waiter(S, log, "w", sig)
    assert.is_true(S.notify(sig))
    assert.is_false(S.notify(sig))
  end)

  it("moves the waiters to the end of the ready queue by default, in order", function()
    local log = {}
    local sig = {}
    local r = readyone(S, log, "r")
    local w1 = waiter(S, log, "w1", sig)
    local w2 = waiter(S, log, "w2", sig)
    local w3 = waiter(S, log, "w3", sig)
    assert.is_true(S.notify(sig))
    assert.same({ r, w1, w2, w3 }, ready(S))
    S.run()
    assert.same({ "r", "w1", "w2", "w3" }, log)
  end)

  it("with 'later' moves the waiters to the end of the ready queue, in order", function()
    local log = {}
    local sig = {}
    local r = readyone(S, log, "r")
    local w1 = waiter(S, log, "w1", sig)
    local w2 = waiter(S, log, "w2", sig)
    assert.is_true(S.notify(sig, "later"))
    assert.same({ r, w1, w2 }, ready(S))
  end)

  it("with 'next' moves the waiters to the head of the ready queue, in order", function()
    local log = {}
    local sig = {}
    local r = readyone(S, log, "r")
    local w1 = waiter(S, log, "w1", sig)
    local w2 = waiter(S, log, "w2", sig)
    assert.is_true(S.notify(sig, "next"))
    assert.same({ w1, w2, r }, ready(S))
    S.run()
    assert.same({ "w1", "w2", "r" }, log)
  end)

  it("with 'next' from a running cothread makes the waiters run right after it", function()
    local log = {}
    local sig = {}
    S.schedule(coroutine.create(function()
      log[#log + 1] = "r1"
      S.notify(sig, "next")
      S.yield()
      log[#log + 1] = "r2"
    end))
    readyone(S, log, "x")
    waiter(S, log, "w1", sig)
    waiter(S, log, "w2", sig)
    S.run()
    assert.same({ "r1", "w1", "w2", "x", "r2" }, log)
  end)

  it("with 'wait' moves the waiters to another signal, after its own waiters, in order", function()
    local log = {}
    local sig, other = {}, {}
    waiter(S, log, "v", other)
    waiter(S, log, "w1", sig)
    waiter(S, log, "w2", sig)
    assert.is_true(S.notify(sig, "wait", other))
    assert.same({}, ready(S))
    assert.is_false(S.notify(sig))
    S.run()
    assert.same({}, log)
    assert.is_true(S.notify(other))
    S.run()
    assert.same({ "v", "w1", "w2" }, log)
  end)

  it("with 'wait' keeps the waiters registered", function()
    local log = {}
    local sig, other = {}, {}
    local w = waiter(S, log, "w", sig)
    S.notify(sig, "wait", other)
    assert.is_true(S.scheduled(w))
    assert.is_false(S.schedule(w))
  end)

  it("with 'postpone' moves the waiters to the postponed queue, in order", function()
    local log = {}
    local sig = {}
    waiter(S, log, "w1", sig)
    waiter(S, log, "w2", sig)
    waiter(S, log, "w3", sig)
    assert.is_true(S.notify(sig, "postpone", 5))
    assert.same({}, ready(S))
    S.run()
    assert.same({ 5 }, clock.idled)
    assert.same({ "w1", "w2", "w3" }, log)
  end)

  it("with 'postpone' orders them with other postponed cothreads by time, ties in postpone order", function()
    local log = {}
    local sig = {}
    S.schedule(coroutine.create(function() log[#log + 1] = "p5" end), "postpone", 5)
    S.schedule(coroutine.create(function() log[#log + 1] = "p7" end), "postpone", 7)
    waiter(S, log, "w1", sig)
    waiter(S, log, "w2", sig)
    S.notify(sig, "postpone", 5)
    S.schedule(coroutine.create(function() log[#log + 1] = "p5 later" end), "postpone", 5)
    S.run()
    assert.same({ "p5", "w1", "w2", "p5 later", "p7" }, log)
  end)

  it("with 'delay' postpones the waiters to time() + seconds, in order", function()
    clock.now = 10
    local log = {}
    local sig = {}
    waiter(S, log, "w1", sig)
    waiter(S, log, "w2", sig)
    assert.is_true(S.notify(sig, "delay", 2))
    S.step()
    assert.same({}, log)
    S.run()
    assert.same({ 12 }, clock.idled)
    assert.same({ "w1", "w2" }, log)
  end)

  it("resumes the waiters with the values passed to step or run", function()
    local got = {}
    local sig = {}
    S.schedule(coroutine.create(function() got[1] = table.pack(S.wait(sig)) end))
    S.run()
    S.notify(sig)
    S.run("v", nil)
    assert.same({ n = 2, "v", nil }, got[1])
  end)

  it("moves only the waiters of that signal", function()
    local log = {}
    local a, b = {}, {}
    waiter(S, log, "a1", a)
    waiter(S, log, "b1", b)
    waiter(S, log, "a2", a)
    S.notify(a)
    S.run()
    assert.same({ "a1", "a2" }, log)
    S.notify(b)
    S.run()
    assert.same({ "a1", "a2", "b1" }, log)
  end)

  it("accepts any value but nil and NaN as a signal", function()
    local values = { false, true, 0, 1.5, -1, "", "s", {}, print, function() end,
                     coroutine.create(function() end), io.stdout }
    for i, sig in ipairs(values) do
      local log = {}
      waiter(S, log, "w" .. i, sig)
      assert.is_true(S.notify(sig), "notify of " .. tostring(sig))
      S.run()
      assert.same({ "w" .. i }, log, "signal " .. tostring(sig))
    end
  end)

  it("treats equal strings as the same signal", function()
    local log = {}
    waiter(S, log, "w", "sig" .. 1)
    assert.is_true(S.notify("sig1"))
  end)

  it("does not move waiters of the same value in another scheduler", function()
    local T = cothread.new()
    local log = {}
    local sig = {}
    waiter(S, log, "s", sig)
    waiter(T, log, "t", sig)
    assert.is_true(T.notify(sig))
    S.run()
    assert.same({}, log)
    T.run()
    assert.same({ "t" }, log)
  end)

  it("lets a cothread notify the signal it will not wait on", function()
    local log = {}
    local sig = {}
    S.schedule(coroutine.create(function()
      log[#log + 1] = "w1"
      S.wait(sig)
      log[#log + 1] = "w2"
    end))
    S.schedule(coroutine.create(function()
      log[#log + 1] = "n"
      log[#log + 1] = tostring(S.notify(sig))
    end))
    S.run()
    assert.same({ "w1", "n", "true", "w2" }, log)
  end)
end)

describe("onall", function()
  local S
  before_each(function() S = cothread.new() end)

  it("returns a function", function()
    assert.is_function(S.onall({}, {}))
  end)

  it("moves its waiters only once all the combined signals were notified", function()
    local log = {}
    local a, b, c = {}, {}, {}
    local all = S.onall(a, b, c)
    waiter(S, log, "w", all)
    S.notify(a)
    S.run()
    assert.same({}, log)
    S.notify(c)
    S.run()
    assert.same({}, log)
    S.notify(b)
    S.run()
    assert.same({ "w" }, log)
  end)

  it("counts a signal notified twice only once", function()
    local log = {}
    local a, b = {}, {}
    waiter(S, log, "w", S.onall(a, b))
    S.notify(a)
    S.notify(a)
    S.run()
    assert.same({}, log)
    S.notify(b)
    S.run()
    assert.same({ "w" }, log)
  end)

  it("moves its waiters to the end of the ready queue, in order", function()
    local log = {}
    local a, b = {}, {}
    local all = S.onall(a, b)
    waiter(S, log, "w1", all)
    waiter(S, log, "w2", all)
    waiter(S, log, "w3", all)
    readyone(S, log, "r")
    S.notify(a)
    S.notify(b)
    S.run()
    assert.same({ "r", "w1", "w2", "w3" }, log)
  end)

  it("makes notify of a component return true while it has waiters", function()
    local log = {}
    local a, b = {}, {}
    local all = S.onall(a, b)
    assert.is_false(S.notify(a))
    waiter(S, log, "w", all)
    assert.is_true(S.notify(a))
    assert.is_true(S.notify(b))
    S.run()
    assert.same({ "w" }, log)
    assert.is_false(S.notify(a))
    assert.is_false(S.notify(b))
  end)

  it("does not remember notifications that arrived while nobody waited", function()
    local log = {}
    local a, b = {}, {}
    local all = S.onall(a, b)
    S.notify(a)
    waiter(S, log, "w", all)
    S.notify(b)
    S.run()
    assert.same({}, log)
    S.notify(a)
    S.run()
    assert.same({ "w" }, log)
  end)

  it("discards the notifications received so far when called", function()
    local log = {}
    local a, b = {}, {}
    local all = S.onall(a, b)
    waiter(S, log, "w", all)
    S.notify(a)
    all()
    S.notify(b)
    S.run()
    assert.same({}, log)
    S.notify(a)
    S.run()
    assert.same({ "w" }, log)
  end)

  it("starts afresh for new waiters after it fired", function()
    local log = {}
    local a, b = {}, {}
    local all = S.onall(a, b)
    waiter(S, log, "w1", all)
    S.notify(a)
    S.notify(b)
    S.run()
    assert.same({ "w1" }, log)
    waiter(S, log, "w2", all)
    S.notify(b)
    S.run()
    assert.same({ "w1" }, log)
    S.notify(a)
    S.run()
    assert.same({ "w1", "w2" }, log)
  end)

  it("counts a notify of a component whatever its when", function()
    local log = {}
    local a, b, c, d, other = {}, {}, {}, {}, {}
    S.time = function() return 0 end
    waiter(S, log, "w", S.onall(a, b, c, d))
    assert.is_true(S.notify(a, "next"))
    assert.is_true(S.notify(b, "wait", other))
    assert.is_true(S.notify(c, "postpone", 100))
    S.run()
    assert.same({}, log)
    assert.is_true(S.notify(d, "delay", 100))
    S.step()
    assert.same({ "w" }, log)
  end)

  it("moves the component's own waiters as notify says and counts for the combined signal", function()
    local log = {}
    local a, b = {}, {}
    waiter(S, log, "direct", a)
    waiter(S, log, "combined", S.onall(a, b))
    S.notify(b)
    assert.is_true(S.notify(a, "next"))
    S.run()
    assert.same({ "direct", "combined" }, log)
  end)

  it("lets waiters leave: with no waiter left, notify of a component returns false", function()
    local log = {}
    local a, b = {}, {}
    local w = waiter(S, log, "w", S.onall(a, b))
    S.unschedule(w)
    assert.is_false(S.notify(a))
    assert.is_false(S.notify(b))
    S.run()
    assert.same({}, log)
  end)

  it("can wait via the wait yield operation", function()
    local log = {}
    local a, b = {}, {}
    local all = S.onall(a, b)
    S.schedule(coroutine.create(function()
      S.wait(all)
      log[#log + 1] = "woke"
    end))
    S.run()
    S.notify(a)
    S.notify(b)
    S.run()
    assert.same({ "woke" }, log)
  end)
end)

describe("onany", function()
  local S
  before_each(function() S = cothread.new() end)

  it("returns a function", function()
    assert.is_function(S.onany({}, {}))
  end)

  it("moves its waiters once any of the combined signals was notified", function()
    for _, which in ipairs { 1, 2, 3 } do
      local log = {}
      local sigs = { {}, {}, {} }
      waiter(S, log, "w", S.onany(sigs[1], sigs[2], sigs[3]))
      assert.is_true(S.notify(sigs[which]))
      S.run()
      assert.same({ "w" }, log, "notified signal #" .. which)
    end
  end)

  it("moves its waiters to the end of the ready queue, in order", function()
    local log = {}
    local a = {}
    local any = S.onany(a, {})
    waiter(S, log, "w1", any)
    waiter(S, log, "w2", any)
    readyone(S, log, "r")
    S.notify(a)
    S.run()
    assert.same({ "r", "w1", "w2" }, log)
  end)

  it("does not remember notifications that arrived while nobody waited", function()
    local log = {}
    local a, b = {}, {}
    local any = S.onany(a, b)
    assert.is_false(S.notify(a))
    local w = waiter(S, log, "w", any)
    S.run()
    assert.same({}, log)
    assert.is_true(S.scheduled(w))
    S.notify(b)
    S.run()
    assert.same({ "w" }, log)
  end)

  it("counts a notify of a component whatever its when", function()
    S.time = function() return 0 end
    local whens = {
      { "next" }, { "later" }, { "wait", {} }, { "postpone", 100 }, { "delay", 100 },
    }
    for _, when in ipairs(whens) do
      local log = {}
      local a = {}
      waiter(S, log, "w", S.onany(a, {}))
      assert.is_true(S.notify(a, table.unpack(when)), "when " .. when[1])
      S.step()
      assert.same({ "w" }, log, "when " .. when[1])
    end
  end)

  it("is not fired by a signal that is not one of its components", function()
    local log = {}
    waiter(S, log, "w", S.onany({}, {}))
    assert.is_false(S.notify({}))
    S.run()
    assert.same({}, log)
  end)

  it("can be waited on again after it fired", function()
    local log = {}
    local a = {}
    local any = S.onany(a)
    waiter(S, log, "w1", any)
    S.notify(a)
    S.run()
    waiter(S, log, "w2", any)
    S.run()
    assert.same({ "w1" }, log)
    S.notify(a)
    S.run()
    assert.same({ "w1", "w2" }, log)
  end)
end)

describe("nested combined signals", function()
  local S
  before_each(function() S = cothread.new() end)

  it("onall of an onany fires when the onany and the other component were notified", function()
    local log = {}
    local a, b, c = {}, {}, {}
    waiter(S, log, "w", S.onall(S.onany(a, b), c))
    S.notify(b)
    S.run()
    assert.same({}, log)
    S.notify(c)
    S.run()
    assert.same({ "w" }, log)
  end)

  it("onany of an onall fires when the onall completes", function()
    local log = {}
    local a, b, c = {}, {}, {}
    waiter(S, log, "w", S.onany(S.onall(a, b), c))
    S.notify(a)
    S.run()
    assert.same({}, log)
    S.notify(b)
    S.run()
    assert.same({ "w" }, log)
  end)

  it("onany of an onall fires on its other component alone", function()
    local log = {}
    local a, b, c = {}, {}, {}
    waiter(S, log, "w", S.onany(S.onall(a, b), c))
    assert.is_true(S.notify(c))
    S.run()
    assert.same({ "w" }, log)
  end)

  it("onall of onalls needs every leaf", function()
    local log = {}
    local a, b, c, d = {}, {}, {}, {}
    waiter(S, log, "w", S.onall(S.onall(a, b), S.onall(c, d)))
    for _, sig in ipairs { a, b, c } do
      S.notify(sig)
      S.run()
      assert.same({}, log)
    end
    S.notify(d)
    S.run()
    assert.same({ "w" }, log)
  end)

  it("does not disturb a direct waiter of the inner combined signal", function()
    local log = {}
    local a, b = {}, {}
    local inner = S.onany(a)
    waiter(S, log, "inner", inner)
    waiter(S, log, "outer", S.onall(inner, b))
    S.notify(a)
    S.run()
    assert.same({ "inner" }, log)
    S.notify(b)
    S.run()
    assert.same({ "inner", "outer" }, log)
  end)
end)

describe("a combined signal of another scheduler", function()
  it("is an ordinary value: notifying its components does nothing, notifying it does", function()
    local S, T = cothread.new(), cothread.new()
    local log = {}
    local a = {}
    local foreign = T.onany(a)
    waiter(S, log, "w", foreign)
    assert.is_false(S.notify(a))
    assert.is_false(T.notify(a))
    S.run()
    T.run()
    assert.same({}, log)
    assert.is_true(S.notify(foreign))
    S.run()
    assert.same({ "w" }, log)
  end)
end)
