-- What the fairness budget (doc/lua.md, "Fairness") costs where it costs most:
-- calls that always finish at once, each timed in a cothread (where every
-- 129th call yields to the ready tail first) against the same calls outside
-- cothreads (no budget), in one process. A second cothread is ready all along,
-- as in a server, so that each forced yield is a real switch.
--
--   (a) channel: N values queued, then received.
--   (b) lines: N short lines already buffered in a TCP socket, received with "*l".
--
-- Prints µs per call on each side, and the ratio (target: within noise of 1).
-- Best of REPS (default 5), CPU time (os.clock).
--
--   lua5.4 bench/lua/fairness.lua <directory holding cothread.so> [REPS]
--   lua5.4 bench/lua/fairness.lua build/lua

local dir = assert(arg[1], "usage: fairness.lua <dir holding cothread.so> [REPS]")
package.cpath = dir .. "/?.so;" .. package.cpath
local cothread = require "cothread"
local socket = cothread.socket
local REPS = tonumber(arg[2]) or 5
local N = 200000

-- Times `body()` in a cothread of a new scheduler beside one that yields until
-- it ends, or outside cothreads; CPU seconds.
local function timed(in_cothread, setup, body)
  local state = setup()
  collectgarbage()
  local t0 = os.clock()
  if in_cothread then
    local S, done = cothread.new(), false
    S.schedule(coroutine.create(function() body(state); done = true end))
    S.schedule(coroutine.create(function() while not done do S.yield() end end))
    S.run()
  else
    body(state)
  end
  return os.clock() - t0
end

local function best(in_cothread, setup, body)
  local b = math.huge
  for _ = 1, REPS do b = math.min(b, timed(in_cothread, setup, body)) end
  return b
end

local cases = {
  {
    name = "channel receive",
    setup = function()
      local tx, rx = cothread.channel.new()
      for i = 1, N do tx:send(i) end
      return rx
    end,
    body = function(rx) for _ = 1, N do rx:receive() end end,
  },
  {
    name = 'socket receive("*l"), buffered',
    setup = function()
      local server = assert(socket.bind("127.0.0.1", 0))
      local _, port = server:getsockname()
      local c = assert(socket.connect("127.0.0.1", port))
      local a = assert(server:accept())
      server:close()
      -- Lines written from a child of this script would race: here the
      -- sender is a blocking writer, the reader drains in between.
      return { c = c, a = a }
    end,
    body = function(p)
      local chunk = ("0123456789abcde\n"):rep(4096) -- 64 KiB: 4096 lines
      local got = 0
      while got < N do
        assert(p.a:send(chunk))
        for _ = 1, 4096 do assert(p.c:receive("*l")) end
        got = got + 4096
      end
      p.c:close()
      p.a:close()
    end,
  },
}

print(("fairness budget: %d calls per case, best of %d, %s"):format(N, REPS, _VERSION .. (jit and " / " .. jit.version or "")))
for _, case in ipairs(cases) do
  local inside = best(true, case.setup, case.body)
  local outside = best(false, case.setup, case.body)
  print(("  %-32s in a cothread %.3f us/call, outside %.3f us/call, ratio %.2f"):format(
    case.name, inside / N * 1e6, outside / N * 1e6, inside / outside))
end
