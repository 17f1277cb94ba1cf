-- Yield operations: halt, yield, suspend, wait, postpone, delay; the values passed
-- between cothreads by step and run; a raw coroutine.yield with an op name is
-- equivalent; anything else yielded is an error raised by the cothread.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/yield_spec.lua

local cothread = require "cothread"
local support = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "support.lua")
local ready, clocked = support.ready, support.clocked

local pack = table.pack

describe("values passed by step", function()
  local S
  before_each(function() S = cothread.new() end)

  it("are the arguments of the body on the first resume", function()
    local got
    S.schedule(coroutine.create(function(...) got = pack(...) end))
    S.step("a", nil, 3)
    assert.same({ n = 3, "a", nil, 3 }, got)
  end)

  it("are what the yield operation returns on the next resume", function()
    local got = {}
    S.schedule(coroutine.create(function()
      got.yield = pack(S.yield())
      got.halt = pack(S.halt())
      got.wait = pack(S.wait("sig"))
    end))
    S.step()
    S.step("y1", "y2")
    S.step(nil, "h")
    S.notify("sig")
    S.step()
    assert.same({ n = 2, "y1", "y2" }, got.yield)
    assert.same({ n = 2, nil, "h" }, got.halt)
    assert.same({ n = 0 }, got.wait)
  end)

  it("are the extra arguments of the yield operation when step returns", function()
    local sig = {}
    local S, clock = clocked()
    S.schedule(coroutine.create(function()
      S.yield(1, nil)
      S.halt("h1", "h2")
      S.wait(sig, "w")
      S.postpone(5, "p", nil, "p3")
      S.delay(1, "d")
      S.suspend("s")
    end))
    assert.same({ n = 2, 1, nil }, pack(S.step()))
    assert.same({ n = 2, "h1", "h2" }, pack(S.step()))
    assert.same({ n = 1, "w" }, pack(S.step()))
    S.notify(sig)
    assert.same({ n = 3, "p", nil, "p3" }, pack(S.step()))
    clock.now = 5
    assert.same({ n = 1, "d" }, pack(S.step()))
    clock.now = 6
    assert.same({ n = 1, "s" }, pack(S.step()))
  end)

  it("are the values returned by the body when the cothread ends", function()
    S.schedule(coroutine.create(function() return "r1", nil, "r3" end))
    assert.same({ n = 3, "r1", nil, "r3" }, pack(S.step()))
  end)

  it("are nothing when a yield operation has no extra arguments", function()
    S.schedule(coroutine.create(function() S.yield() end))
    assert.same({ n = 0 }, pack(S.step("ignored")))
  end)
end)

describe("values passed by run", function()
  local S
  before_each(function() S = cothread.new() end)

  it("go from each cothread's produced values to the next one resumed", function()
    local got = {}
    S.schedule(coroutine.create(function(...)
      got.a = pack(...)
      return "from a", nil
    end))
    S.schedule(coroutine.create(function(...)
      got.b1 = pack(...)
      got.b2 = pack(S.yield("from b"))
      return "end of b"
    end))
    S.schedule(coroutine.create(function(...)
      got.c = pack(...)
      return "from c"
    end))
    local results = pack(S.run("start", 1))
    assert.same({ n = 2, "start", 1 }, got.a)
    assert.same({ n = 2, "from a", nil }, got.b1)
    assert.same({ n = 1, "from b" }, got.c)
    assert.same({ n = 1, "from c" }, got.b2)
    assert.same({ n = 1, "end of b" }, results)
  end)

  it("returns the values of a halt", function()
    S.schedule(coroutine.create(function() S.halt("halted", 2) end))
    S.schedule(coroutine.create(function() error("must not run", 0) end))
    assert.same({ n = 2, "halted", 2 }, pack(S.run()))
  end)

  it("returns the values produced by the last cothread resumed", function()
    S.schedule(coroutine.create(function() S.suspend("last", "values") end))
    assert.same({ n = 2, "last", "values" }, pack(S.run("in")))
  end)
end)

