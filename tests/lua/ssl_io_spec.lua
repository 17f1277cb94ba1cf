-- cothread.ssl on the event loop: cancellation, select, collection, load,
-- SNI and ALPN, a peer that leaves mid-record, cothread.pcall. The module and
-- single connections are in ssl_spec.lua; certificates and helpers in
-- tls_support.lua. LuaSec must be installed (scripts/packages: lua-sec).
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/ssl_io_spec.lua

local cothread = require "cothread"
local socket = require "cothread.socket"

local here = (debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./")
local support = dofile(here .. "support.lua")
local tls_support = dofile(here .. "tls_support.lua")

local ssl = require "cothread.ssl"
local go = support.go
-- Under valgrind the loads are smaller (CMakeLists.txt sets COT_VALGRIND).
local slow = os.getenv("COT_VALGRIND") ~= nil

local certs
setup(function() certs = tls_support.make() end)
teardown(function() certs.remove() end)
local kit = tls_support.kit(function() return certs end, go)
local listener, client, tls_pair = kit.listener, kit.client, kit.pair

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
      local r = socket.select({ c }, nil, 5)
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
    assert.is_true(got.took < 1, "took " .. got.took) -- not the 5 s a wait would last
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

  it("ends when another cothread closes a connection of the set: it is readable, and 'closed'", function()
    local S = cothread.new()
    local got = {}
    go(S, function()
      local c, s = tls_pair(S)
      local d, t = tls_pair(S)
      go(S, function()
        socket.sleep(0.02)
        c:close()
      end)
      local t0 = cothread.time()
      local r, _, err = socket.select({ d, c }, nil, 2)
      got.took = cothread.time() - t0
      got.readable = r[1] == c and r[2] == nil and err == nil
      got.receive = { c:receive() }
      for _, x in ipairs { s, d, t } do x:close() end
    end)
    S.run()
    assert.is_true(got.readable)
    assert.is_true(got.took < 1, "took " .. tostring(got.took))
    assert.same({ nil, "closed", "" }, got.receive)
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
