-- A TLS echo server and three clients, each in its own cothreads, on loopback.
--
--   lua5.4 doc/examples/tls_echo.lua [directory holding cothread.so]
--
-- It makes a certificate for localhost (the openssl command, in a temporary
-- folder). The server accepts connections in one cothread, wraps each in TLS
-- (cothread.ssl: LuaSec's interface) and serves it in a cothread of its own:
-- it reads lines and sends them back upper-cased until the client closes.
-- The clients trust that certificate only, and check the server's name.
-- Every TLS call suspends only the cothread that makes it.

if arg[1] then package.cpath = arg[1] .. "/?.so;" .. package.cpath end
local cothread = require "cothread"
local socket = require "cothread.socket"
local ssl = require "cothread.ssl"

local CLIENTS = 3

-- A self-signed certificate for localhost in a new temporary folder.
local p = assert(io.popen("mktemp -d"))
local dir = assert(p:read("*l"))
p:close()
local crt, key = dir .. "/server.crt", dir .. "/server.key"
local made = os.execute(("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1"
  .. " -nodes -days 1 -subj /CN=localhost -addext subjectAltName=DNS:localhost"
  .. " -keyout %s -out %s 2>/dev/null"):format(key, crt))
assert(made == true or made == 0, "openssl could not make a certificate")

-- LuaSec's parameters; a context made once serves every connection.
local server_ctx = assert(ssl.newcontext { mode = "server", protocol = "any",
  certificate = crt, key = key })
local client_ctx = assert(ssl.newcontext { mode = "client", protocol = "any",
  verify = "peer", cafile = crt, dane = true })   -- dane: lets setdane check the name

local server = assert(socket.bind("127.0.0.1", 0))   -- port 0: any free port
local host, port = server:getsockname()
print(("server: listening on %s:%d"):format(host, port))

local function serve(client)                         -- one cothread per client
  local conn = assert(ssl.wrap(client, server_ctx))
  conn:settimeout(10)                                -- seconds, per wait
  if not conn:dohandshake() then return conn:close() end
  while true do
    local line = conn:receive("*l")
    if not line then                                 -- "closed" (or "wantread": timeout)
      conn:close()
      return
    end
    assert(conn:send(line:upper() .. "\n"))
  end
end

cothread.spawn(function()                            -- the acceptor
  for _ = 1, CLIENTS do
    local client = assert(server:accept())
    cothread.spawn(function() serve(client) end)
  end
  server:close()
end)

local function talk(name)                            -- a client
  local conn = assert(ssl.wrap(assert(socket.connect("127.0.0.1", port)), client_ctx))
  conn:settimeout(10)
  conn:sni("localhost")
  assert(conn:setdane("localhost"))                  -- the name the certificate must hold
  assert(conn:dohandshake())
  for i = 1, 2 do
    assert(conn:send(("%s says hello %d over %s\n"):format(name, i, conn:info("protocol"))))
    print(("%s: got %q"):format(name, assert(conn:receive("*l"))))
    socket.sleep(0.01 * #name)                       -- suspends this cothread only
  end
  conn:close()
end

for _, name in ipairs { "ann", "bob", "carl" } do
  cothread.spawn(function() talk(name) end)
end

cothread.run()                                       -- returns when all are done
os.execute("rm -rf '" .. dir .. "'")
print("all done")
