-- Loopback TCP ping-pong between two cothreads of one process, for counting
-- the module's instructions per round trip under callgrind:
--   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
--     lua5.4 bench/lua/pingpong.lua build/lua [N]
-- N round trips (default 6000) of a 4 KiB receive(n)/send, then N of a
-- 62-byte line (receive("*l"), its CR dropped). Run it with N = 0 too and
-- divide the difference of the two counts by 2 N.
package.cpath = arg[1] .. "/?.so;" .. package.cpath
local cothread = require "cothread"
local socket = require "cothread.socket"
local n, size = tonumber(arg[2] or 6000), 4096
local server = assert(socket.bind("127.0.0.1", 0))
local _, port = server:getsockname()
local msg = ("x"):rep(size - 1) .. "\n"
local line = ("y"):rep(60) .. "\r\n"
cothread.schedule(coroutine.create(function()
  local c = assert(server:accept())
  for _ = 1, n do assert(c:send(assert(c:receive(size)))) end
  for _ = 1, n do assert(c:send(assert(c:receive("*l")) .. "\n")) end
  c:close()
end))
cothread.schedule(coroutine.create(function()
  local c = assert(socket.connect("127.0.0.1", port))
  c:setoption("tcp-nodelay", true)
  for _ = 1, n do assert(c:send(msg)); assert(c:receive(size)) end
  for _ = 1, n do assert(c:send(line)); assert(c:receive("*l")) end
  c:close()
end))
cothread.run()
