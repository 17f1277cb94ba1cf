-- A producer and a consumer sharing a queue, with a timer on the side.
--
--   lua5.4 doc/examples/producer_consumer.lua [directory holding cothread.so]
--
-- The consumer waits on the queue (the table itself is the signal) while it is
-- empty; the producer puts an item every 50 ms and notifies the queue. A timer
-- fires once after 125 ms. The transcript does not depend on the machine's speed:
-- the producer's wake times are absolute (postpone, from the time it started, just
-- before the timer), and the consumer is notified with "next", so it takes each
-- item before anything else runs.

if arg[1] then package.cpath = arg[1] .. "/?.so;" .. package.cpath end
local cothread = require "cothread"

local queue = {}                          -- items not consumed yet; also the signal

local function producer()
  local t0 = cothread.time()              -- monotonic seconds
  for i = 1, 3 do
    cothread.postpone(t0 + 0.05 * i)      -- sleep until 50 ms * i after t0
    queue[#queue + 1] = "item " .. i
    print("producer: put item " .. i)
    cothread.notify(queue, "next")        -- the consumer, if waiting, runs next
  end
  queue[#queue + 1] = false               -- end of the stream
  cothread.notify(queue, "next")
end

local function consumer()
  while true do
    while #queue == 0 do
      print("consumer: waiting")
      cothread.wait(queue)                -- until someone notifies the queue
    end
    local item = table.remove(queue, 1)
    if not item then return "consumed everything" end
    print("consumer: got " .. item)
  end
end

local function timer()
  cothread.delay(0.125)                   -- 125 ms from now
  print("timer: 125 ms passed")
end

local c = coroutine.create(consumer)
cothread.trap[c] = function(co, ok, ...)  -- called when the consumer ends or fails
  print("consumer ended:", ok, ...)
  return "bye"                            -- what the consumer produces
end

cothread.schedule(coroutine.create(producer))
cothread.schedule(coroutine.create(timer))
cothread.schedule(c)
print("run returned:", cothread.run())    -- returns when nothing is ready or postponed
