-- cothread.socket: LuaSocket's TCP surface on the event loop, and run/idle waiting in
-- the loop. Loopback only; every wait is bounded.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/socket_spec.lua

local cothread = require "cothread"
local socket = require "cothread.socket"

local here = (debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./")
local support = dofile(here .. "support.lua")

local go = support.go

-- A listening server on 127.0.0.1 and its port.
local function listener(backlog)
  local server = assert(socket.bind("127.0.0.1", 0, backlog))
  local _, port = server:getsockname()
  return server, port
end

local pair = support.tcp_pair

local cost = support.cost

describe("the module", function()
  it("is require 'cothread.socket' and the socket field of every scheduler", function()
    assert.equal(socket, cothread.socket)
    assert.equal(socket, cothread.new().socket)
    for _, name in ipairs { "tcp", "tcp4", "tcp6", "bind", "connect", "select", "sleep", "gettime" } do
      assert.is_function(socket[name], name)
    end
    assert.matches("^cothread.socket %d+%.%d+%.%d+", socket._VERSION)
  end)

  it("gettime is the wall clock in seconds", function()
    assert.is_true(math.abs(socket.gettime() - os.time()) < 2)
  end)

  it("makes master objects with LuaSocket's class names", function()
    local t = socket.tcp()
    assert.matches("^tcp{master}: 0x", tostring(t))
    assert.equal(-1, t:getfd()) -- made at the first bind or connect
    local t4, t6 = socket.tcp4(), socket.tcp6()
    assert.is_true(t4:getfd() >= 0)
    assert.is_true(t6:getfd() >= 0)
    assert.is_true(t6:getoption("ipv6-v6only"))
    for _, s in ipairs { t, t4, t6 } do assert.equal(1, s:close()) end
    assert.equal(-1, t4:getfd())
  end)
end)

describe("blocking mode (outside cothreads)", function()
  it("binds, connects, accepts, sends and receives, blocking the caller", function()
    local c, a = pair()
    assert.matches("^tcp{client}", tostring(c))
    assert.matches("^tcp{client}", tostring(a))
    local ip, port, family = c:getpeername()
    assert.equal("127.0.0.1", ip)
    assert.is_number(port)
    assert.equal("inet", family)
    assert.same({ 5, nil, nil }, { c:send("hello") })
    assert.equal("hel", a:receive(3))
    assert.equal("lo", a:receive(2))
    c:settimeout(0.05)
    local t0 = cothread.time()
    assert.same({ nil, "timeout", "" }, { c:receive() })
    assert.is_true(cothread.time() - t0 >= 0.04)
    c:close()
    a:close()
  end)

  it("honours to-be-closed variables", function()
    local fd = support.tbc([[
      local socket = ...
      local s <close> = socket.tcp4()
      assert(s:getfd() >= 0)
      return s:getfd()
    ]], socket)
    if not fd then return end -- no to-be-closed variables before Lua 5.4
    local s2 = socket.tcp4() -- the descriptor was released: reused
    assert.equal(fd, s2:getfd())
    s2:close()
  end)
end)

describe("an echo server", function()
  it("serves 50 clients exchanging 1 MiB each", function()
    local S = cothread.new()
    local CLIENTS, SIZE, CHUNK = 50, 1024 * 1024, 64 * 1024
    local server, port = listener(64)
    local served, checked = 0, 0
    local watchdog = go(S, function()
      socket.sleep(30)
      error("the echo test took more than 30 s")
    end)
    go(S, function()
      for _ = 1, CLIENTS do
        local c = assert(server:accept())
        go(S, function()
          while true do
            local data, err, partial = c:receive(CHUNK)
            data = data or partial
            if #data > 0 then assert(c:send(data)) end
            if err == "closed" then break end
            assert.is_nil(err)
          end
          c:close()
          served = served + 1
        end)
      end
      server:close()
    end)
    for i = 1, CLIENTS do
      go(S, function()
        local c = assert(socket.connect("127.0.0.1", port))
        assert(c:setoption("tcp-nodelay", true))
        local block = string.rep(string.char(i % 256), CHUNK - 1) .. "\n"
        go(S, function() -- the sender
          for _ = 1, math.floor(SIZE / CHUNK) do assert(c:send(block)) end
          assert(c:shutdown("send"))
        end)
        local got = assert(c:receive(SIZE))
        assert.equal(SIZE, #got)
        assert.equal(string.rep(block, math.floor(SIZE / CHUNK)), got)
        assert.same({ nil, "closed", "" }, { c:receive(1) })
        c:close()
        checked = checked + 1
        if checked == CLIENTS then S.unschedule(watchdog) end
      end)
    end
    local cpu, wall = cost(S.run)
    assert.equal(CLIENTS, checked)
    assert.equal(CLIENTS, served)
    assert.is_true(wall < 30, "took " .. wall .. " s")
    assert.is_true(cpu < 30)
  end)
end)

describe("receive", function()
  it("reads lines (dropping CRs), counts, prefixes, and the rest", function()
    local S = cothread.new()
    local c, a = pair()
    local got = {}
    go(S, function()
      got[#got + 1] = { c:receive("*l") }
      got[#got + 1] = { c:receive("l") }
      got[#got + 1] = { c:receive() }
      got[#got + 1] = { c:receive(4) }
      got[#got + 1] = { c:receive(5, "ab") }
      got[#got + 1] = { c:receive(2, "xyz") } -- the prefix is longer: nothing read
      got[#got + 1] = { c:receive("*a") }
      got[#got + 1] = { c:receive("a") }
    end)
    go(S, function()
      a:send("one\r\ntw\ro\n")
      socket.sleep(0.01)
      a:send("\nabcdefgh")
      socket.sleep(0.01)
      a:send("ijkl")
      a:close()
    end)
    S.run()
    assert.same({
      { "one", nil, nil }, { "two", nil, nil }, { "", nil, nil }, { "abcd", nil, nil },
      { "abefg", nil, nil }, { "xyz", nil, nil }, { "hijkl", nil, nil }, { nil, "closed", "" },
    }, got)
    c:close()
  end)

  it("returns the partial data on timeout and on close", function()
    local S = cothread.new()
    local c, a = pair()
    local got = {}
    go(S, function()
      c:settimeout(0.05)
      got[1] = { c:receive("*l") }
      S.notify("more")
      c:settimeout(1)
      got[2] = { c:receive("*l", got[1][3]) }
      c:settimeout(0.05)
      got[3] = { c:receive(10) }
      S.notify("more")
      got[4] = { c:receive("*a") }
      S.notify("more")
      c:settimeout(1)
      got[5] = { c:receive("*l") }
    end)
    go(S, function() -- each piece is sent once the client asks for more
      a:send("part")
      S.wait("more")
      a:send("ial\nabcd")
      S.wait("more")
      a:send("rest\r")
      S.wait("more")
      a:send("line\r without end")
      a:close()
    end)
    S.run()
    assert.same({
      { nil, "timeout", "part" }, { "partial", nil, nil }, { nil, "timeout", "abcd" },
      { nil, "timeout", "rest\r" }, { nil, "closed", "line without end" },
    }, got)
    c:close()
  end)

  it("with a timeout of 0 never suspends", function()
    local S = cothread.new()
    local c, a = pair()
    local turns = 0
    go(S, function()
      c:settimeout(0)
      assert.same({ nil, "timeout", "" }, { c:receive() })
      turns = turns + 1
    end)
    S.step()
    assert.equal(1, turns)
    c:close()
    a:close()
  end)

  it("suspends only the calling cothread", function()
    local S = cothread.new()
    local c, a = pair()
    local ticks, line = 0, nil
    go(S, function() line = c:receive() end)
    go(S, function()
      for _ = 1, 5 do
        ticks = ticks + 1
        socket.sleep(0.01)
      end
      a:send("late\n")
    end)
    S.run()
    assert.equal(5, ticks)
    assert.equal("late", line)
    c:close()
    a:close()
  end)
end)

describe("the line-length limit (option 'maxline')", function()
  it("is off by default: a long line comes whole", function()
    local c, a = pair()
    assert.equal(0, c:getoption("maxline"))
    local long = string.rep("x", 100000)
    local S = cothread.new()
    local got
    go(S, function() got = { c:receive() } end)
    go(S, function() assert(a:send(long .. "\n")) end)
    S.run()
    assert.same({ long, nil, nil }, got)
    c:close()
    a:close()
  end)

  it("fails a longer line with its first maxline bytes, then goes on with the rest", function()
    local c, a = pair()
    assert.equal(1, c:setoption("maxline", 8))
    assert.equal(8, c:getoption("maxline"))
    assert(a:send("12345678\n1234567\r\n123456789\nab\r\rcdefghij\nend\n"))
    c:settimeout(1)
    assert.same({ "12345678", nil, nil }, { c:receive() }, "8 bytes fit")
    assert.same({ "1234567", nil, nil }, { c:receive() }, "7 and a CR fit")
    assert.same({ nil, "line too long", "12345678" }, { c:receive() })
    assert.same({ "9", nil, nil }, { c:receive() }, "the rest of that line")
    assert.same({ nil, "line too long", "pre:abcdef" }, { c:receive("*l", "pre:") }, "CRs counted, then dropped")
    assert.same({ "ghij", nil, nil }, { c:receive() })
    assert.same({ "end", nil, nil }, { c:receive() })
    c:close()
    a:close()
  end)

  it("fails as soon as the line is too long, without waiting for its end", function()
    local c, a = pair()
    c:setoption("maxline", 8)
    local S = cothread.new()
    local got, took
    go(S, function()
      c:settimeout(5)
      local t0 = socket.gettime()
      got = { c:receive() }
      took = socket.gettime() - t0
    end)
    go(S, function()
      assert(a:send("abcd"))
      socket.sleep(0.02)
      assert(a:send("efghijkl")) -- 12 bytes, no end of line yet
    end)
    S.run()
    assert.same({ nil, "line too long", "abcdefgh" }, got)
    assert.is_true(took < 1, "waited " .. took .. " s")
    c:close()
    a:close()
  end)

  it("limits lines only: counts and '*a' take more", function()
    local c, a = pair()
    c:setoption("maxline", 4)
    assert(a:send("0123456789abcdef"))
    a:close()
    assert.same({ "0123456789", nil, nil }, { c:receive(10) })
    assert.same({ "abcdef", nil, nil }, { c:receive("*a") })
    c:close()
  end)

  it("passes from a server to the clients it accepts; 0 lifts it", function()
    local server, port = listener()
    assert.equal(1, server:setoption("maxline", 5))
    local c = assert(socket.connect("127.0.0.1", port))
    server:settimeout(5)
    local s = assert(server:accept())
    assert.equal(5, s:getoption("maxline"))
    assert(c:send("123456\n123456\n"))
    s:settimeout(1)
    assert.same({ nil, "line too long", "12345" }, { s:receive() })
    assert.equal(1, s:setoption("maxline", 0))
    assert.same({ "6", nil, nil }, { s:receive() })
    assert.same({ "123456", nil, nil }, { s:receive() })
    for _, o in ipairs { c, s, server } do o:close() end
  end)

  it("rejects bad values clearly", function()
    local c, a = pair()
    assert.error_matches(function() c:setoption("maxline", -1) end,
      "bad argument #2 to 'setoption' %(non%-negative integer expected%)")
    assert.error_matches(function() c:setoption("maxline", 1.5) end, "number has no integer representation")
    assert.error_matches(function() c:setoption("maxline", "many") end, "number expected, got string")
    assert.error_matches(function() c:setoption("maxline") end, "number expected, got no value")
    assert.equal(0, c:getoption("maxline"), "a refused value changes nothing")
    local u = socket.udp()
    assert.error_matches(function() u:setoption("maxline", 10) end, "unsupported option 'maxline'")
    u:close()
    c:close()
    assert.same({ nil, "closed" }, { c:setoption("maxline", 10) })
    assert.same({ nil, "closed" }, { c:getoption("maxline") })
    a:close()
  end)
end)

describe("send", function()
  it("sends data:sub(i, j) and returns the last index sent", function()
    local c, a = pair()
    assert.same({ 4, nil, nil }, { c:send("abcdef", 2, 4) })
    assert.same({ 6, nil, nil }, { c:send("abcdef", -2) })
    assert.same({ 0, nil, nil }, { c:send("") })
    assert.equal("bcdef", a:receive(5))
    a:close()
    socket.sleep(0.05)
    local last, err
    for _ = 1, 100 do -- the peer's RST comes after the first send
      last, err = c:send("x")
      if not last then break end
    end
    assert.is_nil(last)
    assert.equal("closed", err)
    c:close()
  end)

  it("waits while the peer does not read, and times out with the count sent", function()
    local S = cothread.new()
    local c, a = pair()
    assert(c:setoption("send-buffer-size", 4096))
    local r
    go(S, function()
      c:settimeout(0.1)
      r = { c:send(string.rep("x", 16 * 1024 * 1024)) }
    end)
    S.run()
    assert.is_nil(r[1])
    assert.equal("timeout", r[2])
    assert.is_true(r[3] > 0 and r[3] < 16 * 1024 * 1024)
    c:close()
    a:close()
  end)
end)

describe("timeouts", function()
  it("on accept", function()
    local S = cothread.new()
    local server = listener()
    local r, elapsed
    go(S, function()
      server:settimeout(0.05)
      local t0 = cothread.time()
      r = { server:accept() }
      elapsed = cothread.time() - t0
    end)
    S.run()
    assert.same({ nil, "timeout" }, r)
    assert.is_true(elapsed >= 0.04 and elapsed < 2, tostring(elapsed))
    server:close()
  end)

  it("on receive, per call with mode 't'", function()
    local S = cothread.new()
    local c, a = pair()
    local r, elapsed
    go(S, function()
      c:settimeout(0.1, "t")
      local t0 = cothread.time()
      r = { c:receive(6) }
      elapsed = cothread.time() - t0
    end)
    go(S, function() -- each piece comes within the block timeout, not the total
      for _ = 1, 5 do
        socket.sleep(0.03)
        a:send("x")
      end
    end)
    S.run()
    assert.equal("timeout", r[2])
    assert.is_true(#r[3] >= 2 and #r[3] <= 4, r[3])
    assert.is_true(elapsed >= 0.09 and elapsed < 2, tostring(elapsed))
    c:close()
    a:close()
  end)

  it("on connect, to a server whose backlog is full", function()
    local S = cothread.new()
    local server, port = listener(0)
    local results, held = {}, {}
    go(S, function()
      for _ = 1, 4 do
        local c = socket.tcp4()
        c:settimeout(0.1)
        local ok, err = c:connect("127.0.0.1", port)
        results[#results + 1] = ok or err
        held[#held + 1] = c
      end
    end)
    S.run()
    local timeouts = 0
    for _, r in ipairs(results) do
      if r == "timeout" then timeouts = timeouts + 1 end
    end
    assert.is_true(timeouts >= 2, table.concat(results, " "))
    for _, c in ipairs(held) do c:close() end
    server:close()
  end)

  it("connect to a closed port is refused", function()
    local S = cothread.new()
    local probe, port = listener()
    probe:close()
    local r
    go(S, function() r = { socket.connect("127.0.0.1", port) } end)
    S.run()
    assert.same({ nil, "connection refused" }, r)
  end)
end)

describe("closing a socket another cothread waits on", function()
  it("resumes a receiver with 'closed'", function()
    local S = cothread.new()
    local c, a = pair()
    local r
    go(S, function() r = { c:receive() } end)
    go(S, function()
      socket.sleep(0.02)
      c:close()
    end)
    S.run()
    assert.same({ nil, "closed", "" }, r)
    a:close()
  end)

  it("gives a receiver the bytes it had buffered as the partial", function()
    local S = cothread.new()
    local c, a = pair()
    local r, dirty
    go(S, function() r = { c:receive("*l") } end)
    go(S, function()
      assert(a:send("no end of line"))
      socket.sleep(0.02)
      dirty = c:dirty()
      c:close()
    end)
    S.run()
    assert.is_true(dirty)
    assert.same({ nil, "closed", "no end of line" }, r)
    assert.same({ nil, "closed", "" }, { c:receive("*l") }) -- given once
    a:close()
  end)

  it("resumes an acceptor with 'closed'", function()
    local S = cothread.new()
    local server = listener()
    local r
    go(S, function() r = { server:accept() } end)
    go(S, function() server:close() end)
    S.run()
    assert.same({ nil, "closed" }, r)
  end)
end)

describe("a cothread rescheduled from outside while waiting", function()
  it("leaves its wait: the late readiness never resumes it", function()
    local S = cothread.new()
    local c, a = pair()
    local resumed, r = 0, nil
    local waiter = go(S, function()
      resumed = resumed + 1
      r = { c:receive() }
      resumed = resumed + 1
    end)
    go(S, function()
      socket.sleep(0.02)
      assert.is_true(S.scheduled(waiter))
      assert.is_true(S.unschedule(waiter))
      a:send("data\n")
      socket.sleep(0.05) -- readiness comes meanwhile
    end)
    S.run() -- returns: nothing waits any more
    assert.equal(1, resumed)
    S.schedule(waiter)
    S.run()
    assert.equal(2, resumed)
    assert.same({ nil, "cancelled", "" }, r)
    c:settimeout(1)
    assert.equal("data", c:receive()) -- the data is still there
    c:close()
    a:close()
  end)

  it("leaves a timed wait: its timer never fires into it", function()
    local S = cothread.new()
    local server = listener()
    local resumed = 0
    local waiter = go(S, function()
      server:settimeout(0.05)
      server:accept()
      resumed = resumed + 1
    end)
    S.step()
    assert.is_true(S.unschedule(waiter))
    local cpu, wall = cost(function()
      S.run()
      socket.sleep(0.1)
      S.run()
    end)
    assert.equal(0, resumed)
    assert.is_true(wall < 1)
    server:close()
  end)
end)

describe("select", function()
  it("suspends the calling cothread until a socket is ready", function()
    local S = cothread.new()
    local server, port = listener()
    local r, ticks = nil, 0
    go(S, function() r = { socket.select({ server }, nil, 2) } end)
    go(S, function()
      for _ = 1, 3 do
        ticks = ticks + 1
        socket.sleep(0.01)
      end
      socket.connect("127.0.0.1", port):close()
    end)
    S.run()
    assert.equal(3, ticks)
    assert.equal(server, r[1][1])
    assert.equal(1, r[1][server])
    assert.same({}, r[2])
    server:close()
  end)

  it("returns {}, {}, 'timeout' when nothing is ready in time", function()
    local S = cothread.new()
    local c, a = pair()
    local r
    go(S, function() r = { socket.select({ c }, {}, 0.05) } end)
    S.run()
    assert.same({ {}, {}, "timeout" }, r)
    assert.same({ {}, {}, "timeout" }, { socket.select({ c }, nil, 0) }) -- blocking mode
    c:close()
    a:close()
  end)

  it("reports writable sockets and buffered data at once", function()
    local c, a = pair()
    a:send("one\ntwo\n")
    socket.sleep(0.02)
    assert.equal("one", c:receive())
    assert.is_true(c:dirty())
    local r, w = socket.select({ c }, { a }, 0)
    assert.equal(c, r[1])
    assert.equal(a, w[1])
    assert.equal(1, w[a])
    c:close()
    a:close()
  end)

  it("sleeps with only a timeout", function()
    local S = cothread.new()
    local elapsed
    go(S, function()
      local t0 = cothread.time()
      assert.same({ {}, {}, "timeout" }, { socket.select(nil, nil, 0.05) })
      elapsed = cothread.time() - t0
    end)
    S.run()
    assert.is_true(elapsed >= 0.04 and elapsed < 2)
  end)
end)

describe("the run loop", function()
  it("waits in the event loop without spinning", function()
    local S = cothread.new()
    local c, a = pair()
    go(S, function() c:receive() end)
    go(S, function()
      socket.sleep(0.3)
      a:send("\n")
    end)
    local cpu, wall = cost(S.run)
    assert.is_true(wall >= 0.25, tostring(wall))
    assert.is_true(cpu < 0.1, "cpu " .. cpu)
    c:close()
    a:close()
  end)

  it("runs socket sleeps of several cothreads at once", function()
    local S = cothread.new()
    for _ = 1, 10 do go(S, function() socket.sleep(0.1) end) end
    local _, wall = cost(S.run)
    assert.is_true(wall >= 0.09 and wall < 0.5, tostring(wall))
  end)

  it("mixes postponed cothreads and I/O in the default idle", function()
    local S = cothread.new()
    local c, a = pair()
    local log = {}
    go(S, function()
      local line = c:receive()
      log[#log + 1] = "recv " .. line
    end)
    go(S, function()
      S.delay(0.05)
      log[#log + 1] = "delayed"
      a:send("x\n")
    end)
    go(S, function()
      S.delay(0.1)
      log[#log + 1] = "delayed more"
    end)
    local cpu = cost(S.run)
    assert.same({ "delayed", "recv x", "delayed more" }, log)
    assert.is_true(cpu < 0.08)
    c:close()
    a:close()
  end)

  it("still calls a user's idle while something is postponed", function()
    local S = cothread.new()
    local c, a = pair()
    local idles, got = 0, nil
    S.idle = function(t)
      idles = idles + 1
      while cothread.time() < t do end
    end
    go(S, function() got = c:receive() end)
    go(S, function()
      S.delay(0.02)
      a:send("hi\n")
    end)
    S.run()
    assert.is_true(idles >= 1)
    assert.equal("hi", got)
    c:close()
    a:close()
  end)

  it("step polls the loop without blocking", function()
    local S = cothread.new()
    local c, a = pair()
    local got
    go(S, function() got = c:receive() end)
    S.step() -- parks it
    assert.is_nil(S.step())
    a:send("now\n")
    socket.sleep(0.02)
    S.step()
    assert.equal("now", got)
    c:close()
    a:close()
  end)
end)

describe("bad input", function()
  it("raises for wrong types and wrong classes", function()
    local t = socket.tcp()
    assert.has_error(function() t:receive() end)
    assert.error_matches(function() t:receive() end, "tcp{client} expected, got tcp{master}")
    assert.error_matches(function() t.send(42, "x") end, "tcp{client} expected, got number")
    assert.error_matches(function() t:accept() end, "tcp{server} expected")
    assert.error_matches(function() socket.bind() end, "bad argument #1")
    assert.error_matches(function() socket.connect("127.0.0.1") end, "bad argument #2")
    assert.error_matches(function() t:settimeout("x") end, "number expected")
    assert.error_matches(function() t:settimeout(1, "q") end, "invalid timeout mode")
    assert.error_matches(function() t:setoption("bogus", true) end, "unsupported option 'bogus'")
    assert.error_matches(function() t:setoption("keepalive", 1) end, "boolean expected")
    assert.error_matches(function() t:setoption("linger", { on = true }) end, "'timeout' field expected")
    assert.error_matches(function() socket.select(5) end, "table expected")
    assert.error_matches(function() socket.select({ 5 }) end, "socket expected at index 1")
    assert.error_matches(function() socket.sleep("x") end, "number expected")
    local c, a = pair()
    assert.error_matches(function() c:receive("*x") end, "invalid receive pattern")
    assert.error_matches(function() c:receive(-1) end, "invalid receive pattern")
    assert.error_matches(function() c:send({}) end, "string expected")
    assert.error_matches(function() c:shutdown("sideways") end, "invalid option 'sideways'")
    c:close()
    a:close()
    t:close()
  end)

  it("quotes a huge option name cut short", function()
    local huge = ("x"):rep(2 ^ 20)
    local t = socket.tcp()
    local c, a = pair()
    local calls = {
      function() t:setoption(huge, true) end,
      function() t:getoption(huge) end,
      function() socket.udp():setoption(huge, true) end,
      function() c:shutdown(huge) end,
      function() socket.connect("127.0.0.1", 1, nil, nil, huge) end,
    }
    for i, f in ipairs(calls) do
      local ok, msg = pcall(f)
      assert.is_false(ok, i)
      assert.is_truthy(msg:match("option 'x+%.%.%.'%)$"), msg:sub(1, 120))
      assert.is_true(#msg < 200, "message " .. i .. " is " .. #msg .. " bytes")
    end
    c:close()
    a:close()
    t:close()
  end)

  it("refuses an object that is not a socket, whatever its metatable holds", function()
    -- Every key of a socket's metatable copied into a file's: the file is
    -- still no socket (the check asks the registry, not the metatable).
    local path = os.tmpname()
    local file = cothread.file.open(path, "w")
    local mt = getmetatable(file)
    local copied = {}
    for k, v in pairs(getmetatable(socket.tcp())) do
      if mt[k] == nil then
        mt[k], copied[#copied + 1] = v, k
      end
    end
    local ok, msg = pcall(socket.tcp().getfd, file)
    for _, k in ipairs(copied) do mt[k] = nil end
    file:close()
    os.remove(path)
    assert.is_false(ok)
    assert.matches("tcp{any} expected, got userdata", msg)
  end)

  it("returns nil, message for invalid addresses", function()
    local r = { socket.connect("256.1.1.1", 80) }
    assert.is_nil(r[1])
    assert.is_string(r[2])
    r = { socket.bind("not an address!", 0) }
    assert.is_nil(r[1])
    assert.is_string(r[2])
    local t = socket.tcp4()
    r = { t:bind("::1", 0) } -- an IPv6 address for an IPv4 socket
    assert.is_nil(r[1])
    assert.is_string(r[2])
    r = { t:connect("127.0.0.1", "not a port") }
    assert.is_nil(r[1])
    t:close()
  end)

  it("returns 'closed' from closed objects", function()
    local c, a = pair()
    local server = listener()
    c:close()
    server:close()
    assert.equal(1, c:close())
    assert.same({ nil, "closed", "" }, { c:receive() })
    assert.same({ nil, "closed", 0 }, { c:send("x") })
    assert.same({ nil, "closed" }, { server:accept() })
    assert.same({ nil, "closed" }, { c:getpeername() })
    assert.same({ nil, "closed" }, { c:getsockname() })
    assert.same({ nil, "closed" }, { c:setoption("keepalive", true) })
    assert.same({ nil, "closed" }, { c:shutdown() })
    local m = socket.tcp()
    m:close()
    assert.same({ nil, "closed" }, { m:bind("127.0.0.1", 0) })
    assert.same({ nil, "closed" }, { m:connect("127.0.0.1", 1) })
    assert.same({ nil, "closed" }, { m:listen() })
    assert.equal(-1, c:getfd())
    assert.is_false(c:dirty())
    assert.matches("^tcp{client}: 0x", tostring(c))
    a:close()
  end)

  it("gives an invalid yield for a hand-made 'cothread.io'", function()
    local S = cothread.new()
    local err
    S.error = function(e) err = e end
    go(S, function() coroutine.yield("cothread.io") end)
    S.run()
    assert.equal("invalid yield operation 'cothread.io'", err)
    assert.is_nil(S["cothread.io"])
  end)
end)

describe("options", function()
  it("sets and reads keepalive, reuseaddr, tcp-nodelay and linger", function()
    local c, a = pair()
    for _, name in ipairs { "keepalive", "reuseaddr", "tcp-nodelay" } do
      assert.equal(1, c:setoption(name, true))
      assert.is_true(c:getoption(name))
      assert.equal(1, c:setoption(name, false))
      assert.is_false(c:getoption(name))
    end
    assert.equal(1, c:setoption("linger", { on = true, timeout = 3 }))
    assert.same({ on = true, timeout = 3 }, c:getoption("linger"))
    local t = socket.tcp() -- options before the descriptor exists apply when it is made
    assert.equal(1, t:setoption("reuseaddr", true))
    assert(t:bind("127.0.0.1", 0))
    assert.is_true(t:getoption("reuseaddr"))
    t:close()
    c:close()
    a:close()
  end)
end)

describe("descriptors above 1024", function()
  it("work (in a child process with a raised descriptor limit)", function()
    local out, ok = support.child("socket_fds.lua", 4096)
    if not out then
      pending("the descriptor limit cannot be raised to 4096 here")
      return
    end
    assert.is_true(ok, out)
    assert.matches("fds above 1024 ok", out)
  end)
end)

describe("accept out of descriptors", function()
  it("waits for a free descriptor without spinning (in a child under ulimit -n 64)", function()
    local out, ok = support.child("socket_fdlimit.lua", 64)
    assert.is_not_nil(out, "the descriptor limit could not be lowered")
    assert.is_true(ok, out)
    assert.matches("fd limit ok", out)
  end)
end)
