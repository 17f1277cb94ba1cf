-- cothread.promise(): the core's futures in Lua. Results as pcall gives them,
-- first settlement wins, Lua error values kept, dropped promises, await
-- suspending only its cothread (with timeouts and unschedule), and bad input.
-- (Handing futures to C and back is tested by tests/embed.)
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/future_spec.lua

local cothread = require "cothread"

local function pack(...) return { n = select("#", ...), ... } end

describe("a promise and its future", function()
  it("start pending", function()
    local p, f = cothread.promise()
    assert.matches("^cothread.promise: ", tostring(p))
    assert.matches("^cothread.future: ", tostring(f))
    assert.is_false(f:ready())
    assert.equal("pending", f:state())
    assert.same({ n = 2, false, "pending" }, pack(f:value()))
    assert.is_false(p:settled())
  end)

  it("give every value set, nil included, and the first settlement wins", function()
    local p, f = cothread.promise()
    local t = {}
    assert.is_true(p:set(1, nil, t, "x"))
    assert.is_false(p:set(2))
    assert.is_false(p:fail("late"))
    assert.is_true(p:settled())
    assert.is_true(f:ready())
    assert.equal("value", f:state())
    local r = pack(f:value())
    assert.equal(5, r.n)
    assert.is_true(r[1])
    assert.equal(1, r[2])
    assert.is_nil(r[3])
    assert.equal(t, r[4], "the same table, not a copy")
    assert.equal("x", r[5])
    local q, g = cothread.promise()
    assert.is_true(q:set()) -- no values: success alone
    assert.same({ n = 1, true }, pack(g:value()))
  end)

  it("keep a Lua error value as it was given", function()
    local p, f = cothread.promise()
    local err = { reason = "broken" }
    assert.is_true(p:fail(err))
    assert.equal("error", f:state())
    local ok, e = f:value()
    assert.is_false(ok)
    assert.equal(err, e)
    local q, g = cothread.promise()
    assert.is_true(q:fail("plain", -71))
    assert.same({ n = 2, false, "plain" }, pack(g:value()))
  end)

  it("say dropped once every promise object is collected unsettled", function()
    local p, f = cothread.promise()
    local p2 = p:future() -- another future of it
    p = nil
    collectgarbage()
    collectgarbage()
    assert.equal("dropped", f:state())
    assert.same({ n = 2, false, "dropped" }, pack(f:value()))
    assert.equal("dropped", p2:state())
  end)

  it("release the values exactly once however many futures read them", function()
    local gone = setmetatable({}, { __mode = "k" })
    do
      local p, f = cothread.promise()
      local v = {}
      gone[v] = true
      p:set(v)
      local g = p:future()
      assert.equal(v, select(2, g:value()))
      p, f, g, v = nil, nil, nil, nil
    end
    collectgarbage()
    cothread.promise() -- the next call releases what was dropped
    collectgarbage()
    assert.is_nil(next(gone), "the value was released")
  end)
end)

describe("await", function()
  it("returns at once when settled, also outside cothreads", function()
    local p, f = cothread.promise()
    p:set("v")
    assert.same({ n = 2, true, "v" }, pack(f:await()))
  end)

  it("outside cothreads blocks the thread until its timeout", function()
    local _, f = cothread.promise()
    local t0 = cothread.time()
    assert.same({ n = 2, false, "timeout" }, pack(f:await(0.02)))
    assert.is_true(cothread.time() - t0 >= 0.019)
  end)

  it("suspends only its cothread until another settles it", function()
    local S = cothread.new()
    local p, f = S.promise()
    local ticks, got = 0, nil
    S.schedule(coroutine.create(function() got = pack(f:await()) end))
    S.schedule(coroutine.create(function()
      for _ = 1, 3 do ticks = ticks + 1; S.yield() end
      p:set("done", 42)
    end))
    S.run()
    assert.equal(3, ticks)
    assert.same({ n = 3, true, "done", 42 }, got)
  end)

  it("times out while others run, and leaves the future alone", function()
    local S = cothread.new()
    local p, f = S.promise()
    local ticks, first, second = 0, nil, nil
    S.schedule(coroutine.create(function()
      -- 0.2 s: a hundred of the ticker's delays, so that it ticks more than once
      -- even under valgrind on a loaded machine.
      first = pack(f:await(0.2))
      second = pack(f:await(5))
    end))
    S.schedule(coroutine.create(function()
      while not first do ticks = ticks + 1; S.delay(0.002) end
      p:set("later")
    end))
    S.run()
    assert.same({ n = 2, false, "timeout" }, first)
    assert.is_true(ticks > 1)
    assert.same({ n = 2, true, "later" }, second)
  end)

  it("left by unschedule is never resumed by the settlement, and says cancelled", function()
    local S = cothread.new()
    local p, f = S.promise()
    local got
    local co = coroutine.create(function() got = pack(f:await()) end)
    S.schedule(co)
    S.step()
    assert.is_true(S.scheduled(co))
    assert.is_true(S.unschedule(co))
    p:set("too late")
    S.run()
    assert.is_nil(got, "not resumed by the settlement")
    S.schedule(co)
    S.run()
    assert.same({ n = 2, false, "cancelled" }, got)
  end)

  it("is woken by a settlement from a dropped promise", function()
    local S = cothread.new()
    local got
    do
      local p, f = S.promise()
      S.schedule(coroutine.create(function() got = pack(f:await(5)) end))
      S.step()
      p = nil
    end
    collectgarbage()
    collectgarbage()
    S.run()
    assert.same({ n = 2, false, "dropped" }, got)
  end)
end)

describe("bad input", function()
  it("raises for wrong objects and arguments", function()
    local p, f = cothread.promise()
    assert.has_error(function() p.set(f, 1) end)
    assert.has_error(function() f.await(p) end)
    assert.has_error(function() f:await("soon") end)
    assert.has_error(function() p:fail() end)
    -- nil would read as a success with no value: refused, the promise unsettled.
    local ok, err = pcall(p.fail, p, nil)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("error value expected, got nil", 1, true), err)
    assert.is_false(p:settled())
    assert.has_error(function() p:fail("x", 5) end, nil)
    assert.has_error(function() cothread.future_of("not a pointer") end)
    assert.has_error(function() cothread.promise_of({}) end)
    assert.equal("pending", f:state(), "nothing settled by the failed calls")
  end)
end)