describe("yield", function()
  it("puts the cothread at the end of the ready queue", function()
    local S = cothread.new()
    local log = {}
    local a = coroutine.create(function()
      log[#log + 1] = "a1"
      S.yield()
      log[#log + 1] = "a2"
    end)
    local b = coroutine.create(function() log[#log + 1] = "b" end)
    S.schedule(a)
    S.schedule(b)
    S.step()
    assert.same({ b, a }, ready(S))
    S.run()
    assert.same({ "a1", "b", "a2" }, log)
  end)
end)

describe("suspend", function()
  it("takes the cothread out of the scheduler until it is scheduled again", function()
    local S = cothread.new()
    local got
    local co = coroutine.create(function()
      got = pack(S.suspend())
    end)
    S.schedule(co)
    S.run()
    assert.is_false(S.scheduled(co))
    assert.equal("suspended", coroutine.status(co))
    assert.is_nil(got)
    assert.is_true(S.schedule(co))
    S.run("again")
    assert.same({ n = 1, "again" }, got)
  end)
end)

describe("wait", function()
  it("puts the cothread in the queue of the signal until notified", function()
    local S = cothread.new()
    local sig = {}
    local log = {}
    local co = coroutine.create(function()
      log[#log + 1] = "before"
      S.wait(sig)
      log[#log + 1] = "after"
    end)
    S.schedule(co)
    S.run()
    assert.same({ "before" }, log)
    assert.is_true(S.scheduled(co))
    assert.same({}, ready(S))
    assert.is_true(S.notify(sig))
    S.run()
    assert.same({ "before", "after" }, log)
  end)
end)

describe("postpone", function()
  it("puts the cothread in the postponed queue until time() reaches the given time", function()
    local S, clock = clocked()
    local log = {}
    S.schedule(coroutine.create(function()
      S.postpone(10)
      log[#log + 1] = "woke at " .. clock.now
    end))
    S.step()
    assert.same({}, ready(S))
    clock.now = 9.999
    S.step()
    assert.same({}, log)
    clock.now = 10
    S.step()
    assert.same({ "woke at 10" }, log)
  end)
end)

describe("delay", function()
  it("is postpone(time() + seconds)", function()
    local S, clock = clocked()
    clock.now = 20
    local idled = {}
    S.idle = function(t) idled[#idled + 1] = t; clock.now = t end
    S.schedule(coroutine.create(function() S.delay(2.5) end))
    S.run()
    assert.same({ 22.5 }, idled)
  end)
end)

describe("a raw coroutine.yield with an op name", function()
  local S, clock
  before_each(function() S, clock = clocked() end)

  it("'yield' is cothread.yield", function()
    local log = {}
    local a = coroutine.create(function()
      log[#log + 1] = "a1"
      local v = coroutine.yield("yield", "produced")
      log[#log + 1] = "a2 " .. v
    end)
    local b = coroutine.create(function() log[#log + 1] = "b" end)
    S.schedule(a)
    S.schedule(b)
    assert.same({ n = 1, "produced" }, pack(S.step()))
    assert.same({ b, a }, ready(S))
    S.step()
    S.step("x")
    assert.same({ "a1", "b", "a2 x" }, log)
  end)

  it("'halt' is cothread.halt", function()
    local a = coroutine.create(function() coroutine.yield("halt", "h") end)
    local b = coroutine.create(function() end)
    S.schedule(a)
    S.schedule(b)
    assert.same({ n = 1, "h" }, pack(S.run()))
    assert.same({ a, b }, ready(S))
  end)

  it("'suspend' is cothread.suspend", function()
    local co = coroutine.create(function() coroutine.yield("suspend", "s") end)
    S.schedule(co)
    assert.same({ n = 1, "s" }, pack(S.run()))
    assert.is_false(S.scheduled(co))
    assert.equal("suspended", coroutine.status(co))
  end)

  it("'wait' is cothread.wait", function()
    local sig = {}
    local got
    local co = coroutine.create(function() got = coroutine.yield("wait", sig, "w1", "w2") end)
    S.schedule(co)
    assert.same({ n = 2, "w1", "w2" }, pack(S.run()))
    assert.is_true(S.scheduled(co))
    assert.same({}, ready(S))
    assert.is_true(S.notify(sig))
    S.run("notified")
    assert.equal("notified", got)
  end)

  it("'postpone' is cothread.postpone", function()
    local idled = {}
    S.idle = function(t) idled[#idled + 1] = t; clock.now = t end
    local co = coroutine.create(function() coroutine.yield("postpone", 7, "p") end)
    S.schedule(co)
    assert.same({ n = 1, "p" }, pack(S.step()))
    assert.is_true(S.scheduled(co))
    S.run()
    assert.same({ 7 }, idled)
    assert.equal("dead", coroutine.status(co))
  end)

  it("'delay' is cothread.delay", function()
    clock.now = 3
    local idled = {}
    S.idle = function(t) idled[#idled + 1] = t; clock.now = t end
    local co = coroutine.create(function() coroutine.yield("delay", 4, "d") end)
    S.schedule(co)
    assert.same({ n = 1, "d" }, pack(S.step()))
    S.run()
    assert.same({ 7 }, idled)
    assert.equal("dead", coroutine.status(co))
  end)
end)

describe("an invalid yield", function()
  local invalid = {
    ["nothing"] = function() coroutine.yield() end,
    ["a number"] = function() coroutine.yield(42) end,
    ["a table"] = function() coroutine.yield({}) end,
    ["a boolean"] = function() coroutine.yield(true, "yield") end,
    ["an unknown op name"] = function() coroutine.yield("no such op") end,
    ["the name of a function that is not a yield op"] = function() coroutine.yield("schedule") end,
    ["'wait' without a signal"] = function() coroutine.yield("wait") end,
    ["'wait' with a nil signal and values"] = function() coroutine.yield("wait", nil, 1) end,
    ["'wait' with a NaN signal"] = function() coroutine.yield("wait", 0 / 0) end,
    ["'postpone' without a time"] = function() coroutine.yield("postpone") end,
    ["'postpone' with a NaN time"] = function() coroutine.yield("postpone", 0 / 0) end,
    ["'postpone' with a table as time"] = function() coroutine.yield("postpone", {}) end,
    ["'delay' with a NaN delay"] = function() coroutine.yield("delay", 0 / 0) end,
    ["'delay' with a boolean delay"] = function() coroutine.yield("delay", true) end,
  }
  local names = {}
  for name in pairs(invalid) do names[#names + 1] = name end
  table.sort(names)

  for _, name in ipairs(names) do
    local body = invalid[name]

    it("of " .. name .. " is an error of the cothread, which is unregistered", function()
      local S = cothread.new()
      local co = coroutine.create(body)
      local log = {}
      local other = coroutine.create(function() log[#log + 1] = "other" end)
      S.schedule(co)
      S.schedule(other)
      local ok = pcall(S.step)
      assert.is_false(ok)
      assert.is_false(S.scheduled(co))
      assert.equal("suspended", coroutine.status(co))
      assert.same({ other }, ready(S))
      S.run()
      assert.same({ "other" }, log)
    end)

    it("of " .. name .. " calls the trap with the cothread and success false", function()
      local S = cothread.new()
      local co = coroutine.create(body)
      local calls = {}
      S.trap[co] = function(thread, success, err)
        calls[#calls + 1] = { thread = thread, success = success, has_err = err ~= nil }
        return "trapped"
      end
      S.schedule(co)
      assert.same({ n = 1, "trapped" }, pack(S.step()))
      assert.equal(1, #calls)
      assert.equal(co, calls[1].thread)
      assert.is_false(calls[1].success)
      assert.is_true(calls[1].has_err)
      assert.is_false(S.scheduled(co))
    end)

    it("of " .. name .. " calls cothread.error when there is no trap", function()
      local S = cothread.new()
      local co = coroutine.create(body)
      local errors = {}
      S.error = function(err)
        errors[#errors + 1] = err
        return "handled"
      end
      S.schedule(co)
      assert.same({ n = 1, "handled" }, pack(S.step()))
      assert.equal(1, #errors)
      assert.is_false(S.scheduled(co))
    end)
  end
end)
