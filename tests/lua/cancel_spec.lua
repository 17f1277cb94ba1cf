-- The ways a waiting call can end besides its own event, for every kind of
-- operation the waiting engine drives: the cothread unscheduled while it
-- waits, the source closed by another cothread, the scheduler collected
-- while a cothread waits, and a deadline that passes in the same loop turn
-- as the readiness. Loopback and child processes only; every wait is bounded.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/cancel_spec.lua

-- Lua 5.1 and LuaJIT have neither (their unpack is a global).
table.pack = table.pack or function(...) return { n = select("#", ...), ... } end
table.unpack = table.unpack or unpack
local cothread = require "cothread"
local socket = require "cothread.socket"
local channel = require "cothread.channel"
local dns = require "cothread.dns"

local support = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "support.lua")
local go = support.go

local function pack(...) return { n = select("#", ...), ... } end

-- A listening server on 127.0.0.1 (backlog `backlog`, default 32), and its port.
local function listener(backlog)
  local s = assert(socket.bind("127.0.0.1", 0, backlog))
  local _, port = s:getsockname()
  return s, port
end

-- A master object whose connect to a full backlog waits (the SYN is dropped),
-- with the server and the connections that filled it.
local function stuck_connect()
  local server, port = listener(0)
  local held = {}
  repeat
    local c = socket.tcp4()
    c:settimeout(0.05)
    local ok = c:connect("127.0.0.1", port)
    held[#held + 1] = c
  until not ok
  return socket.tcp4(), port, function()
    for _, c in ipairs(held) do c:close() end
    server:close()
  end
end

-- A file of `n` bytes, removed by the returned function.
local function fixture(n)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(string.rep("x", n))
  f:close()
  return path, function() os.remove(path) end
end

-- The kinds of operation. `make()` returns a context: `call()` is the call
-- (run in a cothread; it must park), `late()` brings its event after the
-- cothread left, `cancelled` is what the call returns when its cothread is
-- scheduled again, `close()` (kinds that wait on a source: `closes`) closes
-- it from another cothread, `closed` is then the call's results (nil: it
-- waits on), and `done()` frees what is left. Kinds that spawn a child
-- (`pidfd`: its waits use pidfd_open, which valgrind 3.19 lacks) are tagged
-- #pidfd, left out of the run under valgrind.
local kinds = {
  {
    name = "a TCP receive",
    closes = true,
    make = function()
      local c, a = support.tcp_pair()
      return {
        call = function() return c:receive() end,
        late = function() a:send("late\n") end,
        cancelled = { n = 3, nil, "cancelled", "" },
        close = function() c:close() end,
        closed = { n = 3, nil, "closed", "" },
        done = function() c:close(); a:close() end,
      }
    end,
  },
  {
    name = "a TCP send",
    closes = true,
    make = function()
      local c, a = support.tcp_pair()
      local big = string.rep("x", 32 * 1024 * 1024) -- more than the buffers hold
      return {
        call = function()
          local r = pack(c:send(big))
          r[3] = r[3] and r[3] > 0 -- how much went depends on the buffers
          return table.unpack(r, 1, r.n)
        end,
        late = function() a:settimeout(0); a:receive(65536) end,
        cancelled = { n = 3, nil, "cancelled", true },
        close = function() c:close() end,
        closed = { n = 3, nil, "closed", true },
        done = function() c:close(); a:close() end,
      }
    end,
  },
  {
    name = "a TCP accept",
    closes = true,
    make = function()
      local server, port = listener()
      local held
      return {
        call = function() return server:accept() end,
        late = function() held = socket.connect("127.0.0.1", port) end,
        cancelled = { n = 2, nil, "cancelled" },
        close = function() server:close() end,
        closed = { n = 2, nil, "closed" },
        done = function() server:close(); if held then held:close() end end,
      }
    end,
  },
  {
    name = "a TCP connect",
    closes = true,
    make = function()
      local c, port, free = stuck_connect()
      return {
        call = function() return c:connect("127.0.0.1", port) end,
        late = function() free() end,
        cancelled = { n = 2, nil, "cancelled" },
        close = function() c:close() end,
        closed = { n = 2, nil, "closed" },
        done = function() c:close(); free() end,
      }
    end,
  },
  {
    name = "a UDP receivefrom",
    closes = true,
    make = function()
      local u = assert(socket.udp())
      assert(u:setsockname("127.0.0.1", 0))
      local _, port = u:getsockname()
      return {
        call = function() return u:receivefrom() end,
        late = function() socket.udp4():sendto("late", "127.0.0.1", port) end,
        cancelled = { n = 2, nil, "cancelled" },
        close = function() u:close() end,
        closed = { n = 2, nil, "closed" },
        done = function() u:close() end,
      }
    end,
  },
  {
    name = "a select",
    closes = true,
    make = function()
      local c, a = support.tcp_pair()
      local _, b = support.tcp_pair()
      return {
        call = function()
          local r, w, e = socket.select({ c, b }, nil, 5)
          return #r, r[1] == b, e
        end,
        late = function() a:send("late") end,
        cancelled = { n = 3, 0, false, "cancelled" },
        -- One of its sockets closes: it ends, its other socket idle.
        close = function() c:close() end,
        closed = { n = 3, 0, false, "closed" },
        done = function() c:close(); a:close(); b:close() end,
      }
    end,
  },
  {
    name = "a sleep",
    make = function()
      return {
        call = function() socket.sleep(5); return "slept" end,
        late = function() end,
        cancelled = { n = 1, "slept" },
        done = function() end,
      }
    end,
  },
  {
    name = "a channel receive",
    closes = true,
    make = function()
      local tx, rx = channel.new()
      return {
        call = function() return rx:receive() end,
        late = function() tx:send("late") end,
        cancelled = { n = 2, nil, "cancelled" },
        close = function() tx:close() end,
        closed = { n = 2, nil, "closed" },
        done = function() tx:close() end,
      }
    end,
  },
  {
    name = "a name lookup (a pool job)",
    make = function()
      return {
        call = function() return dns.toip("localhost") end,
        late = function() end,
        cancelled = { n = 2, nil, "cancelled" },
        done = function() end,
      }
    end,
  },
  {
    name = "a file open (a pool job)",
    make = function()
      local path, remove = fixture(10)
      local file
      return {
        call = function()
          local f, err = cothread.file.open(path)
          file = f
          return f and "opened", err
        end,
        late = function() end,
        cancelled = { n = 2, nil, "cancelled" },
        done = function() if file then file:close() end remove() end,
      }
    end,
  },
  {
    name = "a file read (a pool job)",
    make = function()
      local path, remove = fixture(100000)
      local file = assert(cothread.file.open(path)) -- outside cothreads: opened at once
      return {
        call = function() return file:read("*a") end,
        late = function() end,
        cancelled = { n = 2, nil, "cancelled" },
        done = function() file:close(); remove() end,
      }
    end,
  },
  {
    name = "a pipe read",
    pidfd = true,
    closes = true,
    make = function()
      local p = assert(cothread.process.spawn({ "sleep", "5" }, { stdout = "pipe" }))
      return {
        call = function() return p.stdout:read("*l") end,
        late = function() end,
        cancelled = { n = 2, nil, "cancelled" },
        close = function() p.stdout:close() end,
        closed = { n = 2, nil, "closed" },
        done = function() p:kill("SIGKILL"); p:wait() end,
      }
    end,
  },
  {
    name = "a pipe write",
    pidfd = true,
    closes = true,
    make = function()
      local p = assert(cothread.process.spawn({ "sleep", "5" }, { stdin = "pipe" }))
      local big = string.rep("x", 1024 * 1024) -- more than a pipe holds
      return {
        call = function() return p.stdin:write(big) end,
        late = function() end,
        cancelled = { n = 2, nil, "cancelled" },
        close = function() p.stdin:close() end,
        closed = { n = 2, nil, "closed" },
        done = function() p:kill("SIGKILL"); p:wait() end,
      }
    end,
  },
  {
    name = "a process wait",
    pidfd = true,
    make = function()
      local p = assert(cothread.process.spawn({ "sleep", "0.05" }))
      return {
        call = function() return p:wait() end,
        late = function() socket.sleep(0.2) end, -- the child ends meanwhile
        cancelled = { n = 3, true, "exit", 0 }, -- what it can still tell
        done = function() p:wait() end,
      }
    end,
  },
  {
    name = "an OS signal wait",
    make = function()
      return {
        call = function() return cothread.signal.wait("SIGUSR2", 5) end,
        late = function() end,
        cancelled = { n = 2, nil, "cancelled" },
        done = function() end,
      }
    end,
  },
  {
    name = "a future await",
    make = function()
      local p, f = cothread.promise()
      return {
        call = function() return f:await(5) end,
        late = function() p:set("late") end,
        cancelled = { n = 2, false, "cancelled" },
        done = function() end,
      }
    end,
  },
}

