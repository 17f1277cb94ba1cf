-- An echo server and three clients, each in its own cothreads, on loopback.
--
--   lua5.4 doc/examples/echo.lua [directory holding cothread.so]
--
-- The server accepts connections in one cothread and serves each client in a
-- cothread of its own: it reads lines and sends them back upper-cased until the
-- client closes. Every socket call suspends only the cothread that makes it;
-- cothread.run() waits in the event loop in between, and returns once every
-- cothread is done.

if arg[1] then package.cpath = arg[1] .. "/?.so;" .. package.cpath end
local cothread = require "cothread"
local socket = require "cothread.socket"

local CLIENTS = 3

local server = assert(socket.bind("127.0.0.1", 0))     -- port 0: any free port
local host, port = server:getsockname()
print(("server: listening on %s:%d"):format(host, port))

local function serve(client)                           -- one cothread per client
  client:settimeout(10)                                -- seconds, per wait
  while true do
    local line, err = client:receive("*l")
    if not line then                                   -- "closed" (or "timeout")
      client:close()
      return
    end
    assert(client:send(line:upper() .. "\n"))
  end
end

cothread.schedule(coroutine.create(function()          -- the acceptor
  for _ = 1, CLIENTS do
    local client = assert(server:accept())
    cothread.schedule(coroutine.create(function() serve(client) end))
  end
  server:close()
end))

local function talk(name)                              -- a client
  local c = assert(socket.connect("127.0.0.1", port))
  for i = 1, 2 do
    assert(c:send(("%s says hello %d\n"):format(name, i)))
    local reply = assert(c:receive("*l"))
    print(("%s: got %q"):format(name, reply))
    socket.sleep(0.01 * #name)                         -- suspends this cothread only
  end
  c:close()
end

for _, name in ipairs { "ann", "bob", "carl" } do
  cothread.schedule(coroutine.create(function() talk(name) end))
end

cothread.run()                                         -- returns when all are done
print("all done")
