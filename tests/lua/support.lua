-- Helpers shared by the specs: load with
--   local support = dofile(debug.getinfo(1, "S").source:match("^@(.*[/\\])") .. "support.lua")
local cothread = require "cothread"

local support = {}

-- The ready queue of scheduler S, head to tail, as a list.
function support.ready(S)
  local list = {}
  for co in S.iready() do list[#list + 1] = co end
  return list
end

-- A new scheduler whose clock is `clock.now` (from `start`, default 0); its idle
-- records each wake time in `clock.idled` and jumps the clock to it.
function support.clocked(start)
  local S = cothread.new()
  local clock = { now = start or 0, idled = {} }
  S.time = function() return clock.now end
  S.idle = function(t)
    clock.idled[#clock.idled + 1] = t
    clock.now = t
  end
  return S, clock
end

return support
