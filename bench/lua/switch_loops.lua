-- The loops of the switch benchmark, shared by bench.lua (timed) and switch.lua
-- (counted under callgrind). Each function sets up N coroutines whose body
-- yields YIELDS times and then ends, and returns a function that runs them all
-- (every switch: the YIELDS yields and the final resume of each) and checks
-- that each ended. Setup stays outside the returned function.
--
--   local loops = dofile("bench/lua/switch_loops.lua")
--   local go = loops.cothread(require "cothread", 1000, 300); go()

local create, resume = coroutine.create, coroutine.resume
local loops = {}

-- Cothreads under `run()` of a fresh scheduler, each calling `yield()`.
function loops.cothread(cothread, n, yields)
  local s = cothread.new()
  local yield = s.yield
  local done = 0
  local function body()
    for _ = 1, yields do yield() end
    done = done + 1
  end
  for _ = 1, n do s.schedule(create(body)) end
  return function()
    s.run()
    assert(done == n, "not every cothread finished")
  end
end

-- A round robin of `coroutine.resume` in Lua over coroutines calling
-- `coroutine.yield("yield")`; an ended coroutine leaves the robin.
function loops.bare(n, yields)
  local yield = coroutine.yield
  local done = 0
  local function body()
    for _ = 1, yields do yield("yield") end
    done = done + 1
  end
  local q = {}
  for i = 1, n do q[i] = create(body) end
  return function()
    local left = n
    while left > 0 do                         -- one pass = one round of the robin
      local live = 0
      for i = 1, left do
        local co = q[i]
        local ok, op = resume(co)
        if op == "yield" then                 -- keep it, in order
          live = live + 1
          q[live] = co
        elseif not ok then
          error(op)
        end                                   -- ended: dropped
      end
      for i = live + 1, left do q[i] = nil end
      left = live
    end
    assert(done == n, "not every coroutine finished")
  end
end

-- The same round robin in C (switch_floor.c): `floor.run` resumes,
-- `floor.yield` only yields. What any module yielding from C at least costs.
function loops.floor(floor, n, yields)
  local yield = floor.yield
  local done = 0
  local function body()
    for _ = 1, yields do yield() end
    done = done + 1
  end
  local q = {}
  for i = 1, n do q[i] = create(body) end
  return function()
    floor.run(q)
    assert(done == n, "not every coroutine finished")
  end
end

return loops
