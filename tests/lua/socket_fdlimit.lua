-- Run by socket_spec.lua in a child process whose descriptor limit was lowered
-- (`ulimit -n 64`): with every descriptor taken and connections queued,
-- `accept` neither fails at once nor spins. It waits, trying again every
-- 100 ms, until a descriptor frees up, its timeout passes or its server closes.
--
--   lua5.4 tests/lua/socket_fdlimit.lua <dir holding cothread.so>

if arg[1] then package.cpath = arg[1] .. "/?.so;" .. package.cpath end
local cothread = require "cothread"
local socket = require "cothread.socket"

local function check(cond, ...)
  if not cond then error(table.concat({ ... }, " "), 2) end
end

local server = assert(socket.bind("127.0.0.1", 0))
local _, port = server:getsockname()
local clients = {}
for i = 1, 4 do clients[i] = assert(socket.connect("127.0.0.1", port)) end

-- The scheduler's event loop takes its descriptors when first needed: now.
cothread.schedule(coroutine.create(function() socket.sleep(0.001) end))
cothread.run()

-- Every descriptor left goes to an unused socket.
local dummies = {}
while true do
  local t, err = socket.tcp4()
  if not t then
    check(err == "Too many open files", "exhausting:", tostring(err))
    break
  end
  dummies[#dummies + 1] = t
end
check(#dummies > 0, "no descriptor to take")

-- Outside cothreads: a timeout of 0 answers "timeout" at once, as when
-- nobody connects; a timeout of 0.3 s waits that long without spinning.
server:settimeout(0)
local c, err = server:accept()
check(c == nil and err == "timeout", "settimeout(0):", tostring(err))
server:settimeout(0.3)
local t0, c0 = socket.gettime(), os.clock()
c, err = server:accept()
local waited, cpu = socket.gettime() - t0, os.clock() - c0
check(c == nil and err == "timeout", "settimeout(0.3):", tostring(err))
check(waited >= 0.29 and waited < 1, "settimeout(0.3) waited", waited)
check(cpu < 0.05, "settimeout(0.3) used CPU seconds:", cpu)
server:settimeout(-1)

-- In a cothread: an accept without timeout waits while others run, and takes
-- the connection at its next try once a descriptor frees up.
local accepted, accepted_at, freed_at, ticks = nil, nil, nil, 0
cothread.schedule(coroutine.create(function()
  accepted = assert(server:accept())
  accepted_at = socket.gettime()
end))
cothread.schedule(coroutine.create(function()
  local start = socket.gettime()
  c0 = os.clock()
  while socket.gettime() - start < 0.4 do
    ticks = ticks + 1
    socket.sleep(0.01)
  end
  cpu = os.clock() - c0
  freed_at = socket.gettime()
  table.remove(dummies):close()
end))
cothread.run()
check(accepted and accepted.class == "tcp{client}", "no connection accepted")
check(accepted_at - freed_at < 0.35, "accepted", accepted_at - freed_at, "s after a descriptor freed up")
check(ticks >= 10, "the other cothread ran only", ticks, "times")
check(cpu < 0.1, "0.4 s of waiting used CPU seconds:", cpu)

-- Out again (the new client took the descriptor): closing the server ends
-- the wait with "closed".
local got
cothread.schedule(coroutine.create(function() got = { server:accept() } end))
cothread.schedule(coroutine.create(function()
  socket.sleep(0.15)
  server:close()
end))
t0 = socket.gettime()
cothread.run()
check(got[1] == nil and got[2] == "closed", "after close:", tostring(got[2]))
check(socket.gettime() - t0 < 0.6, "closed after", socket.gettime() - t0)

print("fd limit ok")
