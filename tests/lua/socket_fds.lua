-- Run by socket_spec.lua in a child process whose descriptor limit was raised
-- (`ulimit -n 4096`): sockets whose descriptors are above 1024 (where select(2)
-- stops) accept, connect, send, receive and select on the event loop.
--
--   lua5.4 tests/lua/socket_fds.lua <dir holding cothread.so>

if arg[1] then package.cpath = arg[1] .. "/?.so;" .. package.cpath end
local cothread = require "cothread"
local socket = require "cothread.socket"

local dummies = {}
while true do -- fill the descriptors up to 1100
  local t = assert(socket.tcp4())
  dummies[#dummies + 1] = t
  if t:getfd() >= 1100 then break end
end

local server = assert(socket.bind("127.0.0.1", 0))
local _, port = server:getsockname()
assert(server:getfd() > 1024, "server fd " .. server:getfd())
local got, selected
cothread.schedule(coroutine.create(function()
  local r = socket.select({ server }, nil, 5)
  selected = r[1] == server
  local c = assert(server:accept())
  assert(c:getfd() > 1024)
  c:settimeout(5)
  local line = assert(c:receive())
  assert(c:send(line:upper() .. "\n"))
  c:close()
end))
cothread.schedule(coroutine.create(function()
  local c = assert(socket.connect("127.0.0.1", port))
  assert(c:getfd() > 1024)
  c:settimeout(5)
  assert(c:send("above\n"))
  got = c:receive()
  c:close()
end))
cothread.run()
assert(selected, "select did not report the server")
assert(got == "ABOVE", tostring(got))
server:close()
for _, t in ipairs(dummies) do t:close() end
print("fds above 1024 ok")
