-- cosock.ssl: the scheduler table's lazy `ssl` field (cothread.ssl), used as
-- cosock's programs and its test/ssl scripts use it: mutual TLS, line echo,
-- LuaSec's "wantread" on a timeout, select on TLS connections, receive(n)
-- across records. Certificates are made at test time (tls_support.lua);
-- loopback only; every wait is bounded. LuaSec must be installed.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/cosock_ssl_spec.lua

local cothread = require "cothread"
-- cothread.ssl keeps, for the Lua state, the LuaSec it was made with (the
-- `ssl` fields below load it); `expose` keeps this load for the spec files
-- after this one, which busted would otherwise give another LuaSec.
expose("cothread.ssl", function() require "cothread.ssl" end)

local here = (debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./")
local support = dofile(here .. "support.lua")
local tls_support = dofile(here .. "tls_support.lua")

-- Under valgrind (CMakeLists.txt sets COT_VALGRIND) a call may wait longer: a
-- client reading byte by byte keeps the others from running for seconds.
local LIMIT = os.getenv("COT_VALGRIND") and 60 or 5

local certs
setup(function() certs = tls_support.make() end)
teardown(function() certs.remove() end)

-- Mutual TLS, as cosock's scripts configure it: each side checks the other.
local function server_params()
  return certs.server(nil, { verify = { "peer", "fail_if_no_peer_cert" } })
end
local function client_params()
  return certs.client({ certificate = certs.path("client.crt"), key = certs.path("client.key"),
    verify = { "peer", "fail_if_no_peer_cert" } })
end

-- In a cothread of `cosock`: a server on 127.0.0.1 that accepts `n` clients,
-- wraps and handshakes each, and runs serve(conn) in a cothread of its own.
-- Returns the port.
local function tls_server(cosock, n, serve)
  local server = assert(cosock.socket.bind("127.0.0.1", 0))
  local _, port = server:getsockname()
  cosock.spawn(function()
    server:settimeout(LIMIT)
    for _ = 1, n do
      local c = assert(server:accept())
      local t = assert(cosock.ssl.wrap(c, server_params()))
      t:settimeout(LIMIT)
      assert(t:dohandshake())
      cosock.spawn(function() serve(t) end, "served")
    end
    server:close()
  end, "server")
  return port
end

-- A handshaken client connection to `port`, as cosock's scripts make one.
local function tls_client(cosock, port)
  local c = assert(cosock.socket.tcp())
  assert(c:connect("127.0.0.1", port))
  local t = assert(cosock.ssl.wrap(c, client_params()))
  assert(t:dohandshake())
  return t
end

describe("the ssl field", function()
  it("is cothread.ssl, loaded on first use only", function()
    local out = support.chunk([[
      local cothread = require "cothread"
      local before = { package.loaded.ssl == nil, rawget(cothread, "ssl") == nil }
      local ssl = cothread.ssl
      io.write(table.concat({ tostring(before[1]), tostring(before[2]),
        tostring(ssl == require "cothread.ssl"), tostring(rawget(cothread, "ssl") == ssl),
        tostring(package.loaded.ssl ~= nil), tostring(cothread.new().ssl == ssl),
        tostring(cothread.no_such_field) }, "|"))
    ]])
    assert.equal("true|true|true|true|true|true|nil", out)
  end)

  it("is what asyncify gives for 'ssl', 'cosock.ssl' and their https", function()
    local ssl, https = require "cothread.ssl", require "cothread.ssl.https"
    for _, name in ipairs { "ssl", "cosock.ssl" } do
      assert.equal(ssl, cothread.asyncify(name), name)
      assert.equal(https, cothread.asyncify(name .. ".https"), name .. ".https")
    end
  end)

  it("raises LuaSec's absence when read, and leaves require 'cothread' working", function()
    local out = support.chunk([[
      package.preload.ssl = function() error("no LuaSec in this test") end
      local cothread = require "cothread"
      local ok, err = pcall(function() return cothread.ssl end)
      io.write(tostring(ok), "|", tostring(rawget(cothread, "ssl")), "|", tostring(err))
    ]])
    assert.matches("^false|nil|cothread.ssl needs LuaSec", out)
    assert.matches("apt%-get install lua%-sec", out)
  end)
end)

describe("a cosock program over TLS", function()
  it("echoes lines; a receive that times out answers LuaSec's wantread", function()
    local cosock = cothread.new()
    local got = {}
    local port = tls_server(cosock, 3, function(t)
      local line = t:receive()
      while line do
        cosock.socket.sleep(0.3)
        t:send(line .. "\n")
        line = t:receive()
      end
      t:close()
    end)
    for _, timeout in ipairs { 0, 0.01, 5 } do
      cosock.spawn(function()
        local t = tls_client(cosock, port)
        assert(t:send("foo\n"))
        t:settimeout(timeout)
        local t0 = cosock.socket.gettime()
        got[timeout] = { t:receive() }
        got[timeout].took = cosock.socket.gettime() - t0
        t:close()
      end, "client " .. timeout)
    end
    cosock.run()
    assert.same({ nil, "wantread", "" }, { got[0][1], got[0][2], got[0][3] })
    assert.is_true(got[0].took < 0.3) -- before the echo (0.3 s): it did not wait for it
    assert.same({ nil, "wantread", "" }, { got[0.01][1], got[0.01][2], got[0.01][3] })
    assert.same({ "foo" }, { got[5][1], got[5][2] })
  end)

  it("selects TLS connections, data LuaSec already decrypted included", function()
    local cosock = cothread.new()
    local lines = {}
    local port = tls_server(cosock, 2, function(t)
      -- Both lines in one write: after the first receive the second is
      -- already decrypted, and select must answer for it without waiting.
      local a, b = t:receive(), t:receive()
      t:send(a .. "\n" .. b .. "\n")
      t:receive() -- until the client closes
      t:close()
    end)
    cosock.spawn(function()
      local s1, s2 = tls_client(cosock, port), tls_client(cosock, port)
      assert(s1:send("foo\nbar\n"))
      assert(s2:send("baz\nqux\n"))
      local left = 4
      while left > 0 do
        local ready, _, err = cosock.socket.select({ s1, s2 }, nil, 5)
        assert(not err, err)
        for _, s in ipairs(ready) do
          lines[#lines + 1] = assert(s:receive())
          left = left - 1
        end
      end
      s1:close()
      s2:close()
    end, "double client")
    cosock.run()
    table.sort(lines)
    assert.same({ "bar", "baz", "foo", "qux" }, lines)
  end)

  it("receives a payload sent in pieces with receive(n) of any size", function()
    local cosock = cothread.new()
    local SIZE, sizes = 65535, { 1, 8191, 8193, 16384, 65535 }
    local got = {}
    local port = tls_server(cosock, #sizes, function(t)
      local n = tonumber(assert(t:receive()))
      local sent = 0
      while sent < n do
        local piece = math.min(10000, n - sent)
        sent = sent + assert(t:send(("*"):rep(piece)))
        cosock.socket.sleep(0.01)
      end
      t:close()
    end)
    for _, size in ipairs(sizes) do
      cosock.spawn(function()
        local t = tls_client(cosock, port)
        t:settimeout(LIMIT)
        assert(t:send(SIZE .. "\n"))
        local parts = {}
        local have = 0
        while have < SIZE do
          local data = assert(t:receive(math.min(size, SIZE - have)))
          parts[#parts + 1] = data
          have = have + #data
        end
        got[size] = table.concat(parts)
        t:close()
      end, "client " .. size)
    end
    cosock.run()
    for _, size in ipairs(sizes) do
      assert.equal(("*"):rep(SIZE), got[size], "receive(" .. size .. ")")
    end
  end)
end)
