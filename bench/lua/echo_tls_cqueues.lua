-- TLS echo server on cqueues, for bench/lua/tls_echo.sh:
--   lua5.4 bench/lua/echo_tls_cqueues.lua CPATH_DIR SIZE CERT KEY
-- As echo_cqueues.lua, over TLS: listens on 127.0.0.1 (any free port),
-- prints the port, and serves each connection in a coroutine of its own
-- (cqueue:wrap): the handshake (`starttls` with a luaossl server context
-- holding CERT and KEY, PEM files), then read what is there (up to 64 KiB)
-- and write it back unbuffered, until the client closes. Runs until killed.
-- (CPATH_DIR and SIZE are unused.)

local cqueues = require "cqueues"
local socket = require "cqueues.socket"
local context = require "openssl.ssl.context"
local x509 = require "openssl.x509"
local pkey = require "openssl.pkey"

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

local ctx = context.new("TLS", true)
assert(ctx:setCertificate(x509.new(slurp(arg[3]))))
assert(ctx:setPrivateKey(pkey.new(slurp(arg[4]))))

local loop = cqueues.new()
local server = socket.listen { host = "127.0.0.1", port = 0, backlog = 4096 }
assert(server:listen())
io.write(select(3, server:localname()), "\n")
io.stdout:flush()

local function serve(client)
  client:setmode("b", "bn")       -- binary, no output buffering
  if client:starttls(ctx) then
    while true do
      local data = client:read(-65536)
      if not data or not client:write(data) then break end
    end
  end
  client:close()
end

loop:wrap(function()
  for client in server:clients { nodelay = true } do
    loop:wrap(function() serve(client) end)
  end
end)
assert(loop:loop())
