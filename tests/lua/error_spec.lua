-- Errors: cothread.error and cothread.trap, errors raised by traps, the scheduler's
-- consistency after errors, and argument errors of the API functions.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/error_spec.lua

-- Lua 5.1 and LuaJIT have neither (their unpack is a global).
table.pack = table.pack or function(...) return { n = select("#", ...), ... } end
table.unpack = table.unpack or unpack
local cothread = require "cothread"
local support = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "support.lua")
local ready = support.ready

local pack = table.pack

-- Calls `fn`, which must raise Lua's "bad argument #n to 'name' (...)" error, and
-- returns the message. `fn` must call the API function in a way that lets Lua name
-- it (a call as a statement or in an expression, not a tail call and not through
-- pcall directly), as a user's code would.
local function assert_bad_argument(n, name, fn)
  local ok, err = pcall(fn)
  assert(not ok, ("expected bad argument #%d to '%s', got no error"):format(n, name))
  assert(type(err) == "string",
         ("expected a string error, got a %s: %s"):format(type(err), tostring(err)))
  local expected = ("bad argument #%d to '%s'"):format(n, name)
  assert(err:find(expected, 1, true), ("expected %q in the error %q"):format(expected, err))
  return err
end

-- The message of an error raised by the default cothread.error, without
-- the traceback it appends.
local function first_line(err)
  return (tostring(err):match("^[^\n]*"))
end

-- The traceback the default cothread.error appends to a string error: the
-- message, then the failed cothread's stack.
local function traced(err, msg)
  assert.is_string(err)
  local head, trace = err:match("^(.-)\nstack traceback:\n(.*)$")
  assert(head, "no traceback in: " .. err)
  assert.equal(msg, head)
  return trace
end

describe("the default cothread.error", function()
  local S
  before_each(function() S = cothread.new() end)

  it("is a function of the module, not Lua's error", function()
    assert.is_function(S.error)
    assert.are_not.equal(error, S.error)
  end)

  it("appends the failed cothread's own traceback to a string error", function()
    local function inner() error("boom", 0) end
    local function outer() inner() end
    S.schedule(coroutine.create(function() S.yield(); outer() end))
    local ok, err = pcall(S.run)
    assert.is_false(ok)
    local trace = traced(err, "boom")
    -- The cothread's frames, not run's caller's: the functions that failed.
    assert.truthy(trace:find("in function 'error'", 1, true) or trace:find("in function <", 1, true), trace)
    assert.truthy(trace:find("error_spec%.lua:%d+: in"), trace)
    assert.truthy(select(2, trace:gsub("error_spec%.lua:%d+:", "")) >= 3, trace) -- inner, outer, body
    assert.falsy(trace:find("in function 'cothread.run'", 1, true), trace)
  end)

  it("keeps the message's position ahead of the traceback", function()
    S.schedule(coroutine.create(function() error("at line") end))
    local ok, err = pcall(S.step)
    assert.is_false(ok)
    local head = err:match("^([^\n]*)")
    assert.truthy(head:find("^[^\n]*error_spec%.lua:%d+: at line$"), err)
    traced(err, head)
  end)

  it("makes a number error a string with the traceback", function()
    S.schedule(coroutine.create(function() error(42, 0) end))
    local ok, err = pcall(S.step)
    assert.is_false(ok)
    traced(err, "42")
  end)

  it("leaves the message alone when debug.traceback is gone", function()
    local saved = debug.traceback
    debug.traceback = nil
    S.schedule(coroutine.create(function() error("plain", 0) end))
    local ok, err = pcall(S.step)
    debug.traceback = saved
    assert.is_false(ok)
    assert.equal("plain", err)
  end)

  it("gets the failed thread as its second argument, debug.traceback working on it", function()
    local co = coroutine.create(function() local function f() error("deep", 0) end f() end)
    local got
    S.error = function(e, thread)
      got = { e = e, thread = thread, status = coroutine.status(thread), trace = debug.traceback(thread) }
    end
    S.schedule(co)
    S.step()
    assert.equal("deep", got.e)
    assert.equal(co, got.thread)
    assert.equal("dead", got.status)
    assert.truthy(got.trace:find("error_spec%.lua:%d+: in"), got.trace)
  end)

  it("gets the thread for an invalid yield too", function()
    local co = coroutine.create(function() coroutine.yield("no such op") end)
    local got
    S.error = function(e, thread) got = { e = e, thread = thread } end
    S.schedule(co)
    S.step()
    assert.is_string(got.e)
    assert.equal(co, got.thread)
  end)

  it("is Lua's error again when assigned: the error object unchanged", function()
    S.error = error
    S.schedule(coroutine.create(function() error("boom", 0) end))
    local ok, err = pcall(S.step)
    assert.is_false(ok)
    assert.equal("boom", err)
  end)

  it("propagates a table error object unchanged (the same table) out of step", function()
    local obj = { code = 42 }
    S.schedule(coroutine.create(function() error(obj) end))
    local ok, err = pcall(S.step)
    assert.is_false(ok)
    assert.is_true(rawequal(obj, err))
  end)

  it("propagates a table error object unchanged out of run", function()
    local obj = setmetatable({}, { __tostring = function() return "custom" end })
    S.schedule(coroutine.create(function() S.yield() end))
    S.schedule(coroutine.create(function() error(obj) end))
    local ok, err = pcall(S.run)
    assert.is_false(ok)
    assert.is_true(rawequal(obj, err))
  end)

  it("propagates an error raised after the cothread yielded", function()
    local obj = {}
    S.schedule(coroutine.create(function()
      S.yield()
      S.yield()
      error(obj)
    end))
    S.step()
    S.step()
    local ok, err = pcall(S.step)
    assert.is_false(ok)
    assert.is_true(rawequal(obj, err))
  end)

  it("leaves the failed cothread dead and unregistered", function()
    local co = coroutine.create(function() error("x") end)
    S.schedule(co)
    pcall(S.step)
    assert.equal("dead", coroutine.status(co))
    assert.is_false(S.scheduled(co))
    assert.is_nil(S.current())
    assert.is_nil(S.running())
  end)
end)

