-- cothread.dns: LuaSocket's name resolution, on the thread pool in cothreads.
-- Only localhost, numeric addresses and the reserved .invalid domain.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/dns_spec.lua

local cothread = require "cothread"
local socket = require "cothread.socket"
local dns = require "cothread.dns"

local support = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "support.lua")
local go = support.go

local function contains(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end

local LOOPBACK = { ["127.0.0.1"] = true, ["::1"] = true }

describe("the module", function()
  it("is require 'cothread.dns', socket.dns and the dns field of every scheduler", function()
    assert.equal(dns, socket.dns)
    assert.equal(dns, cothread.dns)
    assert.equal(dns, cothread.new().dns)
    for _, name in ipairs { "toip", "tohostname", "getaddrinfo", "gethostname" } do
      assert.is_function(dns[name], name)
    end
  end)
end)

describe("outside cothreads (resolving in the calling thread)", function()
  it("toip gives an address of localhost and the resolved table", function()
    local ip, resolved = dns.toip("localhost")
    assert.is_true(LOOPBACK[ip], tostring(ip))
    assert.is_string(resolved.name)
    assert.same({}, resolved.alias)
    assert.is_true(contains(resolved.ip, ip))
    assert.equal("127.0.0.1", (dns.toip("127.0.0.1")))
  end)

  it("tohostname gives the name of an address", function()
    local name, resolved = dns.tohostname("127.0.0.1")
    assert.is_string(name)
    assert.equal(name, resolved.name)
    assert.same({ "127.0.0.1" }, resolved.ip)
    local name2 = dns.tohostname("localhost") -- a name: its canonical name
    assert.is_string(name2)
  end)

  it("getaddrinfo lists the addresses with their families", function()
    local list = assert(dns.getaddrinfo("localhost"))
    assert.is_true(#list >= 1)
    for _, a in ipairs(list) do
      assert.is_true(a.family == "inet" or a.family == "inet6")
      assert.is_true(LOOPBACK[a.addr], a.addr)
    end
    assert.same({ { family = "inet6", addr = "::1" } }, dns.getaddrinfo("::1"))
  end)

  it("gethostname gives this machine's name", function()
    local name = dns.gethostname()
    assert.is_string(name)
    assert.is_true(#name > 0)
  end)

  it("returns nil, message for names that do not resolve", function()
    local r = { dns.toip("nonexistent.invalid") }
    assert.same({ nil, "host not found" }, r)
    r = { dns.tohostname("nonexistent.invalid") }
    assert.is_nil(r[1])
    assert.is_string(r[2])
    r = { dns.getaddrinfo("nonexistent.invalid") }
    assert.is_nil(r[1])
    assert.is_string(r[2])
    r = { dns.toip("") }
    assert.is_nil(r[1])
  end)

  it("raises for wrong types", function()
    assert.error_matches(function() dns.toip() end, "bad argument #1 to 'toip'")
    assert.error_matches(function() dns.tohostname({}) end, "string expected")
    assert.error_matches(function() dns.getaddrinfo(nil) end, "string expected")
  end)
end)

describe("in a cothread", function()
  it("waits on the thread pool while other cothreads tick", function()
    local S = cothread.new()
    local ticks, before, after, r = 0, nil, nil, nil
    go(S, function()
      before = ticks
      r = { dns.toip("localhost") }
      after = ticks
    end)
    go(S, function()
      for _ = 1, 5 do
        ticks = ticks + 1
        socket.sleep(0.01)
      end
    end)
    S.run()
    assert.is_true(LOOPBACK[r[1]])
    assert.is_table(r[2])
    assert.is_true(after > before, "the lookup suspended only its cothread")
  end)

  it("gives every function's results, and failures as nil, message", function()
    local S = cothread.new()
    local r = {}
    go(S, function()
      r.toip = { dns.toip("localhost") }
      r.name = { dns.tohostname("127.0.0.1") }
      r.list = { dns.getaddrinfo("localhost") }
      r.bad = { dns.toip("nonexistent.invalid") }
      r.badlist = { dns.getaddrinfo("nonexistent.invalid") }
    end)
    S.run()
    assert.same({ dns.toip("localhost") }, r.toip)
    assert.same({ dns.tohostname("127.0.0.1") }, r.name)
    assert.same({ dns.getaddrinfo("localhost") }, r.list)
    assert.same({ nil, "host not found" }, r.bad)
    assert.is_nil(r.badlist[1])
    assert.is_string(r.badlist[2])
  end)

  it("runs many lookups of several cothreads at once", function()
    local S = cothread.new()
    local done = 0
    for _ = 1, 20 do
      go(S, function()
        for _ = 1, 5 do assert(dns.getaddrinfo("localhost")) end
        done = done + 1
      end)
    end
    S.run()
    assert.equal(20, done)
  end)

  it("taken out while waiting, is never resumed by the late completion", function()
    local S = cothread.new()
    local resumed, r = 0, nil
    local waiter = go(S, function()
      resumed = resumed + 1
      r = { dns.toip("localhost") }
      resumed = resumed + 1
    end)
    go(S, function()
      assert.is_true(S.scheduled(waiter))
      assert.is_true(S.unschedule(waiter)) -- it waits for its lookup
    end)
    S.run() -- returns: nothing waits any more
    socket.sleep(0.05) -- the lookup completes meanwhile
    S.run()
    assert.equal(1, resumed)
    S.schedule(waiter)
    S.run()
    assert.equal(2, resumed)
    assert.same({ nil, "cancelled" }, r)
  end)

  it("inside protect, with try", function()
    local S = cothread.new()
    local r
    go(S, function()
      r = { socket.protect(function()
        local ip = socket.try(dns.toip("localhost"))
        socket.try(dns.toip("nonexistent.invalid"))
        return ip
      end)() }
    end)
    S.run()
    assert.same({ nil, "host not found" }, r)
  end)
end)
