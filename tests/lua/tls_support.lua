-- Certificates for the TLS specs, made at test time with the openssl command
-- (nothing secret is committed): a CA, leaves it signs, and a self-signed
-- "rogue" server. EC P-256 keys (quick, also under valgrind), valid 2 days.
--
--   local certs = dofile(here .. "tls_support.lua").make()   -- certs.dir, certs.path(name)
--   certs.remove()
--   local port, stop = tls_support.https_server(S, certs.server())
--   local kit = tls_support.kit(function() return certs end, support.go)

local M = {}

local function run(cmd)
  local ok, how, code = os.execute(cmd .. " >/dev/null 2>&1")
  -- Lua 5.1 and LuaJIT's os.execute answers the status alone.
  if ok == true or ok == 0 then return end
  error("command failed (" .. tostring(how) .. " " .. tostring(code or ok) .. "): " .. cmd, 2)
end

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

local EC = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"

-- The leaves the CA signs: name, subject CN, subjectAltName.
local LEAVES = {
  { "server", "localhost", "DNS:localhost,IP:127.0.0.1" },
  { "other", "other.test", "DNS:other.test" },
  { "client", "cothread client", "DNS:client.test" },
}

function M.make()
  local p = assert(io.popen("mktemp -d"))
  local dir = assert(p:read("*l"))
  p:close()
  local function path(name) return dir .. "/" .. name end
  local cd = "cd '" .. dir .. "' && "
  run(cd .. "openssl req -x509 " .. EC .. " -keyout ca.key -out ca.crt -days 2"
    .. " -subj '/CN=cothread test CA' -addext basicConstraints=critical,CA:TRUE"
    .. " -addext keyUsage=critical,keyCertSign,cRLSign")
  for _, leaf in ipairs(LEAVES) do
    local name, cn, san = leaf[1], leaf[2], leaf[3]
    write(path(name .. ".ext"), "subjectAltName=" .. san
      .. "\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\n")
    run(cd .. "openssl req -new " .. EC .. " -keyout " .. name .. ".key -out " .. name .. ".csr"
      .. " -subj '/CN=" .. cn .. "'")
    run(cd .. "openssl x509 -req -in " .. name .. ".csr -CA ca.crt -CAkey ca.key -CAcreateserial"
      .. " -out " .. name .. ".crt -days 2 -extfile " .. name .. ".ext")
  end
  run(cd .. "openssl req -x509 " .. EC .. " -keyout rogue.key -out rogue.crt -days 2"
    .. " -subj '/CN=localhost' -addext subjectAltName=DNS:localhost,IP:127.0.0.1")
  local certs = { dir = dir, path = path }

  -- LuaSec parameters: a server with leaf `name` (default "server"), a client
  -- that trusts the CA; `extra` fields are added.
  function certs.server(name, extra)
    name = name or "server"
    local t = { mode = "server", protocol = "any", key = path(name .. ".key"),
      certificate = path(name .. ".crt"), cafile = path("ca.crt"), verify = "none",
      options = "all" }
    for k, v in pairs(extra or {}) do t[k] = v end
    return t
  end
  function certs.client(extra)
    local t = { mode = "client", protocol = "any", cafile = path("ca.crt"), verify = "peer",
      options = "all" }
    for k, v in pairs(extra or {}) do t[k] = v end
    return t
  end
  function certs.remove()
    run("rm -rf '" .. dir .. "'")
  end
  return certs
end

-- The specs' helpers over a certificate set that `get()` answers (made in the
-- spec's setup): listener, serve, client, pair. `go` is support.go.
function M.kit(get, go)
  local socket = require "cothread.socket"
  local ssl = require "cothread.ssl"
  local cothread = require "cothread"
  local kit = {}

  -- A listening socket on 127.0.0.1 and its port.
  function kit.listener()
    local server = assert(socket.bind("127.0.0.1", 0))
    local _, port = server:getsockname()
    return server, port
  end

  -- In a cothread of S: accepts one client on `server`, wraps it with `params`
  -- and handshakes; calls f(conn, handshake results...).
  function kit.serve(S, server, params, f)
    go(S, function()
      server:settimeout(5)
      local c = assert(server:accept())
      local t = assert(ssl.wrap(c, params))
      t:settimeout(5)
      f(t, t:dohandshake())
    end)
  end

  -- A client connection to `port`, wrapped with `params` (not handshaken).
  function kit.client(port, params)
    local c = assert(socket.connect("127.0.0.1", port))
    local t = assert(ssl.wrap(c, params or get().client()))
    t:settimeout(5)
    return t
  end

  -- In a cothread of S: a handshaken pair (client, server side).
  function kit.pair(S, server_params, client_params)
    local server, port = kit.listener()
    local tx, rx = cothread.channel.new()
    go(S, function()
      server:settimeout(5)
      local c = assert(server:accept())
      local t = assert(ssl.wrap(c, server_params or get().server()))
      t:settimeout(5)
      assert(t:dohandshake())
      tx:send(t)
    end)
    local t = kit.client(port, client_params)
    assert(t:dohandshake())
    local s = rx:receive()
    server:close()
    -- TLS 1.3 servers send session tickets after the handshake: read them, so
    -- that a readable descriptor means data.
    t:settimeout(0)
    local data, err, partial = t:receive()
    assert(data == nil and err == "wantread" and partial == "", "after the tickets: " .. tostring(err))
    t:settimeout(5)
    return t, s
  end

  return kit
end

-- Answers one HTTPS request on accepted socket `c`, then closes: the body
-- is "<method> <path> <request body>".
local function answer(ssl, c, params)
  local t = assert(ssl.wrap(c, params))
  t:settimeout(5)
  if not t:dohandshake() then return t:close() end
  local method, path = (t:receive("*l") or ""):match("^(%u+) (%S+) HTTP/1%.1$")
  if not method then return t:close() end -- the client gave up (a failed check)
  local length = 0
  repeat
    local line = t:receive("*l")
    local n = line and line:lower():match("^content%-length:%s*(%d+)")
    if n then length = tonumber(n) end
  until not line or line == ""
  local body = ("%s %s %s"):format(method, path, length > 0 and t:receive(length) or "")
  t:send(("HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"):format(#body, body))
  t:close()
end

-- Serves HTTPS on 127.0.0.1 in cothreads of scheduler S, with LuaSec's
-- server `params`, until stopped. Returns the port and the stop function.
function M.https_server(S, params)
  local socket, ssl = require "cothread.socket", require "cothread.ssl"
  local server = assert(socket.bind("127.0.0.1", 0))
  local _, port = server:getsockname()
  S.schedule(coroutine.create(function()
    while true do
      local c = server:accept()
      if not c then return end -- stopped
      S.schedule(coroutine.create(function() answer(ssl, c, params) end))
    end
  end))
  return port, function() server:close() end
end

return M
