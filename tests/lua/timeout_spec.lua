-- The two timeout rules of doc/lua.md ("Timeouts: two rules"), cell by cell:
-- cothread's own functions (nil: no limit; 0 or negative: at once; NaN:
-- bad argument) and the LuaSocket-compatible ones (nil, negative or NaN: no
-- limit; 0: at once).
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/timeout_spec.lua

local cothread = require "cothread"
local socket = require "cothread.socket"
local channel = require "cothread.channel"

local here = (debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./")
local support = dofile(here .. "support.lua")
local go = support.go

local NAN = 0 / 0

-- Runs `wait` in a cothread of a new scheduler while another cothread calls
-- `settle` after 30 ms; returns what `wait` returned and how long it took.
local function race(wait, settle)
  local S = cothread.new()
  local r, took
  go(S, function()
    local t0 = cothread.time()
    r = table.pack(wait(S))
    took = cothread.time() - t0
  end)
  go(S, function()
    S.delay(0.03)
    settle(S)
  end)
  S.run()
  return r, took
end

describe("cothread's own rule", function()
  local function pending()
    local p, f = cothread.promise()
    return p, f
  end

  it("future:await: nil and math.huge wait, 0 and negative answer at once", function()
    for _, t in ipairs { "nil", math.huge } do
      local p, f = pending()
      local r = race(function() if t == "nil" then return f:await() end return f:await(t) end,
        function() p:set("v") end)
      assert.same({ true, "v", n = 2 }, r)
    end
    for _, t in ipairs { 0, -1, -math.huge } do
      local p, f = pending()
      local r, took = race(function() return f:await(t) end, function() p:set("late") end)
      assert.same({ false, "timeout", n = 2 }, r)
      assert.is_true(took < 0.025, "at once, not after the settle")
    end
  end)

  it("future:await, proc:wait, signal.wait: NaN is a bad argument", function()
    local _, f = pending()
    assert.has_error(function() f:await(NAN) end, "bad argument #1 to 'await' (number expected, got NaN)")
    local p = assert(cothread.process.spawn({ "true" }))
    assert.has_error(function() p:wait(NAN) end)
    p:wait()
    assert.has_error(function() cothread.signal.wait("SIGUSR2", NAN) end)
    assert.has_error(function() cothread.delay(NAN) end)
  end)

  it("proc:wait and signal.wait: 0 and negative answer at once", function()
    local p = assert(cothread.process.spawn({ "sleep", "5" }))
    for _, t in ipairs { 0, -1 } do
      local t0 = cothread.time()
      assert.same({ nil, "timeout" }, { p:wait(t) })
      assert.same({ nil, "timeout" }, { cothread.signal.wait("SIGUSR2", t) })
      assert.is_true(cothread.time() - t0 < 0.5)
    end
    p:kill("SIGKILL")
    assert.same({ nil, "signal", 9 }, { p:wait() })
  end)

  it("loop_wait: 0 and negative answer at once, nil waits", function()
    local S = cothread.new()
    local _, f = cothread.promise()
    local key = f:handle() -- any light userdata serves as a key
    local r = {}
    go(S, function()
      r[1] = { S.loop_wait(key, 0) }
      r[2] = { S.loop_wait(key, -5) }
    end)
    S.run()
    assert.same({ { false, "timeout" }, { false, "timeout" } }, r)
  end)

  it("delay: 0 and negative make the cothread due at once", function()
    for _, t in ipairs { 0, -1 } do
      local S = cothread.new()
      local woke
      go(S, function() S.delay(t); woke = true end)
      S.step()
      S.step()
      assert.is_true(woke)
    end
  end)
end)

describe("LuaSocket's rule", function()
  it("settimeout: nil, negative and NaN mean no limit; 0 answers at once", function()
    local c, a = support.tcp_pair()
    for _, t in ipairs { -1, NAN } do
      c:settimeout(t)
      assert.equal(-1, (c:gettimeout()))
      local r = race(function() return c:receive(1) end, function() a:send("x") end)
      assert.equal("x", r[1])
    end
    c:settimeout(nil)
    assert.equal(-1, (c:gettimeout()))
    c:settimeout(0)
    assert.same({ nil, "timeout", "" }, { c:receive(1) })
    c:close()
    a:close()
  end)

  it("socket.select: negative and NaN mean no limit; 0 answers at once", function()
    for _, t in ipairs { -1, NAN } do
      local c, a = support.tcp_pair()
      local r = race(function() return socket.select({ c }, nil, t) end, function() a:send("x") end)
      assert.equal(c, r[1][1])
      c:close()
      a:close()
    end
    local c, a = support.tcp_pair()
    assert.same({ {}, {}, "timeout" }, { socket.select({ c }, nil, 0) })
    c:close()
    a:close()
  end)

  it("receiver:settimeout: negative and NaN mean no limit; 0 answers at once", function()
    for _, t in ipairs { -1, NAN } do
      local tx, rx = channel.new()
      rx:settimeout(t)
      local r = race(function() return rx:receive() end, function() tx:send("v") end)
      assert.same({ "v", n = 1 }, r)
    end
    local _, rx = channel.new()
    rx:settimeout(0)
    assert.same({ nil, "timeout" }, { rx:receive() })
  end)

  it("socket.sleep: 0 and negative return at once", function()
    local t0 = cothread.time()
    socket.sleep(0)
    socket.sleep(-1)
    assert.is_true(cothread.time() - t0 < 0.5)
  end)
end)