-- The test name of `kind` with `what`.
local function title(what, kind)
  return what .. (kind.pidfd and " #pidfd" or "")
end

-- Runs `co`, the head of `S`'s ready queue, until it parks.
local function park(S, co)
  S.step()
  for c in S.iready() do assert.are_not.equal(co, c, "parked, not ready") end
  assert.is_true(S.scheduled(co), "parked")
end

describe("a cothread unscheduled while it waits", function()
  for _, kind in ipairs(kinds) do
    it(title("in " .. kind.name .. " is resumed by nothing; scheduled again, its call ends", kind), function()
      local S = cothread.new()
      local k = kind.make()
      local r, resumed = nil, 0
      local co = go(S, function()
        r = pack(k.call())
        resumed = resumed + 1
      end)
      park(S, co)
      assert.is_true(S.unschedule(co))
      assert.is_false(S.scheduled(co))
      k.late()
      socket.sleep(0.02)
      S.run() -- returns: nothing waits any more
      assert.equal(0, resumed, "the late event resumed nobody")
      S.schedule(co)
      S.run()
      assert.equal(1, resumed)
      assert.same(k.cancelled, r)
      k.done()
    end)
  end
end)

describe("a source closed by another cothread while a cothread waits on it", function()
  for _, kind in ipairs(kinds) do
    if kind.closes then
      it(title("ends " .. kind.name .. " with 'closed'", kind), function()
        local S = cothread.new()
        local k = kind.make()
        local r
        local co = go(S, function() r = pack(k.call()) end)
        park(S, co)
        go(S, k.close)
        S.run()
        assert.same(k.closed, r)
        k.done()
      end)
    end
  end

  it("lets a select go on with its other sockets", function()
    local S = cothread.new()
    local c, a = support.tcp_pair()
    local d, b = support.tcp_pair()
    local r
    go(S, function()
      local readable = socket.select({ c, d }, nil, 5)
      r = { #readable, readable[1] == d }
    end)
    S.step()
    go(S, function()
      c:close()
      b:send("x")
    end)
    S.run()
    assert.same({ 1, true }, r)
    for _, s in ipairs { a, b, d } do s:close() end
  end)
end)

describe("a scheduler collected while its cothread waits", function()
  for _, kind in ipairs(kinds) do
    it(title("leaves " .. kind.name .. " to end when another scheduler takes the cothread", kind), function()
      local k = kind.make()
      local r, co
      local gone = setmetatable({}, { __mode = "k" })
      do
        local S = cothread.new()
        gone[S] = true
        co = coroutine.create(function() r = pack(k.call()) end)
        S.schedule(co)
        park(S, co)
        S = nil -- luacheck: ignore
      end
      -- LuaJIT's compiled traces keep the objects they ran on: flushed first.
      if jit then jit.flush() end
      collectgarbage()
      collectgarbage()
      assert.is_nil(next(gone), "the scheduler was collected")
      k.late()
      socket.sleep(0.02)
      local S2 = cothread.new()
      S2.schedule(co)
      S2.run()
      assert.same(k.cancelled, r)
      k.done()
    end)
  end

  it("lets its sockets wait in another scheduler", function()
    local c, a = support.tcp_pair()
    do
      local S = cothread.new()
      S.schedule(coroutine.create(function() c:receive() end))
      S.step()
    end
    collectgarbage()
    collectgarbage()
    local S2 = cothread.new()
    local r
    go(S2, function() r = { c:receive() } end)
    go(S2, function() a:send("hello\n") end)
    S2.run()
    assert.same({ "hello" }, r)
    c:close()
    a:close()
  end)
end)

describe("a cothread closed with coroutine.close while it waits", function()
  it("and then unscheduled leaves its socket free for another scheduler", function()
    if not support.has.close then return assert.is_nil(coroutine.close) end -- Lua 5.4's
    -- Closing took its stack, with the engine's token on it; unschedule
    -- still finds its operation (by its thread) and drops it, so nothing
    -- holds the socket and a collected scheduler reads no collected thread.
    local server, port = listener()
    local S = cothread.new()
    local co = coroutine.create(function() return server:accept() end)
    S.schedule(co)
    S.step()
    assert.is_true(coroutine.close(co))
    assert.is_true(S.unschedule(co))
    co, S = nil, nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    local S2 = cothread.new()
    local r
    go(S2, function() r = pack(server:accept()) end)
    go(S2, function() assert(socket.connect("127.0.0.1", port)):close() end)
    S2.run()
    assert.equal(1, r.n)
    assert.matches("^tcp{client}", tostring(r[1]))
    r[1]:close()
    server:close()
  end)
end)

describe("a deadline that passes in the loop turn its readiness comes", function()
  -- Parks `call` in a cothread, makes it ready with `ready()`, lets its
  -- deadline pass without running the loop, then runs one turn: the call
  -- must end once, with what became ready.
  local function race(call, ready)
    local S = cothread.new()
    local r, ends = nil, 0
    local co = go(S, function()
      r = pack(call())
      ends = ends + 1
    end)
    S.step()
    assert.is_true(S.scheduled(co))
    ready()
    socket.sleep(0.05) -- past every deadline below
    S.step() -- one turn: the timer and the readiness both come
    S.run()
    assert.equal(1, ends)
    return r
  end

  it("gives a TCP receive its data", function()
    local c, a = support.tcp_pair()
    c:settimeout(0.01)
    assert.same({ n = 3, "data", nil, nil }, race(function() return c:receive() end, function() a:send("data\n") end))
    c:close()
    a:close()
  end)

  it("gives a TCP accept its connection", function()
    local server, port = listener()
    server:settimeout(0.01)
    local held
    local r = race(function() return server:accept() end, function() held = socket.connect("127.0.0.1", port) end)
    assert.matches("^tcp{client}", tostring(r[1]))
    r[1]:close()
    held:close()
    server:close()
  end)

  it("gives a UDP receivefrom its datagram", function()
    local u = assert(socket.udp())
    assert(u:setsockname("127.0.0.1", 0))
    local _, port = u:getsockname()
    u:settimeout(0.01)
    local r = race(function() return u:receivefrom() end, function() socket.udp4():sendto("dg", "127.0.0.1", port) end)
    assert.equal("dg", r[1])
    u:close()
  end)

  it("gives a select its ready socket", function()
    local c, a = support.tcp_pair()
    local r = race(function()
      local readable, _, err = socket.select({ c }, nil, 0.01)
      return #readable, err
    end, function() a:send("x") end)
    assert.same({ n = 2, 1, nil }, r)
    c:close()
    a:close()
  end)

  it("gives a channel receive its value", function()
    local tx, rx = channel.new()
    rx:settimeout(0.01)
    assert.same({ n = 1, "v" }, race(function() return rx:receive() end, function() tx:send("v") end))
  end)

  it("gives a process wait the exit #pidfd", function()
    local p = assert(cothread.process.spawn({ "sleep", "0.02" }))
    assert.same({ n = 3, true, "exit", 0 }, race(function() return p:wait(0.01) end, function() end))
  end)

  it("gives an OS signal wait its signal", function()
    local r = race(function() return cothread.signal.wait("SIGUSR2", 0.01) end, function()
      assert.is_true(cothread.signal.raise("SIGUSR2")) -- blocked while waited for: pending
    end)
    assert.same({ n = 2, "SIGUSR2", 12 }, r)
  end)

  it("gives a future await its value", function()
    local p, f = cothread.promise()
    assert.same({ n = 2, true, "v" }, race(function() return f:await(0.01) end, function() p:set("v") end))
  end)
end)
