-- TLS echo server on cothread.ssl, for bench/lua/tls_echo.sh:
--   lua5.4 bench/lua/echo_tls_cothread.lua CPATH_DIR SIZE CERT KEY
-- As echo_cothread.lua, over TLS: listens on 127.0.0.1 (any free port),
-- prints the port, and serves each connection in a cothread of its own with
-- straight-line code: wrap the accepted socket (LuaSec's API, one server
-- context holding CERT and KEY, PEM files), the handshake, then receive a
-- message of SIZE bytes and send it back, until the client closes. Messages
-- already decrypted with it (`dirty()`) are received too and sent back in
-- one `send`. Runs until killed.

package.cpath = arg[1] .. "/?.so;" .. package.cpath
local cothread = require "cothread"
local socket = require "cothread.socket"
local ssl = require "cothread.ssl"
local size = assert(tonumber(arg[2]), "message size expected")

local ctx = assert(ssl.newcontext { mode = "server", protocol = "any", certificate = arg[3], key = arg[4] })

local server = assert(socket.bind("127.0.0.1", 0, 4096))
io.write(select(2, server:getsockname()), "\n")
io.stdout:flush()

local function echo(conn)
  while true do
    local data = conn:receive(size)
    if not data then return end
    if conn:dirty() then               -- more messages came with it: echo them at once
      local batch = { data }
      repeat batch[#batch + 1] = conn:receive(size) until not conn:dirty()
      data = table.concat(batch)
    end
    if not conn:send(data) then return end
  end
end

local function serve(client)
  client:setoption("tcp-nodelay", true)
  local conn = ssl.wrap(client, ctx)
  if not conn then return client:close() end
  if conn:dohandshake() then echo(conn) end
  conn:close()
end

cothread.schedule(coroutine.create(function()
  while true do
    local client = assert(server:accept())
    cothread.schedule(coroutine.create(function() serve(client) end))
  end
end))
cothread.run()
