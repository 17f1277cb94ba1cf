-- cothread.ssl: LuaSec's TLS on cothread's sockets. Certificates are made at
-- test time (tls_support.lua); loopback only; every wait is bounded. LuaSec
-- must be installed (scripts/packages: lua-sec): without it this spec fails.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/ssl_spec.lua

local cothread = require "cothread"
local socket = require "cothread.socket"

local here = (debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./")
local support = dofile(here .. "support.lua")
local tls_support = dofile(here .. "tls_support.lua")

local ssl = require "cothread.ssl"
local go = support.go
-- Under valgrind the loads are smaller (CMakeLists.txt sets COT_VALGRIND).
local slow = os.getenv("COT_VALGRIND") ~= nil

local LUA = os.getenv("COTHREAD_LUA") or "lua5.4"
local DIR = os.getenv("COTHREAD_LUA_DIR") or "build/lua"

local certs
setup(function() certs = tls_support.make() end)
teardown(function() certs.remove() end)

-- A listening socket on 127.0.0.1 and its port.
local function listener()
  local server = assert(socket.bind("127.0.0.1", 0))
  local _, port = server:getsockname()
  return server, port
end

-- In a cothread of S: accepts one client on `server`, wraps it with `params`
-- and handshakes; calls f(conn, handshake results...).
local function serve(S, server, params, f)
  go(S, function()
    server:settimeout(5)
    local c = assert(server:accept())
    local t = assert(ssl.wrap(c, params))
    t:settimeout(5)
    f(t, t:dohandshake())
  end)
end

-- A client connection to `port`, wrapped with `params` (not handshaken).
local function client(port, params)
  local c = assert(socket.connect("127.0.0.1", port))
  local t = assert(ssl.wrap(c, params or certs.client()))
  t:settimeout(5)
  return t
end

-- Runs a chunk in a child Lua with the module on its path; its output.
local function child(src)
  local cmd = string.format("%q -e %q 2>&1", LUA,
    string.format("package.cpath = %q .. package.cpath\n", DIR .. "/?.so;") .. src)
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  p:close()
  return out
end

describe("the module", function()
  it("has LuaSec's names", function()
    for _, name in ipairs { "wrap", "newcontext", "loadcertificate" } do
      assert.is_function(ssl[name], name)
    end
    local luasec = require "ssl"
    assert.same(luasec.config, ssl.config) -- not equal: busted reloads "ssl" per spec file
    assert.equal(luasec._VERSION, ssl._VERSION)
    assert.equal(luasec._COPYRIGHT, ssl._COPYRIGHT)
    assert.equal(ssl, require "cothread.ssl")
  end)

  it("fails to load without LuaSec, naming the package to install", function()
    local out = child([[
      package.preload.ssl = function() error("no LuaSec in this test") end
      local ok, err = pcall(require, "cothread.ssl")
      io.write(tostring(ok), "|", tostring(err))
    ]])
    assert.matches("^false|cothread.ssl needs LuaSec", out)
    assert.matches("apt%-get install lua%-sec", out)
    assert.matches("luarocks install luasec", out)
    assert.matches("no LuaSec in this test", out)
  end)

  it("ignores SIGPIPE once loaded, so a write to a closed pipe does not kill", function()
    local src = [[
      %s
      io.stdout:setvbuf("no")
      for _ = 1, 64 do if not io.stdout:write(("x"):rep(65536)) then break end end
      io.stderr:write("alive\n")
    ]]
    -- The child's stdout is a pipe whose reader (`true`) is gone; SIGPIPE
    -- back to its default for it, whatever this process set.
    local function run(pre)
      local code = string.format("package.cpath = %q .. package.cpath\n", DIR .. "/?.so;") .. src:format(pre)
      local p = assert(io.popen(string.format("(env --default-signal=PIPE %q -e %q | true) 2>&1", LUA, code)))
      local out = p:read("*a")
      p:close()
      return out
    end
    assert.matches("alive", run([[require "cothread.ssl"]]))
    assert.not_matches("alive", run(""))
  end)
end)

describe("a connection", function()
  it("handshakes and echoes with LuaSec's patterns and results", function()
    local S = cothread.new()
    local server, port = listener()
    local got = {}
    serve(S, server, certs.server(), function(t, ok, err)
      got.server_hs = { ok, err }
      got.line = { t:receive("*l") }
      got.five = { t:receive(5) }
      got.prefixed = { t:receive(4, "ab") }
      assert(t:send("0123456789", 3, 6))
      got.rest = { t:receive("*a") }
      t:close()
    end)
    go(S, function()
      local t = client(port)
      t:sni("localhost")
      got.client_hs = { t:dohandshake() }
      got.fd = t:getfd()
      got.verify = { t:getpeerverification() }
      got.protocol = t:info("protocol")
      got.subject = t:getpeercertificate():subject()
      got.want = t:want()
      assert.equal(1, t:settimeout(5))
      got.sent = { t:send("line one\r\n12345cdXXtail") }
      got.four = { t:receive(4) }
      t:close()
      got.closed = { t:receive() }
      got.tostring = tostring(t)
    end)
    S.run()
    server:close()
    assert.same({ true }, got.client_hs)
    assert.same({ true }, got.server_hs)
    assert.same({ "line one" }, got.line)
    assert.same({ "12345" }, got.five)
    assert.same({ "abcd" }, got.prefixed)
    assert.same({ "XXtail" }, got.rest)
    assert.equal(23, got.sent[1])
    assert.same({ "2345" }, got.four)
    assert.is_true(got.fd >= 0)
    assert.same({ true }, got.verify)
    assert.matches("^TLSv1%.[23]$", got.protocol)
    local cn
    for _, e in ipairs(got.subject) do if e.name == "commonName" then cn = e.value end end
    assert.equal("localhost", cn)
    assert.equal("nothing", got.want)
    assert.equal(nil, got.closed[1])
    assert.equal("closed", got.closed[2])
    assert.matches("^SSL connection: 0x%x+ %(closed%)$", got.tostring)
  end)

  it("gives send's last byte and receive's partial data on failure", function()
    local S = cothread.new()
    local server, port = listener()
    serve(S, server, certs.server(), function(t)
      assert(t:send("partial"))
      t:close()
    end)
    local got
    go(S, function()
      local t = client(port)
      assert(t:dohandshake())
      got = { t:receive(100) }
      t:close()
    end)
    S.run()
    server:close()
    assert.same({ nil, "closed", "partial" }, got)
  end)

  it("reports an untrusted server as LuaSec does, on both sides", function()
    local S = cothread.new()
    local server, port = listener()
    local srv
    serve(S, server, certs.server(nil, { key = certs.path("rogue.key"), certificate = certs.path("rogue.crt") }),
      function(t, ok, err)
        srv = { ok, err }
        t:close()
      end)
    local cli, verify
    go(S, function()
      local t = client(port)
      cli = { t:dohandshake() }
      verify = { t:getpeerverification() }
      t:close()
    end)
    S.run()
    server:close()
    assert.same({ false, "certificate verify failed" }, cli)
    assert.same({ false, "tlsv1 alert unknown ca" }, srv)
    assert.same({ false, "closed" }, verify)
  end)

  it("refuses a client without a certificate when the server requires one", function()
    local S = cothread.new()
    local server, port = listener()
    local srv
    serve(S, server, certs.server(nil, { verify = { "peer", "fail_if_no_peer_cert" } }), function(t, ok, err)
      srv = { ok, err }
      t:close()
    end)
    local cli
    go(S, function()
      local t = client(port)
      cli = { t:dohandshake() }
      -- TLS 1.3: the client learns it at its first read.
      if cli[1] then cli = { t:receive() } end
      t:close()
    end)
    S.run()
    server:close()
    assert.is_false(srv[1])
    assert.matches("certificate", srv[2])
    assert.falsy(cli[1])
  end)

  it("accepts a client certificate signed by the CA (mutual TLS)", function()
    local S = cothread.new()
    local server, port = listener()
    local srv, cn
    serve(S, server, certs.server(nil, { verify = { "peer", "fail_if_no_peer_cert" } }), function(t, ok, err)
      srv = { ok, err }
      for _, e in ipairs(t:getpeercertificate():subject()) do
        if e.name == "commonName" then cn = e.value end
      end
      t:close()
    end)
    go(S, function()
      local t = client(port, certs.client { key = certs.path("client.key"), certificate = certs.path("client.crt") })
      assert(t:dohandshake())
      t:close()
    end)
    S.run()
    server:close()
    assert.same({ true }, srv)
    assert.equal("cothread client", cn)
  end)
end)

describe("timeouts", function()
  -- A plain TCP server that accepts and never answers (its client stays
  -- open until `S` ends); the client's TLS connection to it.
  local function silent(S)
    local server, port = listener()
    local keep = {}
    go(S, function()
      keep[1] = assert(server:accept())
    end)
    return server, port, keep
  end

  it("ends a handshake nobody answers at the deadline with LuaSec's want", function()
    local S = cothread.new()
    local server, port, keep = silent(S)
    local got, took
    go(S, function()
      local t = client(port)
      t:settimeout(0.2)
      local t0 = cothread.time()
      got = { t:dohandshake() }
      took = cothread.time() - t0
      t:close()
      keep[1]:close()
    end)
    S.run()
    server:close()
    assert.same({ false, "wantread" }, got)
    assert.is_true(took >= 0.15 and took < 2, "took " .. took)
  end)

  it("with timeout 0 tries once and never parks", function()
    local S = cothread.new()
    local server, port, keep = silent(S)
    local got, took
    go(S, function()
      local t = client(port)
      t:settimeout(0)
      local t0 = cothread.time()
      got = { t:dohandshake() }
      got[3] = t:dohandshake()
      took = cothread.time() - t0
      t:close()
      keep[1]:close()
    end)
    S.run()
    server:close()
    assert.same({ false, "wantread", false }, got)
    assert.is_true(took < 0.1, "took " .. took)
  end)

  it("limits a whole call with mode 't' and a receive with LuaSec's want", function()
    local S = cothread.new()
    local server, port = listener()
    serve(S, server, certs.server(), function(t)
      assert(t:send("ab"))
      S.delay(1)
      t:close()
    end)
    local got, took
    go(S, function()
      local t = client(port)
      assert(t:dohandshake())
      t:settimeout(-1)
      t:settimeout(0.2, "t")
      assert.same({ -1, 0.2 }, { t:gettimeout() })
      local t0 = cothread.time()
      got = { t:receive(10) }
      took = cothread.time() - t0
      t:close()
    end)
    S.run()
    server:close()
    assert.same({ nil, "wantread", "ab" }, got)
    assert.is_true(took >= 0.15 and took < 0.9, "took " .. took)
  end)
end)

describe("wrap", function()
  it("refuses a socket with unread buffered data, which stays readable", function()
    local S = cothread.new()
    local server, port = listener()
    local got = {}
    go(S, function()
      local c = assert(server:accept())
      c:settimeout(5)
      got.x = c:receive("*l")
      got.dirty = c:dirty()
      got.wrap = { ssl.wrap(c, certs.server()) }
      got.y = c:receive("*l")
      c:close()
    end)
    go(S, function()
      local c = assert(socket.connect("127.0.0.1", port))
      assert(c:send("x\ny\n"))
      c:receive("*a")
      c:close()
    end)
    S.run()
    server:close()
    assert.equal("x", got.x)
    assert.is_true(got.dirty)
    assert.same({ nil, "socket has unread data: wrap it before receiving from it" }, got.wrap)
    assert.equal("y", got.y)
  end)

  it("takes the descriptor from the socket, which is closed then", function()
    local c, a = support.tcp_pair()
    local fd = c:getfd()
    local t = assert(ssl.wrap(c, certs.client()))
    assert.equal(fd, t:getfd())
    assert.equal(-1, c:getfd())
    assert.same({ nil, "closed" }, { ssl.wrap(c, certs.client()) })
    t:close()
    assert.equal(-1, t:getfd())
    t:close() -- again: nothing
    a:close()
  end)

  it("raises on what is not a socket", function()
    assert.has_error(function() ssl.wrap(42, {}) end, "bad argument #1 to 'wrap' (socket expected, got number)")
    assert.has_error(function() ssl.wrap({}, {}) end, "bad argument #1 to 'wrap' (socket expected, got table)")
  end)

  it("passes LuaSec's error for bad parameters", function()
    local c, a = support.tcp_pair()
    local t, err = ssl.wrap(c, { mode = "client", protocol = "nonsense" })
    assert.is_nil(t)
    assert.is_string(err)
    c:close()
    a:close()
  end)

  it("forwards LuaSec's other methods and keeps LuaSec's answers after close", function()
    local c, a = support.tcp_pair()
    local t = assert(ssl.wrap(c, certs.client()))
    local meta = getmetatable(t)
    assert.is_table(meta.__index)
    for _, name in ipairs { "sni", "getsniname", "getalpn", "getpeercertificate", "getpeerchain",
      "getpeerverification", "getfinished", "getpeerfinished", "exportkeyingmaterial", "getstats",
      "setstats", "want", "info", "dohandshake", "receive", "send", "close", "settimeout", "dirty",
      "getfd" } do
      assert.is_function(meta.__index[name], name)
    end
    t:close()
    assert.same({ nil, "closed" }, { t:getpeercertificate() })
    assert.same({ false, "closed" }, { t:dohandshake() })
    assert.same({ nil, "closed", 0 }, { t:send("x") })
    assert.is_false(t:dirty())
    a:close()
  end)
end)

describe("outside cothreads", function()
  it("blocks as LuaSec does, against a server in a child process", function()
    local server, port = listener()
    server:close()
    local key, crt = certs.path("server.key"), certs.path("server.crt")
    local src = string.format([[
      local socket = require "cothread.socket"
      local ssl = require "cothread.ssl"
      local s = assert(socket.bind("127.0.0.1", %d))
      io.stdout:write("listening\n") io.stdout:flush()
      s:settimeout(10)
      local c = assert(s:accept())
      local t = assert(ssl.wrap(c, { mode = "server", protocol = "any", key = %q, certificate = %q }))
      t:settimeout(10)
      assert(t:dohandshake())
      assert(t:send(assert(t:receive("*l")):upper() .. "\n"))
      t:close()
    ]], port, key, crt)
    local cmd = string.format("%q -e %q 2>&1", LUA,
      string.format("package.cpath = %q .. package.cpath\n", DIR .. "/?.so;") .. src)
    local p = assert(io.popen(cmd))
    assert.equal("listening", p:read("*l"))
    local c = assert(socket.connect("127.0.0.1", port))
    local t = assert(ssl.wrap(c, certs.client()))
    t:settimeout(10)
    assert.is_true(t:dohandshake())
    assert(t:send("hello\n"))
    assert.equal("HELLO", t:receive("*l"))
    t:close()
    assert.equal("", p:read("*a"))
    p:close()
  end)
end)

-- In a cothread of S: a handshaken pair (client, server side).
local function tls_pair(S, server_params, client_params)
  local server, port = listener()
  local tx, rx = cothread.channel.new()
  go(S, function()
    server:settimeout(5)
    local c = assert(server:accept())
    local t = assert(ssl.wrap(c, server_params or certs.server()))
    t:settimeout(5)
    assert(t:dohandshake())
    tx:send(t)
  end)
  local t = client(port, client_params)
  assert(t:dohandshake())
  local s = rx:receive()
  server:close()
  -- TLS 1.3 servers send session tickets after the handshake: read them, so
  -- that a readable descriptor means data.
  t:settimeout(0)
  assert.same({ nil, "wantread", "" }, { t:receive() })
  t:settimeout(5)
  return t, s
end

describe("cancellation", function()
  it("ends a receive with 'closed' when another cothread closes the connection", function()
    local S = cothread.new()
    local r
    go(S, function()
      local c, s = tls_pair(S)
      go(S, function() r = { c:receive() } end)
      socket.sleep(0.05)
      c:close()
      s:close()
    end)
    S.run()
    assert.same({ nil, "closed", "" }, r)
  end)

  it("ends a receive with 'cancelled' when unscheduled, the connection still usable", function()
    local S = cothread.new()
    local r, c, s, waiter
    go(S, function()
      c, s = tls_pair(S)
      waiter = go(S, function() r = { c:receive() } end)
      socket.sleep(0.02)
      assert.is_true(S.unschedule(waiter))
      assert(s:send("data\n"))
      socket.sleep(0.05)
    end)
    S.run()
    assert.is_nil(r)
    S.schedule(waiter)
    S.run()
    assert.same({ nil, "cancelled", "" }, r)
    assert.equal("data", c:receive()) -- outside cothreads: blocks
    c:close()
    s:close()
  end)

  it("leaves the connection usable after a cosock handle's cancel", function()
    local S = cothread.new()
    local got
    go(S, function()
      local c, s = tls_pair(S)
      local h = S.spawn(function() got = c:receive() end)
      socket.sleep(0.02)
      h:cancel()
      assert(s:send("after\n"))
      got = { c:receive() }
      c:close()
      s:close()
    end)
    S.run()
    assert.same({ "after" }, got)
  end)
end)

describe("select", function()
  it("answers at once for data LuaSec already decrypted", function()
    local S = cothread.new()
    local got = {}
    go(S, function()
      local c, s = tls_pair(S)
      assert(s:send("a\nb\n")) -- one record
      got.a = c:receive("*l")
      got.dirty = c:dirty()
      local t0 = cothread.time()
      local r = socket.select({ c }, nil, 1)
      got.took = cothread.time() - t0
      got.readable = r[1] == c and r[c] == 1
      got.b = c:receive("*l")
      got.clean = c:dirty()
      c:close()
      s:close()
    end)
    S.run()
    assert.equal("a", got.a)
    assert.is_true(got.dirty)
    assert.is_true(got.readable)
    assert.is_true(got.took < 0.1, "took " .. got.took)
    assert.equal("b", got.b)
    assert.is_false(got.clean)
  end)

  it("waits for a record, in both lists, and mixes with channels", function()
    local S = cothread.new()
    local got = {}
    go(S, function()
      local c1, s1 = tls_pair(S)
      local c2, s2 = tls_pair(S)
      local tx, rx = cothread.channel.new()
      go(S, function()
        socket.sleep(0.05)
        assert(s2:send("two\n"))
      end)
      -- A connection may turn readable with a record that holds no data (a
      -- late session ticket): receiving takes it, and the select goes on.
      local t0, r, w, err = cothread.time(), nil, nil, nil
      repeat
        r, w, err = socket.select({ c1, c2 }, nil, 2)
        for _, t in ipairs(r) do
          t:settimeout(0)
          local data = t:receive()
          t:settimeout(5)
          if data then got.first = { c2 = t == c2, data = data, waited = cothread.time() - t0 >= 0.04 } end
        end
      until got.first or err
      r, w = socket.select(nil, { c1, c2 }, 1)
      got.writable = #w
      go(S, function()
        socket.sleep(0.02)
        tx:send("x")
      end)
      r = socket.select({ c1, rx }, nil, 1)
      got.channel = r[1] == rx
      r, w, err = socket.select({ c1 }, nil, 0.05)
      got.timeout = { #r, err }
      c1:close()
      r = socket.select({ c1 }, nil, 1)
      got.closed = r[1] == c1
      got.closed_receive = { c1:receive() }
      for _, t in ipairs { c2, s1, s2 } do t:close() end
    end)
    S.run()
    assert.same({ c2 = true, data = "two", waited = true }, got.first)
    assert.equal(2, got.writable)
    assert.is_true(got.channel)
    assert.same({ 0, "timeout" }, got.timeout)
    assert.is_true(got.closed)
    assert.same({ nil, "closed", "" }, got.closed_receive)
  end)

  it("refuses a closed channel's receiver in the write list, takes a TLS connection", function()
    local tx, rx = cothread.channel.new()
    assert.has_error(function() socket.select(nil, { rx }, 0) end)
    tx:close()
  end)
end)

describe("collection", function()
  -- Sockets this process has open.
  local function open_fds()
    for _ = 1, 4 do collectgarbage() end
    local p = assert(io.popen("ls -l /proc/$PPID/fd | grep -c socket:"))
    local n = tonumber(p:read("*a"))
    p:close()
    return n
  end

  it("takes a connection out of the engine before LuaSec closes its descriptor", function()
    local S = cothread.new()
    local n = slow and 20 or 100
    local before = open_fds()
    local outcomes = {}
    go(S, function()
      local server, port = listener()
      local peers = {}
      -- In a function of its own: no register of this cothread keeps the last.
      local function wrap_and_drop(i)
        local c = assert(socket.connect("127.0.0.1", port))
        peers[i] = assert(server:accept())
        local t = assert(ssl.wrap(c, certs.client()))
        t:settimeout(0.001)
        -- Nobody answers: the wait attaches the descriptor, then times out.
        outcomes[#outcomes + 1] = select(2, t:dohandshake())
      end
      for i = 1, n do wrap_and_drop(i) end
      for _, p in ipairs(peers) do p:close() end
      collectgarbage()
      collectgarbage()
      -- The same descriptor numbers again, as plain sockets on the same engine.
      local tx, rx = cothread.channel.new()
      for i = 1, n do
        local c = assert(socket.connect("127.0.0.1", port))
        local a = assert(server:accept())
        go(S, function()
          a:settimeout(5)
          local line = a:receive()
          a:send(line .. "\n")
          a:close()
        end)
        c:settimeout(5)
        assert(c:send(i .. "\n"))
        tx:send(c:receive() == tostring(i))
        c:close()
      end
      local all = true
      for _ = 1, n do all = rx:receive() and all end
      outcomes.echo = all
      server:close()
    end)
    S.run()
    S = nil -- and its event loop's descriptors
    assert.equal(n, #outcomes)
    for _, o in ipairs(outcomes) do assert.equal("wantread", o) end
    assert.is_true(outcomes.echo)
    assert.equal(before, open_fds())
  end)
end)

describe("load", function()
  it("moves 16 MiB both ways at once, a reader and a writer per side", function()
    local S = cothread.new()
    local chunks, size = slow and 16 or 256, 65536
    local function chunk(i) return string.rep(string.char(i % 251), size - 1) .. "\n" end
    local results = {}
    local function duplex(t, name, done)
      local finished = 0
      go(S, function()
        for i = 1, chunks do assert(t:send(chunk(i))) end
        finished = finished + 1
        if finished == 2 then done() end
      end)
      go(S, function()
        local ok = true
        for i = 1, chunks do ok = (t:receive(size) == chunk(i)) and ok end
        results[name] = ok
        finished = finished + 1
        if finished == 2 then done() end
      end)
    end
    local stats = {}
    go(S, function()
      local c, s = tls_pair(S)
      local left = 2
      local function done()
        left = left - 1
        if left == 0 then
          stats.c = { c:getstats() }
          c:close()
          s:close()
        end
      end
      duplex(c, "client", done)
      duplex(s, "server", done)
    end)
    S.run()
    assert.same({ client = true, server = true }, results)
    assert.is_true(stats.c[1] >= chunks * size, "received " .. tostring(stats.c[1]))
    assert.is_true(stats.c[2] >= chunks * size, "sent " .. tostring(stats.c[2]))
  end)

  it("serves many clients at once, a cothread each", function()
    local S = cothread.new()
    local n = slow and 8 or 64
    local server, port = listener()
    local answers = 0
    go(S, function()
      for _ = 1, n do
        local c = assert(server:accept())
        go(S, function()
          local t = assert(ssl.wrap(c, certs.server()))
          t:settimeout(10)
          assert(t:dohandshake())
          for _ = 1, 3 do assert(t:send(assert(t:receive()) .. "!\n")) end
          t:close()
        end)
      end
      server:close()
    end)
    for i = 1, n do
      go(S, function()
        local t = client(port)
        t:settimeout(10)
        assert(t:dohandshake())
        for k = 1, 3 do
          assert(t:send(i .. "." .. k .. "\n"))
          assert.equal(i .. "." .. k .. "!", t:receive())
          answers = answers + 1
        end
        t:close()
      end)
    end
    S.run()
    assert.equal(3 * n, answers)
  end)
end)

describe("SNI and ALPN", function()
  -- Serves one connection: `prepare(t)` before the handshake, `after(t, ok,
  -- err)` after it; answers the port.
  local function serve_with(S, params, prepare, after)
    local server, port = listener()
    go(S, function()
      local c = assert(server:accept())
      server:close()
      local t = assert(ssl.wrap(c, params))
      t:settimeout(5)
      if prepare then prepare(t) end
      after(t, t:dohandshake())
      t:close()
    end)
    return port
  end

  local function cn_of(cert)
    for _, e in ipairs(cert:subject()) do if e.name == "commonName" then return e.value end end
  end

  it("picks the certificate of the name the client asks for", function()
    local S = cothread.new()
    local other = assert(ssl.newcontext(certs.server("other")))
    local got = {}
    local port = serve_with(S, certs.server(), function(t) t:sni({ ["other.test"] = other }, true) end,
      function(t, ok) got.server = { ok, t:getsniname() } end)
    go(S, function()
      local t = client(port)
      t:sni("other.test")
      got.client = t:dohandshake()
      got.cn = cn_of(t:getpeercertificate())
      t:close()
    end)
    S.run()
    assert.same({ true, "other.test" }, got.server)
    assert.is_true(got.client)
    assert.equal("other.test", got.cn)
  end)

  it("fails both sides when a strict server does not know the name", function()
    local S = cothread.new()
    local other = assert(ssl.newcontext(certs.server("other")))
    local got = {}
    local port = serve_with(S, certs.server(), function(t) t:sni({ ["other.test"] = other }, true) end,
      function(_, ok, err) got.server = { ok, err } end)
    go(S, function()
      local t = client(port)
      t:sni("nobody.test")
      got.client = { t:dohandshake() }
      t:close()
    end)
    S.run()
    assert.is_false(got.server[1])
    assert.is_string(got.server[2])
    assert.is_false(got.client[1])
    assert.matches("unrecognized name", got.client[2])
  end)

  it("negotiates ALPN from a list and from the server's function", function()
    for _, server_alpn in ipairs { { "h2" }, function(offered) return offered[2] end } do
      local S = cothread.new()
      local got = {}
      local port = serve_with(S, certs.server(nil, { alpn = server_alpn }), nil,
        function(t, ok) got.server = { ok, t:getalpn() } end)
      go(S, function()
        local t = client(port, certs.client { alpn = { "h2", "http/1.1" } })
        got.client = { t:dohandshake(), t:getalpn() }
        t:close()
      end)
      S.run()
      local want = type(server_alpn) == "table" and "h2" or "http/1.1"
      assert.same({ true, want }, got.server)
      assert.same({ true, want }, got.client)
    end
  end)
end)

describe("a peer that closes mid-record", function()
  it("gives OpenSSL's unexpected end with the data decrypted before it", function()
    local S = cothread.new()
    local server, port = listener()
    local front, front_port = listener()
    local cut, sync = false, {}
    local tx, rx = cothread.channel.new()
    -- A plain proxy: everything both ways, until `cut`; then half of what the
    -- server sends next, and both sides closed.
    local function pump(from, to, cutting)
      from:settimeout(0)
      while true do
        local d, err, part = from:receive(65536)
        d = d or part
        if #d > 0 then
          if cutting and cut then
            assert(to:send(d:sub(1, math.floor(#d / 2))))
            from:close()
            to:close()
            return
          end
          assert(to:send(d))
        elseif err == "closed" then
          to:close()
          return
        else
          socket.select({ from }, nil, 5)
        end
      end
    end
    go(S, function()
      local a = assert(front:accept())
      local b = assert(socket.connect("127.0.0.1", port))
      go(S, function() pump(a, b, false) end)
      pump(b, a, true)
    end)
    go(S, function()
      local t = assert(ssl.wrap(assert(server:accept()), certs.server()))
      t:settimeout(5)
      assert(t:dohandshake())
      tx:send(true)
      sync.go = t:receive()
      assert(t:send(string.rep("z", 16384)))
      t:receive() -- until the proxy closes
      t:close()
    end)
    local got
    go(S, function()
      local t = client(front_port)
      assert(t:dohandshake())
      rx:receive()
      socket.sleep(0.05)
      t:settimeout(0)
      t:receive() -- the session tickets
      t:settimeout(5)
      cut = true
      assert(t:send("go\n"))
      got = { t:receive(16384) }
      t:close()
    end)
    S.run()
    server:close()
    front:close()
    assert.equal("go", sync.go)
    assert.is_nil(got[1])
    assert.equal("unexpected eof while reading", got[2])
    assert.is_true(#got[3] < 16384 and got[3] == string.rep("z", #got[3]))
  end)
end)

describe("inside cothread.pcall", function()
  it("suspends only the cothread on every Lua, Lua 5.1 too", function()
    local S = cothread.new()
    local got, ticks = {}, 0
    go(S, function()
      local c, s = tls_pair(S)
      go(S, function()
        for _ = 1, 5 do
          ticks = ticks + 1
          S.delay(0.005)
        end
        assert(s:send("late\n"))
      end)
      got = { cothread.pcall(c.receive, c) }
      c:close()
      s:close()
    end)
    S.run()
    assert.same({ true, "late" }, got)
    assert.equal(5, ticks)
  end)
end)
