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

local LUA = os.getenv("COTHREAD_LUA") or "lua5.4"
local DIR = os.getenv("COTHREAD_LUA_DIR") or "build/lua"

local certs
setup(function() certs = tls_support.make() end)
teardown(function() certs.remove() end)
local kit = tls_support.kit(function() return certs end, go)
local listener, serve, client = kit.listener, kit.serve, kit.client

describe("the module", function()
  it("has LuaSec's names", function()
    for _, name in ipairs { "wrap", "newcontext", "loadcertificate" } do
      assert.is_function(ssl[name], name)
    end
    local luasec = require "ssl"
    assert.equal(luasec.config, ssl.config)
    assert.equal(luasec._VERSION, ssl._VERSION)
    assert.equal(luasec._COPYRIGHT, ssl._COPYRIGHT)
    assert.equal(ssl, require "cothread.ssl")
  end)

  it("fails to load without LuaSec, naming the package to install", function()
    local out = support.chunk([[
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
    assert.is_true(took < 1, "took " .. took) -- a park would last: the server never answers
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
    assert.is_true(took >= 0.15 and took < 2, "took " .. took)
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
    local p = assert(io.popen(support.chunk_command(src)))
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