describe("a replaced cothread.error", function()
  local S
  before_each(function() S = cothread.new() end)

  it("is called with the error object and its results are the produced values", function()
    local obj = {}
    local got
    S.error = function(e)
      got = e
      return "r1", nil, "r3"
    end
    S.schedule(coroutine.create(function() error(obj) end))
    assert.same({ n = 3, "r1", nil, "r3" }, pack(S.step()))
    assert.is_true(rawequal(obj, got))
  end)

  it("lets run go on, passing its results to the next cothread", function()
    local got
    S.error = function(e) return "handled " .. e end
    S.schedule(coroutine.create(function() error("oops", 0) end))
    S.schedule(coroutine.create(function(...)
      got = pack(...)
      return "end"
    end))
    assert.same({ n = 1, "end" }, pack(S.run()))
    assert.same({ n = 1, "handled oops" }, got)
  end)

  it("takes effect at once when assigned between steps", function()
    local calls = {}
    S.schedule(coroutine.create(function() error("first", 0) end))
    S.schedule(coroutine.create(function() error("second", 0) end))
    S.error = function(e) calls[#calls + 1] = "h1 " .. e end
    S.step()
    S.error = function(e) calls[#calls + 1] = "h2 " .. e end
    S.step()
    assert.same({ "h1 first", "h2 second" }, calls)
  end)

  it("that raises another error propagates that error", function()
    S.error = function() error("from handler", 0) end
    S.schedule(coroutine.create(function() error("from cothread", 0) end))
    local ok, err = pcall(S.step)
    assert.is_false(ok)
    assert.equal("from handler", err)
  end)

  it("is not called when the cothread ends normally", function()
    local called = false
    S.error = function() called = true end
    S.schedule(coroutine.create(function() return 1 end))
    assert.equal(1, S.step())
    assert.is_false(called)
  end)
end)

describe("cothread.trap", function()
  local S
  before_each(function() S = cothread.new() end)

  it("is a table with weak keys", function()
    assert.is_table(S.trap)
    local mt = getmetatable(S.trap)
    assert.is_table(mt)
    assert.is_string(mt.__mode)
    assert.truthy(mt.__mode:find("k", 1, true))
    assert.is_nil(next(S.trap))
  end)

  it("is called as trap[co](co, true, ...) when co ends, and its results are produced", function()
    local got
    local co = coroutine.create(function() return "a", nil, "c" end)
    S.trap[co] = function(...)
      got = pack(...)
      return "t1", "t2"
    end
    S.schedule(co)
    assert.same({ n = 2, "t1", "t2" }, pack(S.step()))
    assert.same({ n = 5, co, true, "a", nil, "c" }, got)
  end)

  it("is called as trap[co](co, false, err) when co fails, and its results are produced", function()
    local obj = {}
    local got
    local error_called = false
    S.error = function() error_called = true end
    local co = coroutine.create(function() error(obj) end)
    S.trap[co] = function(...)
      got = pack(...)
      return "recovered"
    end
    S.schedule(co)
    assert.same({ n = 1, "recovered" }, pack(S.step()))
    assert.equal(3, got.n)
    assert.equal(co, got[1])
    assert.is_false(got[2])
    assert.is_true(rawequal(obj, got[3]))
    assert.is_false(error_called)
  end)

  it("is called when the cothread is dead", function()
    local status
    local co = coroutine.create(function() end)
    S.trap[co] = function(thread) status = coroutine.status(thread) end
    S.schedule(co)
    S.step()
    assert.equal("dead", status)
  end)

  it("is not called when the cothread yields", function()
    local calls = 0
    local co = coroutine.create(function()
      S.yield()
      S.wait("sig")
    end)
    S.trap[co] = function() calls = calls + 1 end
    S.schedule(co)
    S.run()
    assert.equal(0, calls)
    S.notify("sig")
    S.run()
    assert.equal(1, calls)
  end)

  it("gives run the produced values to pass to the next cothread", function()
    local got
    local co = coroutine.create(function() error("x", 0) end)
    S.trap[co] = function(_, success, e) return success, e end
    S.schedule(co)
    S.schedule(coroutine.create(function(...) got = pack(...) end))
    S.run()
    assert.same({ n = 2, false, "x" }, got)
  end)

  it("only applies to the cothread it is registered for", function()
    local trapped = {}
    local a = coroutine.create(function() return "a" end)
    local b = coroutine.create(function() error("b", 0) end)
    S.trap[a] = function(co) trapped[#trapped + 1] = co end
    S.schedule(a)
    S.schedule(b)
    S.step()
    local ok, err = pcall(S.step)
    assert.is_false(ok)
    assert.equal("b", first_line(err))
    assert.same({ a }, trapped)
  end)

  it("may schedule other cothreads, which run in the same run", function()
    local log = {}
    local co = coroutine.create(function() error("crashed", 0) end)
    S.trap[co] = function(_, success, err)
      log[#log + 1] = "trap " .. tostring(success) .. " " .. err
      S.schedule(coroutine.create(function() log[#log + 1] = "replacement" end))
    end
    S.schedule(co)
    S.run()
    assert.same({ "trap false crashed", "replacement" }, log)
  end)

  it("that raises propagates its error object out of step", function()
    local obj = {}
    local co = coroutine.create(function() return "done" end)
    S.trap[co] = function() error(obj) end
    S.schedule(co)
    local ok, err = pcall(S.step)
    assert.is_false(ok)
    assert.is_true(rawequal(obj, err))
    assert.is_false(S.scheduled(co))
  end)

  it("that raises leaves the scheduler consistent", function()
    local log = {}
    local a = coroutine.create(function()
      log[#log + 1] = "a1"
      S.yield()
      log[#log + 1] = "a2"
    end)
    local b = coroutine.create(function() log[#log + 1] = "b" end)
    local c = coroutine.create(function()
      log[#log + 1] = "c1"
      S.yield()
      log[#log + 1] = "c2"
    end)
    S.trap[b] = function() error("trap failed", 0) end
    S.schedule(a)
    S.schedule(b)
    S.schedule(c)
    local ok, err = pcall(S.run)
    assert.is_false(ok)
    assert.equal("trap failed", err)
    assert.same({ c, a }, ready(S))
    S.run()
    assert.same({ "a1", "b", "c1", "a2", "c2" }, log)
  end)
end)

describe("the scheduler after an error", function()
  local S
  before_each(function() S = cothread.new() end)

  it("keeps every other cothread in its place and a later run continues", function()
    local log = {}
    local a = coroutine.create(function()
      log[#log + 1] = "a1"
      S.yield()
      log[#log + 1] = "a2"
    end)
    local b = coroutine.create(function()
      log[#log + 1] = "b"
      error("b failed", 0)
    end)
    local c = coroutine.create(function()
      log[#log + 1] = "c1"
      S.yield()
      log[#log + 1] = "c2"
    end)
    S.schedule(a)
    S.schedule(b)
    S.schedule(c)
    local ok, err = pcall(S.run)
    assert.is_false(ok)
    assert.equal("b failed", first_line(err))
    assert.same({ "a1", "b" }, log)
    assert.same({ c, a }, ready(S))
    assert.equal(c, S.current())
    assert.is_nil(S.running())
    S.run()
    assert.same({ "a1", "b", "c1", "a2", "c2" }, log)
  end)

  it("keeps the cothreads waiting on signals, which run once notified", function()
    local log = {}
    local sig = {}
    for i = 1, 3 do
      S.schedule(coroutine.create(function() log[#log + 1] = "w" .. i end), "wait", sig)
    end
    S.schedule(coroutine.create(function() error("failed", 0) end))
    assert.is_false((pcall(S.run)))
    assert.is_true(S.notify(sig))
    S.run()
    assert.same({ "w1", "w2", "w3" }, log)
  end)

  it("keeps the cothreads waiting on a combined signal", function()
    local log = {}
    local a, b = {}, {}
    S.schedule(coroutine.create(function() log[#log + 1] = "w" end), "wait", S.onall(a, b))
    S.notify(a)
    S.schedule(coroutine.create(function() error("failed", 0) end))
    assert.is_false((pcall(S.run)))
    S.notify(b)
    S.run()
    assert.same({ "w" }, log)
  end)

  it("keeps the postponed cothreads", function()
    local now = 0
    S.time = function() return now end
    S.idle = function(t) now = t end
    local log = {}
    S.schedule(coroutine.create(function() log[#log + 1] = "p" end), "postpone", 3)
    S.schedule(coroutine.create(function() error("failed", 0) end))
    assert.is_false((pcall(S.run)))
    S.run()
    assert.same({ "p" }, log)
    assert.equal(3, now)
  end)

  it("is consistent after an error raised by a cothread that waited on a signal", function()
    local log = {}
    local sig = {}
    S.schedule(coroutine.create(function()
      S.wait(sig)
      error("after wait", 0)
    end))
    S.schedule(coroutine.create(function()
      S.wait(sig)
      log[#log + 1] = "second waiter"
    end))
    S.run()
    S.notify(sig)
    local ok, err = pcall(S.run)
    assert.is_false(ok)
    assert.equal("after wait", first_line(err))
    S.run()
    assert.same({ "second waiter" }, log)
  end)
end)

describe("argument errors", function()
  local S
  before_each(function() S = cothread.new() end)

  describe("of schedule", function()
    it("reject a dead coroutine as #1", function()
      local co = coroutine.create(function() end)
      assert(coroutine.resume(co))
      assert_bad_argument(1, "schedule", function() S.schedule(co) end)
    end)

    it("reject a non-thread as #1", function()
      for _, v in ipairs { 1, "co", {}, print, true } do
        assert_bad_argument(1, "schedule", function() S.schedule(v) end)
      end
      assert_bad_argument(1, "schedule", function() S.schedule(nil) end)
      assert_bad_argument(1, "schedule", function() S.schedule() end)
    end)

    it("reject the main thread, which is running, as #1", function()
      local main = coroutine.running()
      assert_bad_argument(1, "schedule", function() S.schedule(main) end)
    end)

    it("reject a running coroutine that the scheduler is not resuming as #1", function()
      local co = coroutine.create(function()
        local ok, err = pcall(function() S.schedule(coroutine.running()) end)
        return ok, err
      end)
      local _, ok, err = coroutine.resume(co)
      assert.is_false(ok)
      assert.truthy(err:find("bad argument #1 to 'schedule'", 1, true), err)
      assert.is_false(S.scheduled(co))
    end)

    it("reject a normal coroutine (one that resumed the running one) as #1", function()
      local err
      local outer
      outer = coroutine.create(function()
        S.schedule(coroutine.create(function()
          local ok, e = pcall(function() S.schedule(outer) end)
          err = ok and "no error" or e
        end))
        S.step()
      end)
      assert(coroutine.resume(outer))
      assert.truthy(err:find("bad argument #1 to 'schedule'", 1, true), err)
      assert.is_false(S.scheduled(outer))
    end)

    it("reject the running cothread of another scheduler as #1", function()
      local T = cothread.new()
      local err
      local co
      co = coroutine.create(function()
        local ok, e = pcall(function() S.schedule(co) end)
        err = ok and "no error" or e
      end)
      T.schedule(co)
      T.step()
      assert.truthy(err:find("bad argument #1 to 'schedule'", 1, true), err)
      assert.is_false(S.scheduled(co))
    end)

    it("accept this scheduler's running cothread (and return false)", function()
      local result
      local co
      co = coroutine.create(function() result = S.schedule(co) end)
      S.schedule(co)
      S.step()
      assert.is_false(result)
    end)

    it("reject an unknown when as #2", function()
      local co = coroutine.create(function() end)
      assert_bad_argument(2, "schedule", function() S.schedule(co, "bogus") end)
      assert_bad_argument(2, "schedule", function() S.schedule(co, "Later") end)
      assert_bad_argument(2, "schedule", function() S.schedule(co, 42) end)
      assert.is_false(S.scheduled(co))
    end)

    it("reject a nil or NaN signal as #3", function()
      local co = coroutine.create(function() end)
      assert_bad_argument(3, "schedule", function() S.schedule(co, "wait") end)
      assert_bad_argument(3, "schedule", function() S.schedule(co, "wait", nil) end)
      assert_bad_argument(3, "schedule", function() S.schedule(co, "wait", 0 / 0) end)
      assert.is_false(S.scheduled(co))
    end)

    it("reject a missing or NaN time as #3", function()
      local co = coroutine.create(function() end)
      assert_bad_argument(3, "schedule", function() S.schedule(co, "postpone") end)
      assert_bad_argument(3, "schedule", function() S.schedule(co, "postpone", 0 / 0) end)
      assert_bad_argument(3, "schedule", function() S.schedule(co, "delay", 0 / 0) end)
      assert_bad_argument(3, "schedule", function() S.schedule(co, "postpone", {}) end)
      assert.is_false(S.scheduled(co))
    end)
  end)

  describe("of notify", function()
    it("reject a nil or NaN signal as #1", function()
      assert_bad_argument(1, "notify", function() S.notify(nil) end)
      assert_bad_argument(1, "notify", function() S.notify() end)
      assert_bad_argument(1, "notify", function() S.notify(0 / 0) end)
    end)

    it("reject an unknown when as #2 and leave the waiters waiting", function()
      local log = {}
      local sig = {}
      S.schedule(coroutine.create(function() log[#log + 1] = "w" end), "wait", sig)
      assert_bad_argument(2, "notify", function() S.notify(sig, "bogus") end)
      S.run()
      assert.same({}, log)
      assert.is_true(S.notify(sig))
      S.run()
      assert.same({ "w" }, log)
    end)

    it("reject a nil target signal or NaN time as #3", function()
      local sig = {}
      S.schedule(coroutine.create(function() end), "wait", sig)
      assert_bad_argument(3, "notify", function() S.notify(sig, "wait", nil) end)
      assert_bad_argument(3, "notify", function() S.notify(sig, "postpone", 0 / 0) end)
      assert_bad_argument(3, "notify", function() S.notify(sig, "delay", 0 / 0) end)
      assert.is_true(S.notify(sig))
    end)
  end)

  describe("of onall and onany", function()
    it("reject a nil signal", function()
      assert_bad_argument(2, "onall", function() S.onall({}, nil, {}) end)
      assert_bad_argument(1, "onany", function() S.onany(nil) end)
    end)
  end)

  describe("of unschedule and scheduled", function()
    it("reject a non-thread as #1", function()
      for _, v in ipairs { 1, "co", {}, print, false } do
        assert_bad_argument(1, "unschedule", function() S.unschedule(v) end)
        assert_bad_argument(1, "scheduled", function() S.scheduled(v) end)
      end
      assert_bad_argument(1, "unschedule", function() S.unschedule(nil) end)
      assert_bad_argument(1, "scheduled", function() S.scheduled() end)
    end)
  end)

  describe("of yield operations, raised in the calling cothread", function()
    it("wait(nil) raises bad argument #1 to 'wait' (signal expected)", function()
      local err
      local after = false
      S.schedule(coroutine.create(function()
        local ok, e = pcall(function() S.wait(nil) end)
        err = ok and "no error" or e
        after = true
      end))
      S.step()
      assert.is_string(err)
      assert.truthy(err:find("bad argument #1 to 'wait' (signal expected)", 1, true), err)
      assert.is_true(after)
    end)

    it("wait(nil) not caught by the cothread propagates out of step", function()
      local co = coroutine.create(function() S.wait(nil) end)
      S.schedule(co)
      local ok, err = pcall(S.step)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("bad argument #1 to 'wait' (signal expected)", 1, true),
                    tostring(err))
      assert.equal("dead", coroutine.status(co))
      assert.is_false(S.scheduled(co))
    end)

    it("wait(NaN), postpone(NaN) and delay(NaN) raise bad argument #1", function()
      local errs = {}
      S.schedule(coroutine.create(function()
        local ok
        ok, errs.wait = pcall(function() S.wait(0 / 0) end)
        ok, errs.postpone = pcall(function() S.postpone(0 / 0) end)
        ok, errs.delay = pcall(function() S.delay(0 / 0) end)
      end))
      S.step()
      for _, name in ipairs { "wait", "postpone", "delay" } do
        local e = tostring(errs[name])
        assert.truthy(e:find("bad argument #1 to '" .. name .. "'", 1, true), name .. ": " .. e)
      end
    end)
  end)
end)

describe("step and run from inside a cothread", function()
  local S
  before_each(function() S = cothread.new() end)

  it("of the same scheduler raise an error in that cothread", function()
    local results = {}
    local co = coroutine.create(function()
      results.step = pack(pcall(S.step))
      results.run = pack(pcall(S.run))
      return "finished"
    end)
    S.schedule(co)
    S.schedule(coroutine.create(function() end))
    assert.equal("finished", S.step())
    assert.is_false(results.step[1])
    assert.is_false(results.run[1])
    assert.equal(1, #ready(S))
  end)

  it("of another scheduler are fine", function()
    local T = cothread.new()
    local log = {}
    T.schedule(coroutine.create(function(...)
      log[#log + 1] = "t " .. select("#", ...)
      T.yield("t1")
      log[#log + 1] = "t again"
      return "t2"
    end))
    S.schedule(coroutine.create(function()
      log[#log + 1] = "s"
      local r1 = T.step("x", "y")
      log[#log + 1] = "T.step gave " .. r1
      local r2 = T.run()
      log[#log + 1] = "T.run gave " .. r2
      log[#log + 1] = "T.running " .. tostring(T.running())
    end))
    S.run()
    assert.same({ "s", "t 2", "T.step gave t1", "t again", "T.run gave t2", "T.running nil" }, log)
  end)
end)

describe("messages quoting a user's value", function()
  local huge = string.rep("x", 2 ^ 20)

  it("show at most 48 bytes of it", function()
    local S = cothread.new()
    local ok, msg = pcall(S.schedule, coroutine.create(function() end), huge)
    assert.is_false(ok)
    assert.matches("invalid option 'x+%.%.%.'", msg)
    assert.is_true(#msg < 200, #msg)
    local err
    S.error = function(e) err = e end
    S.schedule(coroutine.create(function() coroutine.yield(huge) end))
    S.run()
    assert.matches("invalid yield operation 'x+%.%.%.'", err)
    assert.is_true(#err < 200, #err)
    S.plugin(function(_, ops)
      ops.yieldop(huge, 0, function() end)
      local okd, dup = pcall(ops.yieldop, huge, 0, function() end)
      assert.is_false(okd)
      assert.matches("already exists", dup)
      assert.is_true(#dup < 200, #dup)
    end)
  end)
end)
