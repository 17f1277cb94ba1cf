-- cothread.socket's shortcuts for speed keep LuaSocket's behaviour, and
-- waiting costs no CPU. Loopback only; every wait is bounded.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/socket_perf_spec.lua

local cothread = require "cothread"
local socket = require "cothread.socket"

local here = (debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./")
local support = dofile(here .. "support.lua")

local pair = support.tcp_pair

-- After a short read the module waits for readiness instead of trying recv
-- again (the socket is most likely empty); data that came meanwhile must
-- still be seen at once.
describe("a receive after a short read", function()
  it("with timeout 0 still returns data that arrived meanwhile", function()
    local c, a = pair()
    assert(c:send("abc"))
    socket.sleep(0.05)
    a:settimeout(5)
    assert.equal("ab", a:receive(2)) -- the read got all 3 bytes: short
    a:settimeout(0)
    assert.same({ nil, "timeout", "c" }, { a:receive(2) })
    assert(c:send("de"))
    socket.sleep(0.05)
    assert.equal("cd", a:receive(2, "c"))
    assert.equal("e", a:receive(1))
    c:close()
    a:close()
  end)

  it("outside cothreads returns at once when the data is there", function()
    local c, a = pair()
    a:settimeout(5)
    assert(c:send("x\n"))
    assert.equal("x", a:receive())
    assert(c:send("y\n"))
    socket.sleep(0.05)
    local t0 = cothread.time()
    assert.equal("y", a:receive())
    assert.is_true(cothread.time() - t0 < 1)
    c:close()
    a:close()
  end)

  it("in a cothread wakes for data that arrived before it waited", function()
    local S = cothread.new()
    local c, a = pair()
    a:settimeout(5)
    local got = {}
    S.schedule(coroutine.create(function() -- the reader
      got[1] = a:receive()                  -- a short read
      socket.sleep(0.1)                     -- "two" arrives while nobody waits
      got[2] = a:receive()
      got[3] = socket.select({ a }, nil, 5)[1] == a
      got[4] = a:receive()
    end))
    S.schedule(coroutine.create(function() -- the writer
      assert(c:send("one\n"))
      socket.sleep(0.05)
      assert(c:send("two\n"))
      socket.sleep(0.1)
      assert(c:send("three\n"))
    end))
    local t0 = cothread.time()
    S.run()
    assert.same({ "one", "two", true, "three" }, got)
    assert.is_true(cothread.time() - t0 < 2)
    c:close()
    a:close()
  end)
end)

-- A receive on an empty buffer reads into a buffer shared by the thread and
-- keeps only what the pattern leaves over in the object.
describe("a receive into an empty buffer", function()
  it("keeps what the pattern leaves over for the next call", function()
    local c, a = pair()
    a:settimeout(5)
    assert(c:send("line one\r\nline two\n12345"))
    c:close()
    socket.sleep(0.05)
    assert.equal("line one", a:receive())
    assert.equal("lin", a:receive(3))
    assert.equal("e two", a:receive("*l"))
    assert.equal("12345", a:receive("*a"))
    a:close()
  end)

  it("puts the prefix first and returns partial data on timeout", function()
    local c, a = pair()
    a:settimeout(0.05)
    assert(c:send("xyz"))
    socket.sleep(0.05)
    assert.equal("abxyz", a:receive(5, "ab"))
    assert(c:send("123"))
    socket.sleep(0.05)
    assert.same({ nil, "timeout", "p123" }, { a:receive(10, "p") })
    assert.is_false(a:dirty())
    c:close()
    a:close()
  end)

  it("never mixes the data of two sockets", function()
    local S = cothread.new()
    local c1, a1 = pair()
    local c2, a2 = pair()
    local got = { {}, {} }
    for i, a in ipairs { a1, a2 } do
      S.schedule(coroutine.create(function()
        a:settimeout(5)
        for _ = 1, 3 do got[i][#got[i] + 1] = a:receive() end
      end))
    end
    S.schedule(coroutine.create(function()
      for n = 1, 3 do
        assert(c1:send(("A%d\nA"):format(n)))
        assert(c2:send(("B%d\nB"):format(n)))
        socket.sleep(0.01)
      end
    end))
    S.run()
    assert.same({ "A1", "AA2", "AA3" }, got[1])
    assert.same({ "B1", "BB2", "BB3" }, got[2])
    for _, s in ipairs { c1, a1, c2, a2 } do s:close() end
  end)
end)

describe("a server with idle connections", function()
  it("uses no CPU while they wait (a child process, 2000 connections, 1 s)", function()
    local out, ok = support.child("socket_idle.lua", 4500, 2000, 1)
    if not out then
      pending("the descriptor limit cannot be raised to 4500 here")
      return
    end
    assert.is_true(ok, out)
    local n, ms = out:match("(%d+) idle connections: CPU ([%d.]+) ms")
    assert.equal("2000", n, out)
    assert.is_true(tonumber(ms) < 50, out)
  end)
end)
