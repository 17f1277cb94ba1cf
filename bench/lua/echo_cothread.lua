-- TCP echo server on cothread, for bench/lua/echo.sh and idle.sh:
--   lua5.4 bench/lua/echo_cothread.lua CPATH_DIR SIZE
-- Listens on 127.0.0.1 (any free port), prints the port, and serves each
-- connection in a cothread of its own with straight-line code: receive a
-- message of SIZE bytes, send it back, until the client closes. Messages that
-- came with it (already buffered: `dirty()`) are received too and sent back
-- in one `send`, as the other servers write back whatever one read got.
-- Runs until killed.

package.cpath = arg[1] .. "/?.so;" .. package.cpath
local cothread = require "cothread"
local socket = require "cothread.socket"
local size = assert(tonumber(arg[2]), "message size expected")

local server = assert(socket.bind("127.0.0.1", 0, 4096))
io.write(select(2, server:getsockname()), "\n")
io.stdout:flush()

local function serve(client)
  client:setoption("tcp-nodelay", true)
  while true do
    local data = client:receive(size)
    if not data then break end
    if client:dirty() then             -- more messages came with it: echo them at once
      local batch = { data }
      repeat batch[#batch + 1] = client:receive(size) until not client:dirty()
      data = table.concat(batch)
    end
    if not client:send(data) then break end
  end
  client:close()
end

cothread.schedule(coroutine.create(function()
  while true do
    local client = assert(server:accept())
    cothread.schedule(coroutine.create(function() serve(client) end))
  end
end))
cothread.run()
