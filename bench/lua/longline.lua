-- What one long line costs a receiver: a cothread sends a 10 MiB line (no LF
-- until its end) over loopback to another that reads it with receive("*l"),
-- in one process; prints the process's RSS before and at its peak. With
-- MAXLINE > 0 the receiver sets the option "maxline" and drops the
-- "line too long" pieces until the line's tail comes.
--
--   lua5.4 bench/lua/longline.lua [dir holding cothread.so] [MAXLINE]

package.cpath = (arg[1] or "build/lua") .. "/?.so;" .. package.cpath
local cothread = require "cothread"
local socket = require "cothread.socket"
local maxline = tonumber(arg[2] or "0")

local function rss_kib()
  for l in io.lines("/proc/self/status") do
    local v = l:match("^VmRSS:%s+(%d+)")
    if v then return tonumber(v) end
  end
end

local server = assert(socket.bind("127.0.0.1", 0))
local _, port = server:getsockname()
assert(server:setoption("maxline", maxline))
local chunk = string.rep("x", 65536)
local before = rss_kib()
local peak, pieces = before, 0

cothread.schedule(coroutine.create(function()
  local c = assert(server:accept())
  while true do
    local line, err = c:receive()
    peak = math.max(peak, rss_kib())
    if line then break end
    assert(err == "line too long", err)
    pieces = pieces + 1
  end
  c:close()
end))
cothread.schedule(coroutine.create(function()
  local c = assert(socket.connect("127.0.0.1", port))
  for _ = 1, 160 do assert(c:send(chunk)) end
  assert(c:send("\n"))
  c:close()
end))
cothread.run()
print(("maxline %d: RSS %d KiB before, %d KiB at the peak (+%d KiB); %d times 'line too long'")
  :format(maxline, before, peak, peak - before, pieces))
