-- cothread.pcall and cothread.xpcall: pcall and xpcall that a cothread may
-- yield across on every Lua, Lua 5.1 too (where the standard ones cannot).
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/pcall_spec.lua

local cothread = require "cothread"
local support = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "support.lua")
local go = support.go

local function pack(...) return { n = select("#", ...), ... } end

-- Runs f(S) in a cothread of a new scheduler S to its end; returns what f returned.
local function in_cothread(f)
  local S = cothread.new()
  local r
  go(S, function() r = pack(f(S)) end)
  S.run()
  assert(r, "the cothread did not finish")
  return unpack or table.unpack, r
end

local function run(f)
  local unpack_, r = in_cothread(f)
  return unpack_(r, 1, r.n)
end

describe("cothread.pcall", function()
  it("answers as pcall does, outside cothreads too", function()
    assert.same({ n = 3, true, 1, 2 }, pack(cothread.pcall(function(a, b) return a, b end, 1, 2)))
    local ok, err = cothread.pcall(error, "plain", 0)
    assert.same({ false, "plain" }, { ok, err })
    assert.same(pack(pcall(nil)), pack(cothread.pcall(nil)))
  end)

  it("lets a cothread.delay inside suspend the cothread, others running meanwhile", function()
    local r
    local ticks = support.ticking(function(S)
      r = pack(cothread.pcall(function(x)
        S.delay(0.03)
        return x, "after"
      end, "before"))
    end)
    assert.same({ n = 3, true, "before", "after" }, r)
    assert.is_true(ticks > 0, "others ran while it waited")
  end)

  it("lets a blocking call inside park the cothread, others running meanwhile", function()
    local c, a = support.tcp_pair()
    local r
    local ticks = support.ticking(function(S)
      go(S, function()
        S.delay(0.03)
        a:send("line\n")
      end)
      r = pack(cothread.pcall(function() return c:receive("*l") end))
    end)
    assert.same({ true, "line" }, { r[1], r[2] })
    assert.is_true(ticks > 0, "others ran while it waited")
    c:close()
    a:close()
  end)

  it("answers an error's table value unchanged, after a yield", function()
    local obj = {}
    local ok, err = run(function(S)
      return cothread.pcall(function()
        S.yield()
        error(obj)
      end)
    end)
    assert.is_false(ok)
    assert.is_true(rawequal(obj, err))
  end)

  it("nests, each level catching its own errors across yields", function()
    local r = pack(run(function(S)
      return cothread.pcall(function()
        local ok, err = cothread.pcall(function()
          S.delay(0.001)
          error("inner", 0)
        end)
        S.yield()
        return ok, err, select(2, cothread.pcall(function() S.yield(); return "deep" end))
      end)
    end))
    assert.same({ n = 4, true, false, "inner", "deep" }, r)
  end)

  it("runs in the cothread as its scheduler sees it", function()
    local seen
    local S = cothread.new()
    local co = go(S, function()
      cothread.pcall(function()
        S.yield()
        seen = { current = S.current(), running = S.running(), co = coroutine.running() }
      end)
    end)
    S.run()
    assert.equal(co, seen.current)
    assert.equal(co, seen.running)
    if support.lua51 then
      -- Lua 5.1: f runs in a coroutine of its own, which yields for the cothread.
      assert.not_equal(co, seen.co)
      assert.equal("thread", type(seen.co))
    else
      assert.equal(co, seen.co)
    end
  end)
end)

describe("cothread.xpcall", function()
  it("calls its handler with the error, and answers what it returns", function()
    local r = pack(run(function(S)
      return cothread.xpcall(function(a)
        S.delay(0.001)
        error({ code = a })
      end, function(e) return "handled " .. e.code end, 7)
    end))
    assert.same({ n = 2, false, "handled 7" }, r)
  end)

  it("passes its arguments and results through when nothing fails", function()
    local r = pack(run(function(S)
      return cothread.xpcall(function(a, b)
        S.yield()
        return b, a
      end, error, 1, 2)
    end))
    assert.same({ n = 3, true, 2, 1 }, r)
  end)
end)

-- What each Lua yields across without cothread.pcall (doc/lua.md: the
-- differences). Lua 5.1 cannot yield across pcall, a generic for's iterator
-- or a metamethod: there a blocking call waits in place (others do not run),
-- except in a metamethod, which the module cannot see, where it fails with
-- Lua's error, as a yield operation does in all three.
describe("on each Lua, a cothread", function()
  local sleep = cothread.socket.sleep

  -- Runs f(S) as support.ticking does: whether it finished, its error, and
  -- the ticks taken meanwhile.
  local function ticked(f)
    local ok, ticks = pcall(support.ticking, f)
    if ok then return true, nil, ticks end
    return false, ticks, 0
  end

  -- Lua 5.1 waits in place (nothing else runs); the others let cothreads run.
  local function assert_waited(ticks)
    if support.lua51 then
      assert.equal(0, ticks, "nothing ran while it waited")
    else
      assert.is_true(ticks > 0, "others ran while it waited")
    end
  end

  it("waits under the standard pcall; on Lua 5.1 in place", function()
    local r
    local ok, err, ticks = ticked(function() r = pack(pcall(sleep, 0.03)) end)
    assert.is_true(ok, err)
    assert.is_true(r[1])
    assert_waited(ticks)
  end)

  it("yields with a yield operation under the standard pcall; not on Lua 5.1", function()
    local r
    local ok, err = ticked(function(S) r = pack(pcall(S.delay, 0.01)) end)
    assert.is_true(ok, err)
    if support.lua51 then
      assert.is_false(r[1])
      assert.is_true(support.is_yield_error(r[2]), r[2])
    else
      assert.is_true(r[1])
    end
  end)

  it("waits in a generic for's iterator; on Lua 5.1 in place", function()
    local got = {}
    local ok, err, ticks = ticked(function()
      for i in function(_, i)
        if i == 3 then return nil end
        sleep(0.01)
        return i + 1
      end, nil, 0 do
        got[#got + 1] = i
      end
    end)
    assert.is_true(ok, err)
    assert.same({ 1, 2, 3 }, got)
    assert_waited(ticks)
  end)

  it("waits in a metamethod; on Lua 5.1 fails with Lua's error", function()
    local lazy = setmetatable({}, { __index = function(_, k)
      sleep(0.01)
      return k .. "!"
    end })
    local v
    local ok, err = ticked(function() v = lazy.x end)
    if support.lua51 then
      assert.is_false(ok)
      assert.is_true(support.is_yield_error(err), err)
    else
      assert.is_true(ok, err)
      assert.equal("x!", v)
    end
  end)
end)

describe("a cothread unscheduled while it waits inside cothread.pcall", function()
  it("leaves nothing waiting behind: run returns at once", function()
    local c, a = support.tcp_pair()
    c:settimeout(5)
    local S = cothread.new()
    local co = go(S, function() cothread.pcall(function() return c:receive("*l") end) end)
    S.step()
    assert.is_truthy(S.scheduled(co))
    S.unschedule(co)
    local t0 = cothread.time()
    S.run()
    assert.is_true(cothread.time() - t0 < 1, "run waited for the dropped receive")
    c:close()
    a:close()
  end)
end)
