-- Plugins: cothread.plugin(f) and the ops it gives f: yieldop (new yield operations)
-- and scheduleop (new `when`s for schedule and notify).
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/plugin_spec.lua

-- Lua 5.1 and LuaJIT have neither (their unpack is a global).
table.pack = table.pack or function(...) return { n = select("#", ...), ... } end
table.unpack = table.unpack or unpack
local cothread = require "cothread"
local support = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "support.lua")
local ready = support.ready

local pack = table.pack

-- Runs `define(S, ops)` as a plugin of scheduler S and returns ops.
local function with_ops(S, define)
  local ops
  S.plugin(function(sched, o)
    ops = o
    if define then define(sched, o) end
  end)
  return ops
end

describe("plugin", function()
  local S
  before_each(function() S = cothread.new() end)

  it("calls f with the scheduler and a table of ops, and returns f's results", function()
    local got
    local marker = {}
    local results = pack(S.plugin(function(...)
      got = pack(...)
      return "first", marker, nil
    end))
    assert.equal(2, got.n)
    assert.is_true(rawequal(S, got[1]))
    assert.is_table(got[2])
    assert.is_function(got[2].yieldop)
    assert.is_function(got[2].scheduleop)
    assert.same({ n = 3, "first", marker, nil }, results)
  end)

  it("calls f only once and returns the same values on later calls", function()
    local calls = 0
    local marker = {}
    local function f()
      calls = calls + 1
      return marker, "two"
    end
    local r1 = pack(S.plugin(f))
    local r2 = pack(S.plugin(f))
    local r3 = pack(S.plugin(f))
    assert.equal(1, calls)
    assert.is_true(rawequal(marker, r2[1]))
    assert.same(r1, r2)
    assert.same(r1, r3)
  end)

  it("calls different functions once each", function()
    local calls = {}
    local function f() calls[#calls + 1] = "f"; return "f" end
    local function g() calls[#calls + 1] = "g"; return "g" end
    assert.equal("f", S.plugin(f))
    assert.equal("g", S.plugin(g))
    assert.equal("f", S.plugin(f))
    assert.same({ "f", "g" }, calls)
  end)

  it("calls the same f once per scheduler, with that scheduler", function()
    local T = cothread.new()
    local seen = {}
    local function f(sched)
      seen[#seen + 1] = sched
      return sched
    end
    assert.equal(S, S.plugin(f))
    assert.equal(T, T.plugin(f))
    assert.equal(S, S.plugin(f))
    assert.equal(2, #seen)
    assert.equal(S, seen[1])
    assert.equal(T, seen[2])
  end)
end)

describe("ops.yieldop", function()
  local S
  before_each(function() S = cothread.new() end)

  it("defines a function cothread[name]", function()
    with_ops(S, function(sched, ops)
      ops.yieldop("park", 0, function() end)
    end)
    assert.is_function(S.park)
  end)

  it("defines it on that scheduler only", function()
    with_ops(S, function(sched, ops)
      ops.yieldop("park", 0, function() end)
    end)
    assert.is_nil(cothread.new().park)
    assert.is_nil(cothread.park)
  end)

  it("calls the handler with the thread taken out of every queue and the fixed arguments", function()
    local calls = {}
    with_ops(S, function(sched, ops)
      ops.yieldop("park", 2, function(thread, a, b, ...)
        calls[#calls + 1] = {
          thread = thread, a = a, b = b, extra = select("#", ...),
          scheduled = S.scheduled(thread), current = S.current(), ready = ready(S),
        }
      end)
    end)
    local other = coroutine.create(function() end)
    local co = coroutine.create(function() S.park("A", "B", "v1", "v2") end)
    S.schedule(co)
    S.schedule(other)
    S.step()
    assert.equal(1, #calls)
    local c = calls[1]
    assert.equal(co, c.thread)
    assert.equal("A", c.a)
    assert.equal("B", c.b)
    assert.equal(0, c.extra)
    assert.is_false(c.scheduled)
    assert.equal(other, c.current)
    assert.same({ other }, c.ready)
  end)

  it("makes the remaining arguments the produced values", function()
    with_ops(S, function(sched, ops)
      ops.yieldop("park", 1, function() end)
    end)
    S.schedule(coroutine.create(function() S.park("fixed", "v1", nil, "v3") end))
    assert.same({ n = 3, "v1", nil, "v3" }, pack(S.step()))
  end)

  it("leaves the thread out of the scheduler when the handler does not place it", function()
    with_ops(S, function(sched, ops)
      ops.yieldop("drop", 0, function() end)
    end)
    local co = coroutine.create(function() S.drop() end)
    S.schedule(co)
    S.run()
    assert.is_false(S.scheduled(co))
    assert.equal("suspended", coroutine.status(co))
  end)

  it("lets the handler place the thread with schedule", function()
    local placed
    with_ops(S, function(sched, ops)
      ops.yieldop("tohead", 0, function(thread)
        placed = sched.schedule(thread, "next")
      end)
    end)
    local log = {}
    local a = coroutine.create(function()
      log[#log + 1] = "a1"
      S.tohead()
      log[#log + 1] = "a2"
    end)
    local b = coroutine.create(function() log[#log + 1] = "b" end)
    S.schedule(a)
    S.schedule(b)
    S.step()
    assert.is_true(placed)
    assert.same({ a, b }, ready(S))
    S.run()
    assert.same({ "a1", "a2", "b" }, log)
  end)

  it("lets the handler make the thread wait on a signal given as a fixed argument", function()
    with_ops(S, function(sched, ops)
      ops.yieldop("waitfor", 1, function(thread, sig)
        sched.schedule(thread, "wait", sig)
      end)
    end)
    local got
    local sig = {}
    S.schedule(coroutine.create(function() got = pack(S.waitfor(sig, "produced")) end))
    assert.same({ n = 1, "produced" }, pack(S.run()))
    assert.is_nil(got)
    assert.is_true(S.notify(sig))
    S.run("resumed with")
    assert.same({ n = 1, "resumed with" }, got)
  end)

  it("is equivalent to coroutine.yield with its name", function()
    local calls = {}
    with_ops(S, function(sched, ops)
      ops.yieldop("park", 1, function(thread, x)
        calls[#calls + 1] = x
        sched.schedule(thread)
      end)
    end)
    local co = coroutine.create(function()
      local r = coroutine.yield("park", "fixed", "produced")
      return "got " .. r
    end)
    S.schedule(co)
    assert.same({ n = 1, "produced" }, pack(S.step()))
    assert.same({ "fixed" }, calls)
    assert.equal("got back", S.step("back"))
  end)

  it("with nfixed 0 produces every argument", function()
    with_ops(S, function(sched, ops)
      ops.yieldop("again", 0, function(thread) sched.schedule(thread) end)
    end)
    S.schedule(coroutine.create(function() S.again(1, 2, 3) end))
    assert.same({ n = 3, 1, 2, 3 }, pack(S.step()))
  end)

  it("refuses to redefine a built-in yield operation", function()
    for _, name in ipairs { "halt", "yield", "suspend", "wait", "postpone", "delay" } do
      local ok = true
      with_ops(S, function(sched, ops)
        ok = pcall(ops.yieldop, name, 0, function() end)
      end)
      assert.is_false(ok, name)
    end
    local log = {}
    S.schedule(coroutine.create(function()
      S.yield()
      log[#log + 1] = "yield still works"
    end))
    S.run()
    assert.same({ "yield still works" }, log)
  end)

  it("refuses to redefine a yield operation defined by a plugin", function()
    local second_ok
    with_ops(S, function(sched, ops)
      ops.yieldop("park", 0, function() end)
    end)
    with_ops(S, function(sched, ops)
      second_ok = pcall(ops.yieldop, "park", 1, function() end)
    end)
    assert.is_false(second_ok)
  end)
end)

describe("ops.scheduleop", function()
  local S
  before_each(function() S = cothread.new() end)

  it("defines a when for schedule, whose handler places the thread", function()
    local calls = {}
    with_ops(S, function(sched, ops)
      ops.scheduleop("waitfor", 2, function(thread, sig, extra)
        calls[#calls + 1] = { thread = thread, sig = sig, extra = extra,
                              scheduled = sched.scheduled(thread) }
        sched.schedule(thread, "wait", sig)
      end)
    end)
    local log = {}
    local sig = {}
    local co = coroutine.create(function() log[#log + 1] = "ran" end)
    assert.is_true(S.schedule(co, "waitfor", sig, "x"))
    assert.equal(1, #calls)
    assert.equal(co, calls[1].thread)
    assert.equal(sig, calls[1].sig)
    assert.equal("x", calls[1].extra)
    assert.is_false(calls[1].scheduled)
    assert.is_true(S.scheduled(co))
    S.run()
    assert.same({}, log)
    S.notify(sig)
    S.run()
    assert.same({ "ran" }, log)
  end)

  it("passes nil for fixed arguments left out, in schedule and in notify", function()
    local seen = {}
    with_ops(S, function(sched, ops)
      ops.scheduleop("two", 2, function(thread, a, b)
        seen[#seen + 1] = { a = a, b = b, n = select("#", a, b) }
        sched.schedule(thread)
      end)
    end)
    S.schedule(coroutine.create(function() end), "two", "x")
    local sig = {}
    S.schedule(coroutine.create(function() end), "wait", sig)
    assert.is_true(S.notify(sig, "two", "y"))
    assert.same({ { a = "x", b = nil, n = 2 }, { a = "y", b = nil, n = 2 } }, seen)
  end)

  it("is not used by schedule for an already registered thread", function()
    local calls = 0
    with_ops(S, function(sched, ops)
      ops.scheduleop("mine", 0, function(thread)
        calls = calls + 1
        sched.schedule(thread)
      end)
    end)
    local co = coroutine.create(function() end)
    S.schedule(co)
    assert.is_false(S.schedule(co, "mine"))
    assert.equal(0, calls)
  end)

  it("defines a when for notify, calling the handler for each waiter in order", function()
    local order = {}
    with_ops(S, function(sched, ops)
      ops.scheduleop("front", 1, function(thread, tag)
        order[#order + 1] = tag
        sched.schedule(thread, "next")
      end)
    end)
    local log = {}
    local sig = {}
    local w = {}
    for i = 1, 3 do
      w[i] = coroutine.create(function() log[#log + 1] = "w" .. i end)
      S.schedule(w[i], "wait", sig)
    end
    local r = coroutine.create(function() log[#log + 1] = "r" end)
    S.schedule(r)
    assert.is_true(S.notify(sig, "front", "tag"))
    assert.same({ "tag", "tag", "tag" }, order)
    S.run()
    -- Each waiter was inserted at the head in turn, so the last one comes first.
    assert.same({ "w3", "w2", "w1", "r" }, log)
  end)

  it("lets the handler leave the thread out", function()
    with_ops(S, function(sched, ops)
      ops.scheduleop("nowhere", 0, function() end)
    end)
    local co = coroutine.create(function() end)
    S.schedule(co, "nowhere")
    assert.is_false(S.scheduled(co))
  end)

  it("refuses to redefine a built-in when", function()
    for _, name in ipairs { "next", "later", "wait", "postpone", "delay" } do
      local ok = true
      with_ops(S, function(sched, ops)
        ok = pcall(ops.scheduleop, name, 0, function() end)
      end)
      assert.is_false(ok, name)
    end
    local co = coroutine.create(function() end)
    local other = coroutine.create(function() end)
    S.schedule(other)
    S.schedule(co, "next")
    assert.same({ co, other }, ready(S))
  end)

  it("refuses to redefine a when defined by a plugin", function()
    local second_ok
    with_ops(S, function(sched, ops)
      ops.scheduleop("mine", 0, function() end)
    end)
    with_ops(S, function(sched, ops)
      second_ok = pcall(ops.scheduleop, "mine", 0, function() end)
    end)
    assert.is_false(second_ok)
  end)
end)
