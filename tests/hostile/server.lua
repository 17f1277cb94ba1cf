-- The echo server the hostile-client test (hostile.c) attacks: the manual's
-- echo server (doc/lua.md), each line sent back upper-cased, running until killed.
--
--   lua5.4 server.lua DIR-OF-cothread.so STYLE
--
-- STYLE names the acceptor:
--   assert  `assert(server:accept())`, as the manual writes it;
--   retry   on an error, try again at once (a loop that would spin if accept
--           failed at once at the descriptor limit).
-- Prints "port N" once listening.
package.cpath = arg[1] .. "/?.so;" .. package.cpath
local cothread = require "cothread"
local socket = require "cothread.socket"
local style = arg[2] or "assert"

local server = assert(socket.bind("127.0.0.1", 0))
local _, port = server:getsockname()
io.write(("port %d\n"):format(port))
io.flush()

local function serve(client)
  client:settimeout(10)
  while true do
    local line = client:receive("*l")
    if not line then return client:close() end
    if not client:send(line:upper() .. "\n") then return client:close() end
  end
end

cothread.schedule(coroutine.create(function()
  while true do
    local client
    if style == "assert" then
      client = assert(server:accept())
    else
      client = server:accept()
    end
    if client then cothread.schedule(coroutine.create(function() serve(client) end)) end
  end
end))
cothread.run()
