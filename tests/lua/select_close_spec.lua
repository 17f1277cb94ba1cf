-- socket.select and close: a socket of the lists that another cothread closes
-- while the select waits ends it (with the others that are ready, else
-- `{}, {}, "closed"`); objects already closed when it is called are ignored.
-- Every mix of closed and open sockets, with and without a timeout, and
-- channel receivers in the set. TLS connections: ssl_io_spec.lua.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/select_close_spec.lua

local cothread = require "cothread"
local socket = require "cothread.socket"

local here = (debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./")
local support = dofile(here .. "support.lua")

local go, pair = support.go, support.tcp_pair

-- Runs `wait` (a select) in a cothread of a new scheduler while another
-- cothread closes `victim` after 20 ms; returns the select's results as a
-- list, how long it took, and whether it returned at all.
local function close_during(victim, wait)
  local S = cothread.new()
  local r, took
  go(S, function()
    local t0 = cothread.time()
    r = { wait() }
    took = cothread.time() - t0
  end)
  go(S, function()
    socket.sleep(0.02)
    victim:close()
  end)
  S.run()
  assert(r, "the select never returned: its cothread was dropped")
  return r, took
end

describe("a socket closed while select waits on it", function()
  it("ends the select with 'closed' long before its timeout", function()
    local c, a = pair()
    local r, took = close_during(c, function() return socket.select({ c }, nil, 2) end)
    assert.same({ {}, {}, "closed" }, r)
    assert.is_true(took < 1, "took " .. took)
    a:close()
  end)

  it("ends a select with no timeout (the cothread is resumed, not dropped)", function()
    local c, a = pair()
    local r = close_during(c, function() return socket.select({ c }) end)
    assert.same({ {}, {}, "closed" }, r)
    a:close()
  end)

  it("ends it while another socket of the set stays open and idle", function()
    local c, a = pair()
    local d, b = pair()
    local r, took = close_during(c, function() return socket.select({ d, c }, nil, 2) end)
    assert.same({ {}, {}, "closed" }, r)
    assert.is_true(took < 1, "took " .. took)
    assert(d:send("still open\n"))
    assert.equal("still open", b:receive())
    for _, s in ipairs { a, d, b } do s:close() end
  end)

  it("answers the other sockets that are ready by then", function()
    local c, a = pair()
    local d, b = pair()
    local S = cothread.new()
    local r
    go(S, function() r = { socket.select({ c, d }, nil, 2) } end)
    go(S, function()
      socket.sleep(0.02)
      assert(b:send("x\n")) -- d readable, and c closed, in the same turn
      c:close()
    end)
    S.run()
    assert.equal(d, r[1][1])
    assert.equal(1, r[1][d])
    assert.is_nil(r[1][2])
    assert.is_nil(r[3])
    for _, s in ipairs { a, d, b } do s:close() end
  end)

  it("ends a select that waits on it in the write list", function()
    local c, a = pair()
    local d, b = pair()
    -- Fill c's send buffer so that it is not writable.
    c:settimeout(0)
    local chunk = string.rep("x", 65536)
    repeat local ok = c:send(chunk) until not ok
    c:settimeout(nil)
    local r, took = close_during(c, function() return socket.select({ d }, { c }, 2) end)
    assert.same({ {}, {}, "closed" }, r)
    assert.is_true(took < 1, "took " .. took)
    for _, s in ipairs { a, d, b } do s:close() end
  end)

  it("ends it with a channel receiver in the set that has nothing", function()
    local c, a = pair()
    local tx, rx = cothread.channel.new()
    local r = close_during(c, function() return socket.select({ rx, c }, nil, 2) end)
    assert.same({ {}, {}, "closed" }, r)
    tx:close()
    a:close()
  end)

  it("answers a channel receiver that got a value by then", function()
    local c, a = pair()
    local tx, rx = cothread.channel.new()
    local S = cothread.new()
    local r
    go(S, function() r = { socket.select({ c, rx }, nil, 2) } end)
    go(S, function()
      socket.sleep(0.02)
      tx:send("v")
      c:close()
    end)
    S.run()
    assert.equal(rx, r[1][1])
    assert.is_nil(r[1][2])
    assert.equal("v", rx:receive())
    a:close()
  end)
end)

describe("a socket closed before select is called", function()
  it("is ignored: a timeout still ends the select", function()
    local c, a = pair()
    c:close()
    local S = cothread.new()
    local r
    go(S, function() r = { socket.select({ c }, nil, 0.05) } end)
    S.run()
    assert.same({ {}, {}, "timeout" }, r)
    assert.same({ {}, {}, "timeout" }, { socket.select({ c }, nil, 0) }) -- outside cothreads
    a:close()
  end)

  it("is ignored beside a ready socket, which is answered", function()
    local c, a = pair()
    local d, b = pair()
    c:close()
    assert(b:send("x\n"))
    local S = cothread.new()
    local r
    go(S, function() r = { socket.select({ c, d }, nil, 2) } end)
    S.run()
    assert.equal(d, r[1][1])
    assert.is_nil(r[1][2])
    for _, s in ipairs { a, d, b } do s:close() end
  end)

  it("is ignored beside an open socket, which is still waited on", function()
    local c, a = pair()
    local d, b = pair()
    c:close()
    local S = cothread.new()
    local r
    go(S, function() r = { socket.select({ c, d }, nil, 2) } end)
    go(S, function()
      socket.sleep(0.02)
      assert(b:send("x\n"))
    end)
    S.run()
    assert.equal(d, r[1][1])
    for _, s in ipairs { a, d, b } do s:close() end
  end)
end)

describe("a closed channel in select", function()
  it("makes its receiver readable: the select ends, receive answers 'closed'", function()
    local c, a = pair()
    local tx, rx = cothread.channel.new()
    local r = close_during(tx, function() return socket.select({ c, rx }, nil, 2) end)
    assert.equal(rx, r[1][1])
    assert.same({ nil, "closed" }, { rx:receive() })
    c:close()
    a:close()
  end)
end)
