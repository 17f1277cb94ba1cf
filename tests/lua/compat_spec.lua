-- The rows of doc/compatibility.md (sections cosock and LuaSocket) that were
-- changed to run the originals' own tests (tests/compat): one test per row,
-- runnable without the originals. Loopback only; every wait is bounded.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/compat_spec.lua

-- Lua 5.1 and LuaJIT have neither (their unpack is a global).
table.pack = table.pack or function(...) return { n = select("#", ...), ... } end
table.unpack = table.unpack or unpack
local cothread = require "cothread"
local socket = require "cothread.socket"

local here = (debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./")
local support = dofile(here .. "support.lua")

local tcp_pair = support.tcp_pair

-- Runs f in a cothread of the default scheduler, runs it to the end, and
-- returns what f returned (raising what it raised).
local function in_cothread(f)
  local r
  cothread.spawn(function() r = table.pack(pcall(f)) end)
  cothread.run()
  assert(r, "the cothread did not end")
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

describe("cosock rows", function()
  it("select: the lists iterate as lists, and still map a socket to its index", function()
    local c, a = tcp_pair()
    assert(a:send("x\n"))
    local u = socket.udp4()
    local r, w, err = socket.select({ u, c }, { c }, 1)
    assert.is_nil(err)
    local seen = {}
    for k, v in pairs(r) do seen[#seen + 1] = { k, v } end
    assert.same({ { 1, c } }, seen) -- pairs sees only the list (cosock's programs)
    assert.equal(1, r[c]) -- LuaSocket's programs index by socket
    assert.is_nil(r[u])
    assert.equal(c, w[1])
    assert.equal(1, w[c])
    local none = socket.select({ u }, nil, 0)
    assert.is_nil(next(none)) -- none ready: an empty list
    c:close(); a:close(); u:close()
  end)

  it("asyncify: its socket's waiting functions raise where nothing can yield, and wait in a cothread", function()
    local async = cothread.asyncify("socket")
    assert.not_equal(socket, async)
    for _, name in ipairs { "select", "sleep", "connect" } do
      local ok, err = pcall(async[name], {}, {}, 0.01)
      assert.is_false(ok, name)
      assert.is_true(support.is_yield_error(err), err)
    end
    for k, v in pairs(socket) do
      if k ~= "select" and k ~= "sleep" and k ~= "connect" then assert.equal(v, async[k], k) end
    end
    local r, w, e = in_cothread(function() return async.select(nil, nil, 0.01) end)
    assert.same({}, r); assert.same({}, w); assert.equal("timeout", e)
  end)

  it("get_thread_metadata: a woken cothread shows what its last wait waited on", function()
    local c, a = tcp_pair()
    local info
    cothread.spawn(function()
      c:settimeout(2)
      assert(c:receive())                          -- waits to read: 1 reader
      info = cothread.get_thread_metadata(cothread.running())
      socket.sleep(0)                              -- a wait on nothing
      info = { info, cothread.get_thread_metadata(cothread.running()) }
    end, "reader")
    cothread.spawn(function() assert(a:send("line\n")) end)
    cothread.run()
    assert.equal(1, info[1].recvt)
    assert.equal(0, info[1].sendt)
    assert.equal(0, info[2].recvt)
    assert.equal(0, info[2].sendt)
    c:close(); a:close()
  end)
end)

describe("LuaSocket rows", function()
  it("class: each object's class, which follows listen, connect and setpeername", function()
    local m = socket.tcp()
    assert.equal("tcp{master}", m.class)
    assert(m:bind("127.0.0.1", 0))
    assert(m:listen())
    assert.equal("tcp{server}", m.class)
    local _, port = m:getsockname()
    local c = socket.tcp()
    assert(c:connect("127.0.0.1", port))
    assert.equal("tcp{client}", c.class)
    local u = socket.udp()
    assert.equal("udp{unconnected}", u.class)
    assert(u:setpeername("127.0.0.1", port))
    assert.equal("udp{connected}", u.class)
    assert(u:setpeername("*"))
    assert.equal("udp{unconnected}", u.class)
    assert.equal("tcp{client}", tostring(c):match("^[^:]*"))
    c:close()
    assert.equal("tcp{client}", c.class) -- a closed object keeps its class
    m:close(); u:close()
  end)

  it("getstats/setstats: bytes taken and sent, and the age", function()
    local c, a = tcp_pair()
    assert(a:send("hello\nworld"))
    assert.equal("hello", c:receive())
    assert.equal("wor", c:receive(3))
    assert(c:send("12345"))
    local r, s, age = c:getstats()
    assert.equal(9, r) -- "hello\n" and "wor"
    assert.equal(5, s)
    assert.is_true(age >= 0 and age < 5)
    assert.equal(1, c:setstats(100, nil, 60))
    r, s, age = c:getstats()
    assert.equal(100, r)
    assert.equal(5, s)
    assert.is_true(age >= 60 and age < 65)
    assert.has_error(function() socket.tcp():getstats() end) -- clients only
    c:close(); a:close()
  end)

  it("setfd: the object takes another descriptor (not closing its own)", function()
    local c, a = tcp_pair()
    local m = socket.tcp()
    local fd = c:getfd()
    assert.is_nil(m:setfd(fd))
    assert.equal(fd, m:getfd())
    m:setfd(-1) -- give it back before either is collected
    assert.equal(-1, m:getfd())
    assert.equal(fd, c:getfd())
    local u = socket.udp()
    assert.is_nil(u:setfd(-1))
    c:close(); a:close()
  end)

  it("getfamily: inet4 or inet6", function()
    assert.equal("inet4", socket.tcp4():getfamily())
    assert.equal("inet4", socket.tcp():getfamily()) -- no descriptor yet
    assert.equal("inet4", socket.udp4():getfamily())
    local t6 = socket.tcp6()
    if t6 then assert.equal("inet6", t6:getfamily()) end
    local u6 = socket.udp6()
    if u6 then assert.equal("inet6", u6:getfamily()) end
  end)

  it("setpeername and setsockname of TCP objects: connect and bind", function()
    local server = assert(socket.bind("127.0.0.1", 0))
    local _, port = server:getsockname()
    local m = socket.tcp()
    assert.equal(1, m:setsockname("127.0.0.1", 0))
    assert.equal(1, m:setpeername("127.0.0.1", port))
    assert.equal("tcp{client}", m.class)
    m:close(); server:close()
  end)

  it("_SETSIZE, _SOCKETINVALID and _DATAGRAMSIZE", function()
    assert.is_true((math.type == nil or math.type(socket._SETSIZE) == "integer") and socket._SETSIZE > 0)
    assert.equal(-1, socket._SOCKETINVALID)
    assert.equal(8192, socket._DATAGRAMSIZE)
  end)

  it("skip: drops the first n arguments", function()
    assert.same({ 3, 4 }, { socket.skip(2, 1, 2, 3, 4) })
    assert.same({ 1, 2 }, { socket.skip(0, 1, 2) })
    assert.equal(0, select("#", socket.skip(5, 1, 2)))
    assert.has_error(function() socket.skip("x") end)
  end)

  it("__unload: does nothing", function()
    assert.equal(0, select("#", socket.__unload()))
    assert.is_function(socket.tcp)
  end)

  it("receive(0): needs something buffered, so it fails on a closed object", function()
    local c, a = tcp_pair()
    c:settimeout(0)
    assert.same({ nil, "timeout", "" }, { c:receive(0) }) -- nothing there yet
    assert(a:send("abc"))
    c:settimeout(2)
    assert.equal("", c:receive(0)) -- waits for data, keeps it buffered
    assert.is_true(c:dirty())
    assert.equal("abc", c:receive(3))
    assert.equal("xy", c:receive(1, "xy")) -- a prefix at least n long: as it is
    c:close()
    assert.same({ nil, "closed", "" }, { c:receive(0) })
    a:close()
  end)

  it("connect4 and connect6: connect limited to a family", function()
    local server = assert(socket.bind("127.0.0.1", 0))
    local _, port = server:getsockname()
    local c = assert(socket.connect4("127.0.0.1", port))
    assert.equal("inet4", c:getfamily())
    c:close()
    assert.is_nil(socket.connect6("127.0.0.1", port)) -- no IPv6 address there
    server:close()
  end)

  it("choose: calls the function a name selects, 'default' without a name", function()
    local f = socket.choose { default = function(a, b) return "d", a, b end, x = function(a) return "x", a end }
    assert.same({ "x", 1 }, { f("x", 1) })
    assert.same({ "d", 1, 2 }, { f(1, 2) })
    assert.has_error(function() f("nope") end, "unknown key (nope)")
  end)

  it("sink, source, sinkt, sourcet and BLOCKSIZE: LTN12 over a connection", function()
    assert.equal(2048, socket.BLOCKSIZE)
    assert.is_function(socket.sinkt["keep-open"])
    assert.is_function(socket.sourcet["by-length"])
    local c, a = tcp_pair()
    c:settimeout(2); a:settimeout(2)
    local sink = socket.sink("keep-open", a)
    assert.equal(a:getfd(), sink.getfd())
    assert.is_false(sink.dirty())
    assert.equal(5, sink("hello"))
    assert.equal(1, sink(nil)) -- keeps it open
    local src = socket.source("by-length", c, 5)
    assert.equal("hello", src())
    assert.is_nil(src())
    local closing = socket.sink("close-when-done", a)
    assert(closing(string.rep("z", 3000)))
    assert.equal(1, closing(nil)) -- closes it
    local all = socket.source(c) -- "until-closed", the default
    local parts = {}
    for chunk in all do parts[#parts + 1] = chunk end
    assert.equal(string.rep("z", 3000), table.concat(parts))
    assert.equal(-1, c:getfd()) -- closed at the end
  end)

  it("options bindtodevice, error, tcp-defer-accept, tcp-fastopen, tcp-fastopen-connect", function()
    local c, a = tcp_pair()
    assert.is_nil(c:getoption("error")) -- no pending error
    assert.is_nil(socket.udp4():getoption("error"))
    assert.has_error(function() c:setoption("error", 1) end, "bad argument #1 to 'setoption' (unsupported option 'error')")
    assert.equal("", c:getoption("bindtodevice")) -- bound to no device
    local ok = c:setoption("bindtodevice", "lo") -- needs CAP_NET_RAW: may be refused
    if ok then assert.equal("lo", c:getoption("bindtodevice")) end
    assert.has_error(function() c:setoption("bindtodevice", string.rep("x", 16)) end)
    local server = socket.tcp4()
    assert.equal(1, server:setoption("tcp-defer-accept", 1))
    assert.equal(1, server:setoption("tcp-fastopen", 5))
    assert.equal(1, socket.tcp4():setoption("tcp-fastopen-connect", 1))
    c:close(); a:close(); server:close()
  end)

  it("dns.getnameinfo: host names of an address, and a service's name", function()
    local hosts = socket.dns.getnameinfo("127.0.0.1")
    assert.is_string(hosts[1])
    local h2, serv = socket.dns.getnameinfo("127.0.0.1", "22")
    assert.equal(hosts[1], h2[1])
    assert.equal("ssh", serv)
    local none, s2 = socket.dns.getnameinfo(nil, "80")
    assert.same({}, none)
    assert.equal("http", s2)
    assert.same({ nil, "host or service not provided, or not known" }, { socket.dns.getnameinfo("host.is.invalid") })
    assert.has_error(function() socket.dns.getnameinfo() end)
    local r
    cothread.spawn(function() r = socket.dns.getnameinfo("127.0.0.1") end) -- on the pool in a cothread
    cothread.run()
    assert.equal(hosts[1], r[1])
  end)

  it("shutdown's and connect's choices: luaL_checkoption's message", function()
    local c, a = tcp_pair()
    assert.has_error(function() c:shutdown("sideways") end, "bad argument #1 to 'shutdown' (invalid option 'sideways')")
    assert.error_matches(function() socket.connect("127.0.0.1", 1, nil, nil, "inet5") end, "invalid option 'inet5'", 1, true)
    c:close(); a:close()
  end)

  it("getpeername of any TCP object: nil and the system's message when not connected", function()
    local m = socket.tcp4()
    local ip, err = m:getpeername()
    assert.is_nil(ip)
    assert.is_string(err) -- ENOTCONN's text
    local c, a = tcp_pair()
    assert.equal("127.0.0.1", (c:getpeername()))
    c:close(); a:close(); m:close()
  end)
end)
