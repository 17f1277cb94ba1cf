-- cothread.channel: cosock's unbounded channels, alone and in socket.select.
-- Loopback only; every wait is bounded.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/channel_spec.lua

local cothread = require "cothread"
local socket = require "cothread.socket"
local channel = require "cothread.channel"

local here = (debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./")
local support = dofile(here .. "support.lua")

local cost = support.cost

describe("the module", function()
  it("is require 'cothread.channel' and the channel field of every scheduler", function()
    assert.equal(channel, cothread.channel)
    assert.equal(channel, cothread.new().channel)
  end)

  it("makes a sender and a receiver with channel.new() and channel()", function()
    for _, make in ipairs { channel.new, channel } do
      local tx, rx = make()
      assert.matches("^channel.sender: 0x", tostring(tx))
      assert.matches("^channel.receiver: 0x", tostring(rx))
      assert.is_true(tx:send("v"))
      assert.equal("v", rx:receive())
    end
  end)
end)

describe("outside cothreads", function()
  it("keeps values in order, nil and false included", function()
    local tx, rx = channel.new()
    for _, v in ipairs { 1, "two", false, 4.5 } do assert.is_true(tx:send(v)) end
    assert.is_true(tx:send(nil))
    assert.is_true(tx:send())
    local t = {}
    assert.is_true(tx:send(t))
    assert.equal(1, rx:receive())
    assert.equal("two", rx:receive())
    assert.equal(false, rx:receive())
    assert.equal(4.5, rx:receive())
    local n, v = select("#", rx:receive()), rx:receive()
    assert.equal(1, n) -- a received nil is one value
    assert.is_nil(v)
    assert.equal(t, rx:receive())
  end)

  it("returns nil, 'timeout' after the receiver's timeout", function()
    local _, rx = channel.new()
    assert.equal(1, rx:settimeout(0))
    assert.same({ nil, "timeout" }, { rx:receive() })
    rx:settimeout(0.03)
    local t0 = cothread.time()
    assert.same({ nil, "timeout" }, { rx:receive() })
    assert.is_true(cothread.time() - t0 >= 0.03)
  end)

  it("refuses to wait forever", function()
    local _, rx = channel.new()
    assert.has_error(function() rx:receive() end,
      "receive on an empty channel would wait forever outside a cothread")
  end)

  it("drains a closed channel, then returns nil, 'closed'; sends fail", function()
    for _, closer in ipairs { "sender", "receiver" } do
      local tx, rx = channel.new()
      tx:send("a")
      tx:send("b")
      assert.equal(1, (closer == "sender" and tx or rx):close())
      assert.same({ false, "closed" }, { tx:send("c") })
      assert.equal("a", rx:receive())
      assert.equal("b", rx:receive())
      assert.same({ nil, "closed" }, { rx:receive() })
      assert.same({ nil, "closed" }, { rx:receive() })
      tx:close() -- again: nothing
    end
  end)

  it("fails sends once the receiver is collected", function()
    local tx = channel.new()
    collectgarbage()
    collectgarbage()
    assert.same({ false, "closed" }, { tx:send(1) })
  end)
end)

describe("in cothreads", function()
  it("suspends only the receiving cothread until a value comes", function()
    local S = cothread.new()
    local tx, rx = channel.new()
    local log = {}
    S.spawn(function()
      for _ = 1, 3 do
        local v = rx:receive()
        log[#log + 1] = "got " .. v
      end
    end)
    S.spawn(function()
      for i = 1, 3 do
        log[#log + 1] = "tick " .. i
        S.yield()
        tx:send(i)
      end
    end)
    S.run()
    assert.same({ "tick 1", "tick 2", "got 1", "tick 3", "got 2", "got 3" }, log)
  end)

  it("never blocks a sender (unbounded)", function()
    local S = cothread.new()
    local tx, rx = channel.new()
    local sent = 0
    S.spawn(function()
      for i = 1, 10000 do
        assert.is_true(tx:send(i))
        sent = i
      end
    end)
    S.spawn(function()
      for i = 1, 10000 do assert.equal(i, rx:receive()) end
    end)
    S.run()
    assert.equal(10000, sent)
  end)

  it("times out a receive without spinning", function()
    local S = cothread.new()
    local _, rx = channel.new()
    local r
    S.spawn(function()
      rx:settimeout(0.2)
      r = { rx:receive() }
    end)
    local cpu, wall = cost(S.run)
    assert.same({ nil, "timeout" }, r)
    assert.is_true(wall >= 0.2)
    assert.is_true(cpu < wall / 2, "cpu " .. cpu) -- a spinning wait would use it all
  end)

  it("wakes a waiting receive on close", function()
    local S = cothread.new()
    local tx, rx = channel.new()
    local r
    S.spawn(function() r = { rx:receive() } end)
    S.spawn(function() socket.sleep(0.01); tx:close() end)
    S.run()
    assert.same({ nil, "closed" }, r)
  end)

  it("gives each value to one of several cothreads receiving", function()
    local S = cothread.new()
    local tx, rx = channel.new()
    local got = {}
    for i = 1, 3 do
      S.spawn(function()
        local v = rx:receive()
        got[#got + 1] = i .. ":" .. v
      end)
    end
    S.spawn(function()
      for _, v in ipairs { "a", "b", "c" } do tx:send(v) end
    end)
    S.run()
    table.sort(got)
    assert.equal(3, #got)
    assert.same({ "a", "b", "c" }, { got[1]:sub(-1), got[2]:sub(-1), got[3]:sub(-1) })
  end)

  it("cannot be waited on in two schedulers' loops at once", function()
    local S1, S2 = cothread.new(), cothread.new()
    local tx, rx = channel.new()
    local r1, r2
    S1.spawn(function() r1 = rx:receive() end)
    S1.step() -- parked in S1's loop
    S2.spawn(function() r2 = { rx:receive() } end)
    S2.run()
    assert.same({ nil, "channel in use by another scheduler" }, r2)
    tx:send("v")
    S1.run()
    assert.equal("v", r1)
    S2.spawn(function() r2 = { rx:receive() } end) -- free again: it moves to S2
    S2.step()
    tx:send("w")
    S2.run()
    assert.same({ "w" }, r2)
  end)

  it("has run return when every receiver waits forever (nothing can send)", function()
    local S = cothread.new()
    local _, rx = channel.new()
    local co = S.spawn(function() rx:receive() end)
    S.run()
    assert.is_true(co:is_alive())
    co:cancel()
  end)

  it("resumes nobody after the receiving cothread was cancelled or unscheduled", function()
    local S = cothread.new()
    local tx, rx = channel.new()
    local got = {}
    local h = S.spawn(function() got[#got + 1] = rx:receive() end)
    local co
    S.spawn(function()
      co = coroutine.running()
      got[#got + 1] = rx:receive()
    end)
    S.step()
    S.step()
    h:cancel()
    assert.is_true(S.unschedule(co))
    tx:send("late")
    S.run()
    assert.same({}, got)
    assert.equal("late", rx:receive()) -- still queued
    S.schedule(co) -- its receive was cancelled
    S.run()
    assert.same({}, got)
  end)

  it("is received by a receive that was taken out and scheduled again", function()
    local S = cothread.new()
    local tx, rx = channel.new()
    local r
    local co = coroutine.create(function() r = { rx:receive() } end)
    S.schedule(co)
    S.step()
    S.unschedule(co)
    S.schedule(co)
    S.run()
    assert.same({ nil, "cancelled" }, r)
    assert.is_true(tx:send(1))
  end)
end)

describe("in select", function()
  it("is readable once a value is queued or it is closed", function()
    local tx, rx = channel.new()
    assert.same({ {}, {}, "timeout" }, { socket.select({ rx }, nil, 0) })
    tx:send(nil)
    local r, w, err = socket.select({ rx }, nil, 0)
    assert.equal(rx, r[1])
    assert.equal(1, r[rx])
    assert.same({}, w)
    assert.is_nil(err)
    assert.is_nil(rx:receive())
    tx:close()
    assert.equal(rx, (socket.select({ rx }, nil, 0))[1])
  end)

  it("wakes a cothread waiting on a channel and a TCP socket, for either", function()
    local S = cothread.new()
    local server = assert(socket.bind("127.0.0.1", 0))
    local _, port = server:getsockname()
    local tx, rx = channel.new()
    local seen = {}
    S.spawn(function()
      local client = assert(server:accept())
      local open = true
      while #seen < 3 do
        local r, _, err = socket.select(open and { client, rx } or { rx }, nil, 5)
        assert.is_nil(err)
        for _, x in ipairs(r) do
          if x == rx then
            seen[#seen + 1] = "channel " .. rx:receive()
          else
            local line = x:receive()
            if line then seen[#seen + 1] = "socket " .. line else open = false end
          end
        end
      end
      client:close()
    end)
    S.spawn(function()
      local c = assert(socket.connect("127.0.0.1", port))
      socket.sleep(0.01)
      tx:send("one")
      socket.sleep(0.01)
      c:send("two\n")
      socket.sleep(0.01)
      tx:send("three")
      c:close()
    end)
    S.run()
    server:close()
    assert.same({ "channel one", "socket two", "channel three" }, seen)
  end)

  it("sleeps with only a timeout, and waits without limit for a huge one", function()
    local S = cothread.new()
    local r1, r2
    local h = S.spawn(function()
      r1 = { socket.select(nil, nil, 0.05) }
      r2 = { socket.select({}, {}, math.huge) }
    end)
    S.spawn(function()
      socket.sleep(0.25)
      assert.is_true(h:is_alive()) -- still in the huge wait
      h:cancel()
    end)
    local cpu, wall = cost(S.run)
    assert.same({ {}, {}, "timeout" }, r1)
    assert.is_nil(r2)
    assert.is_true(wall >= 0.25)
    assert.is_true(cpu < wall / 2, "cpu " .. cpu)
  end)

  it("takes math.maxinteger and math.huge timeouts without overflow", function()
    local S = cothread.new()
    local server = assert(socket.bind("127.0.0.1", 0))
    local s = assert(socket.connect("127.0.0.1", (select(2, server:getsockname()))))
    local tx, rx = channel.new()
    local results = {}
    S.spawn(function()
      for _, t in ipairs { math.maxinteger or 2 ^ 53, math.huge, 1e300 } do
        local r, w, err = socket.select({}, { s }, t) -- writable at once
        results[#results + 1] = { #r, #w, err }
      end
      tx:send(1)
      local r, _, err = socket.select({ rx }, nil, math.maxinteger or 2 ^ 53)
      results[#results + 1] = { #r, err }
      rx:settimeout(math.huge)
      results[#results + 1] = { rx:receive() }
    end)
    S.spawn(function() socket.sleep(0.01); tx:send(2) end)
    S.run()
    s:close()
    assert.same({ { 0, 1 }, { 0, 1 }, { 0, 1 }, { 1 }, { 1 } }, results)
  end)

  it("rejects a receiver in the send list, and other objects", function()
    local tx, rx = channel.new()
    assert.has_error(function() socket.select(nil, { rx }, 0) end,
      "bad argument #2 to 'select' (socket expected at index 1, got userdata)")
    assert.has_error(function() socket.select({ tx }, nil, 0) end,
      "bad argument #1 to 'select' (socket expected at index 1, got userdata)")
  end)
end)

describe("select's view of other objects", function()
  it("does not take an object for a receiver because its metatable says so", function()
    -- A receiver's metatable entries copied into a file's: select asks the
    -- receiver's own check, which refuses the file.
    local _, rx = channel.new()
    local path = os.tmpname()
    local file = cothread.file.open(path, "w")
    local mt = getmetatable(file)
    local copied = {}
    for k, v in pairs(getmetatable(rx)) do
      if mt[k] == nil then
        mt[k], copied[#copied + 1] = v, k
      end
    end
    local ok, msg = pcall(socket.select, { file }, nil, 0)
    for _, k in ipairs(copied) do mt[k] = nil end
    file:close()
    os.remove(path)
    assert.is_false(ok)
    assert.matches("socket expected at index 1, got userdata", msg)
  end)
end)

describe("bad input", function()
  it("raises for methods called on the wrong object", function()
    local tx, rx = channel.new()
    assert.has_error(function() tx.send(rx, 1) end)
    assert.has_error(function() rx.receive(tx) end)
    assert.has_error(function() rx.receive(nil) end)
    assert.has_error(function() tx.close({}) end)
    assert.has_error(function() rx:settimeout("soon") end)
    assert.is_nil(tx.receive)
    assert.is_nil(rx.send)
  end)

  it("names the end it expected in argument errors", function()
    local tx, rx = channel.new()
    local send, receive = getmetatable(tx).__index.send, getmetatable(rx).__index.receive
    local ok, msg = pcall(send, rx, 1)
    assert.is_false(ok)
    assert.matches("bad argument #1 to '.-' %(cothread.sender expected, got cothread.receiver%)", msg)
    ok, msg = pcall(receive, tx)
    assert.matches("%(cothread.receiver expected, got cothread.sender%)", msg)
    ok, msg = pcall(rx.settimeout, rx, "soon")
    assert.matches("bad argument #2 to '.-' %(number expected, got string%)", msg)
    ok, msg = pcall(tx.close, 42)
    assert.matches("cothread.sender expected, got number", msg)
  end)
end)
