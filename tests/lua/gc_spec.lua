-- Memory: registered cothreads are kept alive by their scheduler, unregistered ones are
-- not; signal values are referenced only while waited on; finished cothreads leave
-- nothing behind.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/gc_spec.lua
--
-- Objects are created inside helper functions that return only weak references, so
-- that no stack slot of the test keeps them alive.

local cothread = require "cothread"
local support = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "support.lua")

-- Full collections until memory stops falling: Lua 5.1 and 5.2 give back a
-- grown string table by halves, one full collection each.
local function collect()
  collectgarbage("collect")
  local last
  repeat
    last = collectgarbage("count")
    collectgarbage("collect")
  until collectgarbage("count") >= last
end

local function weak()
  return setmetatable({}, { __mode = "kv" })
end

describe("a registered cothread", function()
  local S
  before_each(function() S = cothread.new() end)

  it("waiting on a signal is kept alive and still runs when notified", function()
    local refs = weak()
    local log = {}
    local sig = {}
    ;(function()
      local co = coroutine.create(function() log[#log + 1] = "ran" end)
      refs.co = co
      S.schedule(co, "wait", sig)
    end)()
    collect()
    assert.is_not_nil(refs.co)
    assert.is_true(S.notify(sig))
    S.run()
    assert.same({ "ran" }, log)
  end)

  it("waiting by the wait yield operation is kept alive and resumes when notified", function()
    local refs = weak()
    local log = {}
    local sig = {}
    ;(function()
      local co = coroutine.create(function()
        local v = S.wait(sig)
        log[#log + 1] = v
      end)
      refs.co = co
      S.schedule(co)
    end)()
    S.run()
    collect()
    assert.is_not_nil(refs.co)
    S.notify(sig)
    S.run("value")
    assert.same({ "value" }, log)
  end)

  it("in the ready queue is kept alive", function()
    local refs = weak()
    local log = {}
    ;(function()
      local co = coroutine.create(function() log[#log + 1] = "ran" end)
      refs.co = co
      S.schedule(co)
    end)()
    collect()
    assert.is_not_nil(refs.co)
    S.run()
    assert.same({ "ran" }, log)
  end)

  it("in the postponed queue is kept alive", function()
    local now = 0
    S.time = function() return now end
    S.idle = function(t) now = t end
    local refs = weak()
    local log = {}
    ;(function()
      local co = coroutine.create(function() log[#log + 1] = "ran" end)
      refs.co = co
      S.schedule(co, "postpone", 5)
    end)()
    collect()
    assert.is_not_nil(refs.co)
    S.run()
    assert.same({ "ran" }, log)
  end)

  it("waiting on a combined signal is kept alive", function()
    local refs = weak()
    local log = {}
    local a, b = {}, {}
    ;(function()
      local co = coroutine.create(function() log[#log + 1] = "ran" end)
      refs.co = co
      S.schedule(co, "wait", S.onall(a, b))
    end)()
    collect()
    assert.is_not_nil(refs.co)
    S.notify(a)
    collect()
    S.notify(b)
    S.run()
    assert.same({ "ran" }, log)
  end)
end)

describe("an unregistered cothread", function()
  local S
  before_each(function() S = cothread.new() end)

  it("that suspended itself is collected", function()
    local refs = weak()
    ;(function()
      local co = coroutine.create(function() S.suspend() end)
      refs.co = co
      S.schedule(co)
    end)()
    S.run()
    collect()
    assert.is_nil(refs.co)
  end)

  it("that was unscheduled while waiting is collected", function()
    local refs = weak()
    local sig = {}
    ;(function()
      local co = coroutine.create(function() S.wait(sig) end)
      refs.co = co
      S.schedule(co)
      S.run()
      S.unschedule(co)
    end)()
    collect()
    assert.is_nil(refs.co)
  end)

  it("that finished is collected, together with its trap entry", function()
    local refs = weak()
    ;(function()
      local co = coroutine.create(function() return 1 end)
      refs.co = co
      S.trap[co] = function() end
      S.schedule(co)
    end)()
    S.run()
    collect()
    assert.is_nil(refs.co)
    assert.is_nil(next(S.trap))
  end)

  it("that failed is collected", function()
    local refs = weak()
    ;(function()
      local co = coroutine.create(function() error("x") end)
      refs.co = co
      S.schedule(co)
    end)()
    pcall(S.run)
    collect()
    assert.is_nil(refs.co)
  end)

  it("that yielded something invalid is collected", function()
    local refs = weak()
    ;(function()
      local co = coroutine.create(function() coroutine.yield("not an op") end)
      refs.co = co
      S.schedule(co)
    end)()
    pcall(S.run)
    collect()
    assert.is_nil(refs.co)
  end)
end)

describe("a signal value", function()
  local S
  before_each(function() S = cothread.new() end)

  it("is referenced while cothreads wait on it and collectable after they were notified", function()
    local refs = weak()
    ;(function()
      local sig = {}
      refs.sig = sig
      S.schedule(coroutine.create(function() end), "wait", sig)
      S.schedule(coroutine.create(function() end), "wait", sig)
    end)()
    collect()
    assert.is_not_nil(refs.sig)
    ;(function() assert(S.notify(refs.sig)) end)()
    S.run()
    collect()
    assert.is_nil(refs.sig)
  end)

  it("is collectable after its waiters were moved to another signal", function()
    local refs = weak()
    local other = {}
    ;(function()
      local sig = {}
      refs.sig = sig
      S.schedule(coroutine.create(function() end), "wait", sig)
    end)()
    ;(function() assert(S.notify(refs.sig, "wait", other)) end)()
    collect()
    assert.is_nil(refs.sig)
    assert.is_true(S.notify(other))
  end)

  it("is collectable after its only waiter was unscheduled", function()
    local refs = weak()
    local co = coroutine.create(function() end)
    ;(function()
      local sig = {}
      refs.sig = sig
      S.schedule(co, "wait", sig)
    end)()
    S.unschedule(co)
    collect()
    assert.is_nil(refs.sig)
  end)

  it("that is a combined signal still wakes its waiters after the program dropped it", function()
    local log = {}
    local a = {}
    S.schedule(coroutine.create(function() log[#log + 1] = "woke" end), "wait", S.onany(a, {}))
    collect()
    assert.is_true(S.notify(a))
    S.run()
    assert.same({ "woke" }, log)
  end)

  it("that is a combined signal is collectable, with its components, once it fired", function()
    local refs = weak()
    ;(function()
      local a, b = {}, {}
      refs.a, refs.b = a, b
      local any = S.onany(a, b)
      refs.any = any
      S.schedule(coroutine.create(function() end), "wait", any)
    end)()
    collect()
    ;(function() assert(S.notify(refs.a)) end)()
    S.run()
    collect()
    assert.is_nil(refs.any)
    assert.is_nil(refs.a)
    assert.is_nil(refs.b)
  end)

  it("that is a combined signal nobody waits on is collectable", function()
    local refs = weak()
    ;(function()
      local a = {}
      refs.a = a
      refs.all = S.onall(a, {})
    end)()
    collect()
    assert.is_nil(refs.all)
    assert.is_nil(refs.a)
  end)
end)

describe("memory", function()
  local N = 100000
  local SLACK_KIB = 64

  it("returns to its baseline after " .. N .. " cothreads ran to completion together", function()
    local S = cothread.new()
    local sig = {}
    local function body()
      S.yield()
      S.wait(sig)
    end
    collect()
    local before = collectgarbage("count")
    for _ = 1, N do
      S.schedule(coroutine.create(body))
    end
    S.run()          -- every cothread yields once, then waits on sig
    S.notify(sig)
    S.run()          -- every cothread finishes
    collect()
    local after = collectgarbage("count")
    assert(S.current() == nil and not S.notify(sig), "cothreads left behind")
    assert(after - before < SLACK_KIB,
           ("memory grew by %.1f KiB after %d cothreads (before %.1f KiB, after %.1f KiB)")
             :format(after - before, N, before, after))
  end)

  it("returns to its baseline after " .. N .. " cothreads ran in batches of 100", function()
    local S = cothread.new()
    local sig = {}
    local function body()
      S.yield()
      S.wait(sig)
    end
    collect()
    local before = collectgarbage("count")
    for _ = 1, math.floor(N / 100) do
      for _ = 1, 100 do
        S.schedule(coroutine.create(body))
      end
      S.run()
      S.notify(sig)
      S.run()
    end
    collect()
    local after = collectgarbage("count")
    assert(S.current() == nil and not S.notify(sig), "cothreads left behind")
    assert(after - before < SLACK_KIB,
           ("memory grew by %.1f KiB after %d cothreads (before %.1f KiB, after %.1f KiB)")
             :format(after - before, N, before, after))
  end)

  it("returns to its baseline after " .. N .. " cothreads waited each on its own signal", function()
    local S = cothread.new()
    local function body(sig)
      S.wait(sig)
    end
    collect()
    local before = collectgarbage("count")
    local sigs = {}
    for i = 1, N do
      sigs[i] = {}
      S.schedule(coroutine.create(body))
      S.step(sigs[i])          -- the body gets its signal and waits on it
    end
    for i = 1, N do
      if not S.notify(sigs[i]) then error("nobody waited on signal " .. i) end
    end
    S.run()
    sigs = nil
    collect()
    local after = collectgarbage("count")
    assert(S.current() == nil, "cothreads left behind")
    assert(after - before < SLACK_KIB,
           ("memory grew by %.1f KiB after %d cothreads (before %.1f KiB, after %.1f KiB)")
             :format(after - before, N, before, after))
  end)

  it("returns to its baseline after " .. N .. " cothreads waited on combined signals", function()
    local S = cothread.new()
    local function body(a, b)
      S.wait(S.onall(a, b))
    end
    collect()
    local before = collectgarbage("count")
    for _ = 1, N do
      local a, b = {}, {}
      S.schedule(coroutine.create(body))
      S.step(a, b)
      S.notify(a)
      S.notify(b)
      S.step()
    end
    S.run()
    collect()
    S.step()                   -- combined signals may be freed lazily, by the next call
    collect()
    local after = collectgarbage("count")
    assert(S.current() == nil, "cothreads left behind")
    assert(after - before < SLACK_KIB,
           ("memory grew by %.1f KiB after %d cothreads (before %.1f KiB, after %.1f KiB)")
             :format(after - before, N, before, after))
  end)
end)

-- Lua 5.1 and LuaJIT have no ephemerons: a weak-keyed entry whose value refers
-- to its key is never collected. Each case runs a round of N objects three
-- times (the first two let the tables reach their size) and measures what the
-- last left after a full collection. The slack (100 bytes per object) covers
-- a table that rehashed to the next size (the collector may empty weak entries
-- mid-round) and finalizers a busy machine runs a cycle late (CI saw 384 KiB
-- for promises); a leak is 700 bytes or more per object, 7 MB per 10 000.
describe("memory after many objects (every Lua, ephemerons or not)", function()
  local N = 10000
  local SLACK_KIB = 1024
  local socket = require "cothread.socket"

  local function left_after(round, n)
    round(n)
    round(n)
    collect()
    local before = collectgarbage("count")
    round(n)
    collect()
    local grew = collectgarbage("count") - before
    assert(grew < SLACK_KIB, ("memory grew by %.1f KiB after %d objects"):format(grew, n))
  end

  it("spawned cothreads whose handles are dropped at once", function()
    local S = cothread.new()
    left_after(function(n)
      for _ = 1, n do S.spawn(function() S.yield() end) end
      S.run()
    end, N)
  end)

  it("spawned cothreads whose handles are kept until they end", function()
    local S = cothread.new()
    left_after(function(n)
      local handles = {}
      for i = 1, n do handles[i] = S.spawn(function() S.yield() end, "worker " .. i) end
      S.run()
      for i = 1, n do assert(not handles[i]:is_alive()) end
    end, N)
  end)

  it("spawned cothreads cancelled, and their metadata read", function()
    local S = cothread.new()
    left_after(function(n)
      local handles = {}
      for i = 1, n do handles[i] = S.spawn(function() S.delay(10) end, i) end
      S.step()
      for i = 1, n do
        assert(S.get_thread_metadata(handles[i]).name == i)
        handles[i]:cancel()
      end
      S.run()
    end, N)
  end)

  it("cothreads with a trap that refers to its cothread", function()
    local S = cothread.new()
    left_after(function(n)
      for _ = 1, n do
        local co = coroutine.create(function() S.yield() end)
        S.trap[co] = function() return co end
        S.schedule(co)
      end
      S.run()
    end, N)
  end)

  it("channels received from in cothreads", function()
    local S = cothread.new()
    left_after(function(n)
      for i = 1, n do
        local tx, rx = S.channel.new()
        S.spawn(function() assert(rx:receive() == i) end)
        S.spawn(function() tx:send(i) end)
      end
      S.run()
    end, N)
  end)

  it("promises awaited in cothreads", function()
    local S = cothread.new()
    left_after(function(n)
      for i = 1, n do
        local p, f = S.promise()
        S.spawn(function() assert(select(2, f:await()) == i) end)
        S.spawn(function() p:set(i) end)
      end
      S.run()
    end, N)
  end)

  it("sockets waited on in cothreads, then closed", function()
    local S = cothread.new()
    left_after(function(n)
      for _ = 1, n do
        S.spawn(function()
          local u = assert(socket.udp())
          assert(u:setsockname("127.0.0.1", 0))
          u:settimeout(0.001)
          assert(select(2, u:receive()) == "timeout")
          assert(select(3, socket.select({ u }, nil, 0.001)) == "timeout")
          u:close()
        end)
      end
      S.run()
    end, 500)
  end)
end)

describe("a scheduler collected before an older object's finalizer", function()
  it("refuses the finalizer's calls with an error instead of crashing", function()
    local result
    do
      local S2
      -- Made before S2, so finalized after it in the same collection.
      support.on_gc(function()
        result = { pcall(S2.schedule, coroutine.create(function() end)) }
      end)
      S2 = cothread.new()
      S2.schedule(coroutine.create(function() end))
    end
    collectgarbage("collect")
    collectgarbage("collect")
    assert.is_table(result)
    assert.is_false(result[1])
    assert.truthy(tostring(result[2]):find("collected", 1, true))
  end)
end)
