-- cothread.socket: LuaSocket's protect, try and newtry, also around calls that
-- suspend the cothread.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/protect_spec.lua

local cothread = require "cothread"
local socket = require "cothread.socket"

local support = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "support.lua")
local go = support.go

describe("try", function()
  it("returns all its arguments when the first is true", function()
    assert.same({ 1, nil, "x", false, n = 4 }, table.pack(socket.try(1, nil, "x", false)))
    assert.same({ "ok", n = 1 }, table.pack(socket.try("ok")))
  end)

  it("raises its second argument, wrapped, when the first is nil or false", function()
    local ok, err = pcall(socket.try, false, "boom")
    assert.is_false(ok)
    assert.is_table(err) -- wrapped: protect tells it from other errors
    assert.equal("boom", err[1])
    assert.equal("boom", tostring(err)) -- readable if nothing catches it
    ok, err = pcall(socket.try, nil, "timeout")
    assert.is_false(ok)
    assert.equal("timeout", err[1])
    ok, err = pcall(socket.try)
    assert.is_false(ok)
    assert.is_nil(err[1])
  end)
end)

describe("protect", function()
  it("returns the function's results", function()
    local f = socket.protect(function(a, b) return a + b, "two", nil end)
    assert.same({ 3, "two", nil, n = 3 }, table.pack(f(1, 2)))
  end)

  it("turns a try's error into nil, message", function()
    local f = socket.protect(function(x)
      socket.try(x, "no x")
      return "got " .. x
    end)
    assert.same({ nil, "no x" }, { f(nil) })
    assert.same({ "got y" }, { f("y") })
    assert.equal(2, select("#", f(false)))
  end)

  it("lets other errors through, unchanged", function()
    local obj = setmetatable({}, {})
    local f = socket.protect(function(e) error(e, 0) end)
    local ok, err = pcall(f, "plain")
    assert.is_false(ok)
    assert.equal("plain", err)
    ok, err = pcall(f, obj)
    assert.equal(obj, err)
    ok, err = pcall(f, { "looks wrapped" }) -- a table without the marker
    assert.same({ "looks wrapped" }, err)
  end)

  it("nests: an inner protect catches first", function()
    local inner = socket.protect(function() socket.try(nil, "inner") end)
    local outer = socket.protect(function()
      local r, msg = inner()
      socket.try(r, "outer saw " .. msg)
    end)
    assert.same({ nil, "outer saw inner" }, { outer() })
  end)

  it("raises for a non-function", function()
    assert.error_matches(function() socket.protect(42) end, "function expected")
    assert.error_matches(function() socket.newtry(42) end, "function expected")
  end)

  it("words its argument errors as Lua does", function()
    -- Lua names a function of a loaded module by its full name (5.3 on);
    -- before, a function called by pcall has no name: '?'.
    local function name(full) return _VERSION >= "Lua 5.3" and full or "?" end
    local ok, msg = pcall(socket.protect, 42)
    assert.is_false(ok)
    assert.equal("bad argument #1 to '" .. name("cothread.socket.protect") .. "' (function expected, got number)", msg)
    ok, msg = pcall(socket.protect)
    assert.equal("bad argument #1 to '" .. name("cothread.socket.protect") .. "' (function expected, got no value)", msg)
    ok, msg = pcall(socket.newtry, setmetatable({}, { __name = "thing" }))
    assert.equal("bad argument #1 to '" .. name("cothread.socket.newtry") .. "' (function expected, got thing)", msg)
  end)

  it("lets a failing finalizer's own error through", function()
    local try = socket.newtry(function() error("finalizer broke", 0) end)
    local f = socket.protect(function() try(nil, "never seen") end)
    local ok, msg = pcall(f)
    assert.is_false(ok)
    assert.equal("finalizer broke", msg)
  end)
end)

describe("newtry", function()
  it("calls its finalizer before raising, and only then", function()
    local calls = 0
    local try = socket.newtry(function() calls = calls + 1 end)
    assert.same({ "fine", 2 }, { try("fine", 2) })
    assert.equal(0, calls)
    local f = socket.protect(function() try(nil, "failed") end)
    assert.same({ nil, "failed" }, { f() })
    assert.equal(1, calls)
  end)

  it("closes a socket when a call fails (LuaSocket's idiom)", function()
    local u = socket.udp4()
    u:settimeout(0)
    local try = socket.newtry(function() u:close() end)
    local f = socket.protect(function()
      try(u:setsockname("127.0.0.1", 0))
      return try(u:receive()) -- nothing came: "timeout"
    end)
    assert.same({ nil, "timeout" }, { f() })
    assert.equal(-1, u:getfd())
  end)

  it("without a finalizer is a plain try", function()
    local try = socket.newtry()
    assert.same({ nil, "x" }, { socket.protect(function() try(false, "x") end)() })
  end)
end)

describe("a protected function in a cothread", function()
  it("may suspend its cothread in socket calls", function()
    local S = cothread.new()
    local a = assert(socket.udp4())
    assert(a:setsockname("127.0.0.1", 0))
    local _, port = a:getsockname()
    local finalized, results, ticks, ticks_at_end = 0, nil, 0, nil
    local try = socket.newtry(function() finalized = finalized + 1 end)
    go(S, function()
      local f = socket.protect(function()
        a:settimeout(1)
        local data = try(a:receive()) -- suspends until the datagram comes
        socket.sleep(0.02) -- suspends again
        a:settimeout(0.05)
        try(a:receive()) -- suspends, then times out: raises
        return "not reached", data
      end)
      results = { f() }
      ticks_at_end = ticks
    end)
    go(S, function()
      for _ = 1, 10 do
        ticks = ticks + 1
        socket.sleep(0.01)
      end
    end)
    go(S, function()
      socket.sleep(0.03)
      socket.udp4():sendto("hello", "127.0.0.1", port)
    end)
    S.run()
    assert.same({ nil, "timeout" }, results)
    assert.equal(1, finalized)
    assert.is_true(ticks_at_end >= 5, "others ran while it waited")
    a:close()
  end)

  it("returns the results after a yield", function()
    local S = cothread.new()
    local r
    go(S, function()
      r = { socket.protect(function(x)
        socket.sleep(0.01)
        return x, "after the sleep"
      end)("in") }
    end)
    S.run()
    assert.same({ "in", "after the sleep" }, r)
  end)

  it("lets other errors after a yield through to the scheduler", function()
    local S = cothread.new()
    local err
    S.error = function(e) err = e end
    go(S, function()
      socket.protect(function()
        socket.sleep(0.01)
        error("real trouble", 0)
      end)()
    end)
    S.run()
    assert.equal("real trouble", err)
  end)

  it("works with plain coroutine yields too", function()
    local f = socket.protect(function(a)
      local b = coroutine.yield(a + 1)
      socket.try(b ~= "stop", "stopped")
      return b
    end)
    local co = coroutine.wrap(f)
    assert.equal(2, co(1))
    assert.same({ nil, "stopped" }, { co("stop") })
  end)
end)
