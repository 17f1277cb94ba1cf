-- cothread.ssl.https: LuaSec's ssl.https over cothread.ssl, verifying by
-- default. The server is ours (tls_support.https_server), in cothreads of
-- the same process on 127.0.0.1, with certificates made at test time.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/https_spec.lua

local cothread = require "cothread"
local ltn12 = require "ltn12"

local here = (debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./")
local support = dofile(here .. "support.lua")
local tls_support = dofile(here .. "tls_support.lua")

-- cothread.ssl keeps, for the Lua state, the LuaSec it was made with; busted
-- unloads what a spec file loaded, so the specs after this one would find
-- another LuaSec in package.loaded. `expose` keeps this file's loads.
local https
expose("cothread.ssl.https", function()
  https = require "cothread.ssl.https"
end)
local go = support.go

local LUA = os.getenv("COTHREAD_LUA") or "lua5.4"
local DIR = os.getenv("COTHREAD_LUA_DIR") or "build/lua"

local certs
setup(function() certs = tls_support.make() end)
teardown(function() certs.remove() end)

-- Runs request(port) in a cothread while a server with `params` (default:
-- the CA's "server" leaf) answers; returns request's results as a list.
local function fetch(request, params)
  local S = cothread.new()
  local port, stop = tls_support.https_server(S, params or certs.server())
  local got
  go(S, function()
    got = { request(port) }
    stop()
  end)
  S.run()
  return got
end

-- A table-form request of `url` (with PORT replaced), its body collected;
-- `extra` fields are added. Returns the results and the body.
local function fetch_table(url, extra, params)
  local parts = {}
  local got = fetch(function(port)
    local reqt = { url = url:gsub("PORT", port), sink = ltn12.sink.table(parts) }
    for k, v in pairs(extra or {}) do reqt[k] = v end
    return https.request(reqt)
  end, params)
  return got, table.concat(parts)
end

describe("cothread.ssl.https", function()
  it("has LuaSec's names and defaults", function()
    assert.is_function(https.request)
    assert.is_function(https.tcp)
    assert.equal(443, https.PORT)
    assert.equal(60, https.TIMEOUT)
    assert.equal(require("ssl")._VERSION, https._VERSION)
    assert.equal(https, require "cothread.ssl.https")
  end)

  it("GETs with the table form, trusting the given CA", function()
    local got, body = fetch_table("https://localhost:PORT/get", { cafile = certs.path("ca.crt") })
    assert.equal(1, got[1])
    assert.equal(200, got[2])
    assert.equal("HTTP/1.1 200 OK", got[4])
    assert.equal("GET /get ", body)
    assert.equal(tostring(#body), got[3]["content-length"])
  end)

  it("POSTs with the table form", function()
    local got, body = fetch_table("https://localhost:PORT/post", {
      cafile = certs.path("ca.crt"),
      method = "POST",
      source = ltn12.source.string("a=1&b=2"),
      headers = { ["content-length"] = 7 },
    })
    assert.same({ 1, 200 }, { got[1], got[2] })
    assert.equal("POST /post a=1&b=2", body)
  end)

  it("fails on a server the system's CAs do not trust (the string form)", function()
    local got = fetch(function(port) return https.request("https://localhost:" .. port .. "/") end)
    assert.same({ nil, "certificate verify failed" }, got)
  end)

  it("fails on a server whose certificate the given CA did not sign", function()
    local got = fetch_table("https://localhost:PORT/", { cafile = certs.path("ca.crt") },
      certs.server("rogue"))
    assert.same({ nil, "certificate verify failed" }, got)
  end)

  it("fails on a certificate for another host name", function()
    local got = fetch_table("https://localhost:PORT/", { cafile = certs.path("ca.crt") },
      certs.server("other"))
    assert.same({ nil, "certificate verify failed" }, got)
  end)

  it("checks an IP host against the certificate's IP addresses", function()
    local ok, body = fetch_table("https://127.0.0.1:PORT/ip", { cafile = certs.path("ca.crt") })
    assert.same({ 1, 200 }, { ok[1], ok[2] })
    assert.equal("GET /ip ", body)
    -- "other" names other.test only: no IP address.
    local got = fetch_table("https://127.0.0.1:PORT/ip", { cafile = certs.path("ca.crt") },
      certs.server("other"))
    assert.same({ nil, "certificate verify failed: host name mismatch" }, got)
  end)

  it("connects unchecked with verify = \"none\"", function()
    local got, body = fetch_table("https://localhost:PORT/none", { verify = "none" },
      certs.server("rogue"))
    assert.same({ 1, 200 }, { got[1], got[2] })
    assert.equal("GET /none ", body)
  end)

  it("refuses what LuaSec's refuses", function()
    local url = "https://localhost:1/"
    assert.same({ nil, "redirect not supported" }, { https.request { url = url, redirect = true } })
    assert.same({ nil, "proxy not supported" }, { https.request { url = url, proxy = "http://p:8080" } })
    assert.same({ nil, "create function not permitted" },
      { https.request { url = url, create = function() end } })
  end)

  it("leaves the request table as it was", function()
    local reqt = { url = "https://localhost:PORT/" }
    local sent
    local got = fetch(function(port)
      reqt.url = reqt.url:gsub("PORT", port)
      sent = reqt.url
      reqt.cafile = certs.path("ca.crt")
      reqt.sink = ltn12.sink.null()
      return https.request(reqt)
    end)
    assert.equal(200, got[2])
    assert.is_nil(reqt.create)
    assert.is_nil(reqt.verify)
    -- Not rewritten with LuaSec's default port (a substring test would
    -- also match a random port such as 44379).
    assert.equal(sent, reqt.url)
  end)

  it("is what asyncify gives for ssl.https, so socket.http's https is checked too", function()
    assert.equal(https, cothread.asyncify("ssl.https"))
    local http = cothread.asyncify("socket.http")
    local got = fetch(function(port) return http.request("https://localhost:" .. port .. "/") end)
    assert.same({ nil, "certificate verify failed" }, got)
  end)

  it("GETs and POSTs with the string form, trusting SSL_CERT_FILE's CAs", function()
    -- The CA file is read from the environment: a child process, with its
    -- own server.
    local src = ([[
      package.cpath = %q .. package.cpath
      local cothread = require "cothread"
      local https = require "cothread.ssl.https"
      local tls_support = dofile(%q)
      local params = { mode = "server", protocol = "any", key = %q, certificate = %q }
      local port, stop = tls_support.https_server(cothread, params)
      cothread.spawn(function()
        local url = "https://localhost:" .. port .. "/s"
        local get = { https.request(url) }
        local post = { https.request(url, "x=1") }
        io.write(get[1], "|", get[2], "|", get[4], "|", post[1], "|", post[2], "\n")
        stop()
      end)
      cothread.run()
    ]]):format(DIR .. "/?.so;", here .. "tls_support.lua", certs.path("server.key"),
      certs.path("server.crt"))
    local cmd = ("SSL_CERT_FILE=%q %q -e %q 2>&1"):format(certs.path("ca.crt"), LUA, src)
    local p = assert(io.popen(cmd))
    local out = p:read("*a")
    p:close()
    assert.equal("GET /s |200|HTTP/1.1 200 OK|POST /s x=1|200\n", out)
  end)
end)
