-- Fairness (doc/lua.md, "Fairness"): a cothread whose operations always finish
-- at once yields to the ready tail after cothread's budget of them in one
-- turn, before the next one, which then runs with nothing lost and in order.
-- Floods come from child processes, so that data is always there.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/fairness_spec.lua

local cothread = require "cothread"
local socket = require "cothread.socket"
local process = cothread.process

local here = (debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./")
local support = dofile(here .. "support.lua")
local go = support.go

local TICK = 0.05
local FLOOD = 1.0 -- seconds

-- Runs `reader(S, stop)` in a cothread while another ticks every TICK until
-- `reader` returns (it must return once stop() is true, which it becomes
-- after FLOOD seconds). Returns the largest lateness of a tick, in ticks, and
-- the number of ticks.
local function ticker_during(reader)
  local S = cothread.new()
  local t0 = S.time()
  local done, worst, ticks = false, 0, 0
  local function stop() return S.time() - t0 >= FLOOD end
  go(S, function()
    local due = S.time() + TICK
    while not done do
      S.delay(due - S.time())
      local late = (S.time() - due) / TICK
      if late > worst then worst = late end
      ticks = ticks + 1
      due = due + TICK
    end
  end)
  go(S, function()
    reader(S, stop)
    done = true
  end)
  S.run()
  -- A starved ticker also shows as too few ticks.
  assert(ticks >= FLOOD / TICK / 2, ("the ticker ticked %d times in %.1f s"):format(ticks, FLOOD))
  return worst, ticks
end

-- A child that connects to `port` and sends 64-byte lines until the
-- connection goes.
local function flooder(port)
  local src = ([[
    local c = assert(require("cothread.socket").connect("127.0.0.1", %d))
    local lines = (("x"):rep(63) .. "\n"):rep(1024)
    while c:send(lines) do end
  ]]):format(port)
  return assert(process.spawn(support.chunk_command(src), { stdout = "null" }))
end

describe("a reader whose data is always there", function()
  it("lets a 50 ms ticker run on time (TCP lines from a flooding peer)", function()
    local server = assert(socket.bind("127.0.0.1", 0))
    server:settimeout(10)
    local _, port = server:getsockname()
    local child = flooder(port)
    local lines = 0
    local worst, ticks = ticker_during(function(_, stop)
      local c = assert(server:accept())
      while not stop() do
        assert(c:receive("*l"))
        lines = lines + 1
      end
      c:close()
    end)
    server:close()
    child:kill()
    child:wait(5)
    assert.is_true(lines > 10000, "only " .. lines .. " lines read")
    assert.is_true(worst <= 2, ("a tick was %.1f ticks late (%d ticks)"):format(worst, ticks))
  end)

  it("lets a 50 ms ticker run on time (a pipe from a flooding child)", function()
    local child = assert(process.spawn({ "yes", ("y"):rep(60) }, { stdout = "pipe" }))
    local lines = 0
    local worst, ticks = ticker_during(function(_, stop)
      while not stop() do
        assert(child.stdout:read("l"))
        lines = lines + 1
      end
    end)
    child:kill()
    child.stdout:close()
    child:wait(5)
    assert.is_true(lines > 10000, "only " .. lines .. " lines read")
    assert.is_true(worst <= 2, ("a tick was %.1f ticks late (%d ticks)"):format(worst, ticks))
  end)

  it("lets a 50 ms ticker run on time (select that always finds a socket ready)", function()
    local c, a = support.tcp_pair()
    assert(a:send("x\n"))
    local selects = 0
    local worst = ticker_during(function(_, stop)
      while not stop() do
        local r = socket.select({ c }, nil, 1)
        assert(r[1] == c)
        selects = selects + 1
      end
    end)
    c:close()
    a:close()
    assert.is_true(selects > 10000, "only " .. selects .. " selects")
    assert.is_true(worst <= 2, ("a tick was %.1f ticks late"):format(worst))
  end)
end)

-- Runs `body(S)` in a cothread of a new scheduler while another one counts
-- its own turns until `body` returns; asserts that it got at least one turn
-- per two budgets of `n` calls.
local function others_run_during(n, body)
  local S = cothread.new()
  local others, done = 0, false
  go(S, function()
    body(S)
    done = true
  end)
  go(S, function()
    while not done do
      others = others + 1
      S.yield()
    end
  end)
  S.run()
  assert(others >= n / 128 / 2, "the other cothread ran " .. others .. " times")
end

describe("an operation that yields first", function()
  it("loses nothing and keeps the order (TCP, every byte, the others running between)", function()
    local c, a = support.tcp_pair()
    local N = 20000
    local parts = {}
    for i = 1, N do parts[i] = i .. "\n" end
    local got = {}
    others_run_during(N, function(S)
      go(S, function() assert(a:send(table.concat(parts))) end)
      for i = 1, N do got[i] = c:receive("*l") end
    end)
    for i = 1, N do
      if got[i] ~= tostring(i) then error(("line %d is %s"):format(i, tostring(got[i]))) end
    end
    c:close()
    a:close()
  end)

  it("loses nothing and keeps the order (a channel with values queued)", function()
    local tx, rx = cothread.channel.new()
    local N = 10000
    for i = 1, N do tx:send(i) end
    local got = {}
    others_run_during(N, function()
      for i = 1, N do got[i] = rx:receive() end
    end)
    for i = 1, N do assert(got[i] == i, "value " .. i) end
  end)

  it("unscheduled while it yields, runs when scheduled again: nothing lost", function()
    local c, a = support.tcp_pair()
    assert(a:send(("l\n"):rep(1000)))
    local S = cothread.new()
    local reader, results = nil, {}
    reader = go(S, function()
      for _ = 1, 200 do results[#results + 1] = c:receive("*l") or "failed" end
    end)
    go(S, function()
      assert.is_true(S.unschedule(reader))
    end)
    S.run()
    assert.equal(128, #results) -- its budget, then it yielded
    S.schedule(reader)
    S.run()
    assert.equal(200, #results)
    for i = 1, 200 do assert(results[i] == "l", "line " .. i) end
    a:close()
    c:close()
  end)

  it("runs in cothread.pcall too (Lua 5.1's stand-in coroutine included)", function()
    local tx, rx = cothread.channel.new()
    local N = 2000
    for i = 1, N do tx:send(i) end
    local sum, ok = 0, nil
    others_run_during(N, function(S)
      ok = S.pcall(function()
        for _ = 1, N do sum = sum + rx:receive() end
      end)
    end)
    assert.is_true(ok)
    assert.equal(N * (N + 1) / 2, sum)
  end)

  it("never happens outside cothreads: blocking calls go on", function()
    local c, a = support.tcp_pair()
    assert(a:send(("l\n"):rep(1000)))
    c:settimeout(1)
    for _ = 1, 1000 do assert.equal("l", c:receive("*l")) end
    c:close()
    a:close()
  end)
end)
