-- TCP echo server on cqueues, for bench/lua/echo.sh and idle.sh:
--   lua5.4 bench/lua/echo_cqueues.lua CPATH_DIR SIZE
-- Listens on 127.0.0.1 (any free port), prints the port, and serves each
-- connection in a coroutine of its own (cqueue:wrap) with straight-line
-- code: read what is there (up to 64 KiB), write it back unbuffered, until
-- the client closes. Runs until killed. (CPATH_DIR and SIZE are unused.)

local cqueues = require "cqueues"
local socket = require "cqueues.socket"

local loop = cqueues.new()
local server = socket.listen { host = "127.0.0.1", port = 0, backlog = 4096 }
assert(server:listen())
io.write(select(3, server:localname()), "\n")
io.stdout:flush()

local function serve(client)
  client:setmode("b", "bn")       -- binary, no output buffering
  while true do
    local data = client:read(-65536)
    if not data or not client:write(data) then break end
  end
  client:close()
end

loop:wrap(function()
  for client in server:clients { nodelay = true } do
    loop:wrap(function() serve(client) end)
  end
end)
assert(loop:loop())
