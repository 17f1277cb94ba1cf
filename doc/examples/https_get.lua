-- An HTTPS client: several requests at once, each in its own cothread, with
-- cothread.ssl.https (LuaSec's ssl.https interface, verifying the server).
--
--   lua5.4 doc/examples/https_get.lua [directory holding cothread.so] [https://host/path ...]
--
-- With URLs, it fetches them concurrently, trusting the system's CAs, and
-- prints each status and body size. Without, it makes a certificate for
-- localhost and 127.0.0.1 (the openssl command, in a temporary folder),
-- serves HTTPS with it in cothreads of the same process, and fetches from
-- that server trusting only that certificate (`cafile`); one fetch trusts
-- the system's CAs instead, and fails: verification is on by default.

if arg[1] and not arg[1]:match("^https://") then
  package.cpath = arg[1] .. "/?.so;" .. package.cpath
end
local cothread = require "cothread"
local socket = require "cothread.socket"
local ssl = require "cothread.ssl"
local https = require "cothread.ssl.https"
local ltn12 = require "ltn12"

-- ===== a server for the demonstration =====

-- A self-signed certificate for localhost and 127.0.0.1 in a new temporary
-- folder: the folder, the certificate's path, the key's path.
local function make_certificate()
  local p = assert(io.popen("mktemp -d"))
  local dir = assert(p:read("*l"))
  p:close()
  local crt, key = dir .. "/server.crt", dir .. "/server.key"
  local ok = os.execute(("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1"
    .. " -nodes -days 1 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1"
    .. " -keyout %s -out %s 2>/dev/null"):format(key, crt))
  assert(ok == true or ok == 0, "openssl could not make a certificate")
  return dir, crt, key
end

-- Answers one request on accepted socket `c`: "you asked for <path>".
local function serve(c, params)
  local conn = assert(ssl.wrap(c, params))
  conn:settimeout(10)                          -- seconds, for each wait
  if not conn:dohandshake() then return conn:close() end
  local path = (conn:receive("*l") or ""):match("^GET (%S+) HTTP") or "?"
  repeat local line = conn:receive("*l") until not line or line == ""
  local body = "you asked for " .. path .. "\n"
  conn:send(("HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"):format(#body, body))
  conn:close()
end

-- Serves HTTPS on 127.0.0.1 (a free port) until `server:close()`; returns
-- the server and its port.
local function start_server(crt, key)
  local params = { mode = "server", protocol = "any", certificate = crt, key = key }
  local server = assert(socket.bind("127.0.0.1", 0))
  local _, port = server:getsockname()
  cothread.spawn(function()
    while true do
      local c = server:accept()
      if not c then return end                 -- "closed": we are done
      cothread.spawn(function() serve(c, params) end)
    end
  end)
  return server, port
end

-- ===== main =====

-- Each fetch: a URL and the request's extra fields (LuaSec's parameters).
local fetches, server, dir = {}, nil, nil
for i = 1, #arg do
  if arg[i]:match("^https://") then fetches[#fetches + 1] = { arg[i] } end
end
if #fetches == 0 then
  local crt, key
  dir, crt, key = make_certificate()
  local port
  server, port = start_server(crt, key)
  print("server: listening on https://127.0.0.1:" .. port)
  local trust = { cafile = crt }               -- trust this certificate only
  fetches = {
    { ("https://localhost:%d/hello"):format(port), trust },
    { ("https://127.0.0.1:%d/by-address"):format(port), trust },
    { ("https://localhost:%d/system-cas"):format(port), {} },
  }
end

local results, left = {}, #fetches
for i, f in ipairs(fetches) do
  cothread.spawn(function()                    -- one cothread per fetch
    local body = {}
    local reqt = { url = f[1], sink = ltn12.sink.table(body) }
    for k, v in pairs(f[2] or {}) do reqt[k] = v end
    local ok, code, _, status = https.request(reqt)
    results[i] = ok and { status, table.concat(body) } or { nil, code }
    left = left - 1
    if left == 0 and server then server:close() end
  end)
end
cothread.run()                                 -- returns when all are done
if dir then os.execute("rm -rf '" .. dir .. "'") end

for i, f in ipairs(fetches) do
  local status, body = results[i][1], results[i][2]
  if status then
    local preview = body:sub(1, 32):gsub("\n", "\\n")
    print(('%s: %s, %d bytes "%s"'):format(f[1], status, #body, preview))
  else
    print(("%s: failed: %s"):format(f[1], body))
  end
end
print("all done")
