-- cothread.ssl.https: LuaSec's `ssl.https` interface (request, tcp, PORT,
-- TIMEOUT) over LuaSocket's pure-Lua HTTP client, loaded with cothread's
-- sockets (`asyncify`), and cothread.ssl. Unlike LuaSec's, it verifies the
-- server by default: its chain against the system's CAs and its name
-- against the URL's host. `verify = "none"` turns both off.
--
-- Run once per Lua state by tls.rs with the cothread.ssl module.

local ssl = ...
local cothread = require "cothread"
local socket = require "cothread.socket"
local ltn12 = require "ltn12"
local http = cothread.asyncify("socket.http")
local url = cothread.asyncify("socket.url")

local M = {
  _VERSION = ssl._VERSION,
  _COPYRIGHT = ssl._COPYRIGHT,
  PORT = 443,
  TIMEOUT = 60,
}

-- LuaSec's defaults, but verifying. The CAs are the system's (Debian's
-- ca-certificates, or OpenSSL's variables) unless the request names its own.
local DEFAULTS = {
  protocol = "any",
  options = { "all", "no_sslv2", "no_sslv3", "no_tlsv1" },
  verify = "peer",
}
local SYSTEM_CAS = {
  cafile = os.getenv("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt",
  capath = os.getenv("SSL_CERT_DIR") or "/etc/ssl/certs",
}

local NO_DANE = "cothread.ssl.https checks host names with LuaSec's DANE support,"
  .. " which this LuaSec lacks: use verify = \"none\" to connect unchecked"
local MISMATCH = "certificate verify failed: host name mismatch"

-- Does LuaSec's `verify` (a string or a list) ask to check the peer?
local function verifies(verify)
  if type(verify) ~= "table" then return verify == "peer" end
  for _, v in ipairs(verify) do
    if v == "peer" then return true end
  end
  return false
end

-- An IPv4 or IPv6 literal: no SNI, and checked against iPAddress names.
local function is_ip(host)
  return host:match("^%d+%.%d+%.%d+%.%d+$") ~= nil or host:find(":", 1, true) ~= nil
end

-- Is `ip` one of the iPAddress names of the peer's certificate?
local function names_ip(conn, ip)
  local cert = conn:getpeercertificate()
  local san = cert and cert:extensions()["2.5.29.17"]
  for _, name in ipairs(san and san.iPAddress or {}) do
    if name:lower() == ip:lower() then return true end
  end
  return false
end

-- The TLS parameters of a request: a copy of its table (not changed) with
-- the defaults; client mode always.
local function tls_params(reqt)
  local cfg = {}
  for k, v in pairs(reqt or {}) do cfg[k] = v end
  for k, v in pairs(DEFAULTS) do
    if cfg[k] == nil then cfg[k] = v end
  end
  if cfg.cafile == nil and cfg.capath == nil then
    cfg.cafile, cfg.capath = SYSTEM_CAS.cafile, SYSTEM_CAS.capath
  end
  cfg.mode = "client"
  cfg.check = verifies(cfg.verify)
  cfg.dane = cfg.check or nil -- DANE's host check, without TLSA records
  return cfg
end

-- ===== the connection LuaSocket's http drives =====

-- A TCP socket until `connect`, then a TLS connection: its methods are
-- those of the socket it holds now (`sock`), but these two.
local Conn = {}

function Conn.__index(self, name)
  local own = Conn[name]
  if own then return own end
  local f = self.sock[name]
  if type(f) == "function" then
    return function(c, ...) return f(c.sock, ...) end
  end
end

-- As LuaSec's: the timeout is always the module's TIMEOUT.
function Conn.settimeout(self)
  return self.sock:settimeout(M.TIMEOUT)
end

-- Connects, wraps, checks the host and shakes hands. On failure it closes
-- the socket and raises (LuaSocket's `try`): http.request answers `nil, err`.
function Conn.connect(self, host, port)
  local try = socket.newtry(function() self.sock:close() end)
  try(self.sock:connect(host, port))
  local cfg = self.cfg
  local conn = try(ssl.wrap(self.sock, cfg))
  self.sock = conn
  conn:settimeout(M.TIMEOUT)
  local ip = is_ip(host)
  if not ip then conn:sni(host) end
  if cfg.check and not ip then
    if not conn.setdane then try(nil, NO_DANE) end
    try(conn:setdane(host), "cannot check the host name " .. host)
  end
  try(conn:dohandshake())
  if cfg.check and ip then try(names_ip(conn, host), MISMATCH) end
  return 1
end

-- `https.tcp([params])`: LuaSocket's `create` function for a request's TLS
-- connections (`params` as LuaSec's, with these defaults).
function M.tcp(params)
  local cfg = tls_params(params)
  return function()
    local sock, err = socket.tcp()
    if not sock then return nil, err end
    return setmetatable({ sock = sock, cfg = cfg }, Conn)
  end
end

-- ===== request =====

-- The URL with the module's PORT when it names none.
local function with_port(u)
  return url.build(url.parse(u, { port = M.PORT }))
end

-- `https.request(url [, body])`: the body, code, headers, status line (a
-- POST of the form-encoded `body` when given). `https.request(reqt)`:
-- LuaSocket's request table plus LuaSec's parameters; 1, code, headers,
-- status. `nil, err` on failure.
function M.request(reqt, body)
  local parts
  local req = {}
  if type(reqt) == "string" then
    parts = {}
    req.url, req.method, req.sink = reqt, body and "POST" or "GET", ltn12.sink.table(parts)
    if body then
      req.source = ltn12.source.string(body)
      req.headers = {
        ["content-length"] = #body,
        ["content-type"] = "application/x-www-form-urlencoded",
      }
    end
  else
    for k, v in pairs(reqt) do req[k] = v end
  end
  if http.PROXY or req.proxy then return nil, "proxy not supported" end
  if req.redirect then return nil, "redirect not supported" end
  if req.create then return nil, "create function not permitted" end
  req.url = with_port(req.url)
  req.create = M.tcp(req)
  local r, code, headers, status = http.request(req)
  if r and parts then return table.concat(parts), code, headers, status end
  return r, code, headers, status
end

return M
