-- Run by socket_perf_spec.lua in a child process whose descriptor limit was
-- raised: an echo server in cothreads with N connections from clients in the
-- same process, each of which echoed one line and now keeps its connection
-- open; the server's cothreads all wait in receive. Prints the CPU time the
-- process used over S seconds of that idleness (os.clock: every thread).
--
--   lua5.4 tests/lua/socket_idle.lua <dir holding cothread.so> N S

if arg[1] then package.cpath = arg[1] .. "/?.so;" .. package.cpath end
local cothread = require "cothread"
local socket = require "cothread.socket"
local N, S = assert(tonumber(arg[2])), assert(tonumber(arg[3]))

local server = assert(socket.bind("127.0.0.1", 0, N))
local _, port = server:getsockname()

local function go(f) cothread.schedule(coroutine.create(f)) end

go(function() -- the server: a cothread per connection
  for _ = 1, N do
    local c = assert(server:accept())
    go(function()
      while true do
        local line = c:receive()
        if not line then break end
        assert(c:send(line .. "\n"))
      end
      c:close()
    end)
  end
  server:close()
end)

local clients, echoed = {}, 0
go(function() -- the clients, then the measurement
  for i = 1, N do
    local c = assert(socket.connect("127.0.0.1", port))
    c:settimeout(10)
    clients[i] = c
    go(function()
      assert(c:send("hello " .. i .. "\n"))
      assert(c:receive() == "hello " .. i)
      echoed = echoed + 1
    end)
  end
  while echoed < N do socket.sleep(0.01) end
  socket.sleep(0.2)
  local c0, t0 = os.clock(), cothread.time()
  socket.sleep(S) -- nothing happens meanwhile
  local cpu, wall = os.clock() - c0, cothread.time() - t0
  print(("%d idle connections: CPU %.1f ms over %.2f s"):format(N, cpu * 1e3, wall))
  for _, c in ipairs(clients) do c:close() end -- the server's cothreads end
end)

cothread.run()
