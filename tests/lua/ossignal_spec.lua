-- cothread.signal: waiting for operating-system signals in a cothread.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/ossignal_spec.lua

local cothread = require "cothread"
local signal = cothread.signal

local support = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "support.lua")
local go = support.go

describe("cothread.signal", function()
  it("is the signal field of a scheduler, apart from onall/onany's signals", function()
    for _, name in ipairs { "wait", "raise", "getpid" } do assert.is_function(signal[name]) end
    assert.is_function(cothread.notify)
  end)

  it("delivers SIGUSR1 sent by another process to a waiting cothread while others run", function()
    local S = cothread.new()
    local got
    -- A job on the pool first: its threads must not take the signal (and die of it).
    go(S, function() assert(S.file.stat("/")) end)
    S.run()
    go(S, function()
      S.delay(0.05)
      local p = assert(cothread.process.spawn("kill -USR1 " .. signal.getpid()))
      assert.is_true((p:wait()))
    end)
    local ticks = support.ticking(function() got = { signal.wait("SIGUSR1", 5) } end, S)
    assert.same({ "SIGUSR1", 10 }, got)
    assert.is_true(ticks >= 10, "others ran meanwhile: " .. ticks)
  end)

  it("waits for any of several signals, named or numbered, raised by another cothread", function()
    local S = cothread.new()
    local got
    go(S, function() got = { signal.wait({ "TERM", 12, "SIGHUP" }, 5) } end)
    go(S, function()
      S.delay(0.01)
      assert.is_true(signal.raise("SIGUSR2"))
    end)
    S.run()
    assert.same({ "SIGUSR2", 12 }, got)
  end)

  it("times out with nil, 'timeout'", function()
    local S = cothread.new()
    local got
    local t0 = cothread.time()
    go(S, function() got = { signal.wait("SIGUSR1", 0.05) } end)
    S.run()
    assert.same({ nil, "timeout" }, got)
    assert.is_true(cothread.time() - t0 >= 0.05)
  end)

  it("waits outside cothreads in sigtimedwait", function()
    local p = assert(cothread.process.spawn("sleep 0.05; kill -USR2 " .. signal.getpid()))
    assert.same({ "SIGUSR2", 12 }, { signal.wait("SIGUSR2", 5) })
    p:wait()
    assert.same({ nil, "timeout" }, { signal.wait(10, 0.01) })
  end)

  it("raises on misuse", function()
    assert.has_error(function() signal.wait() end)
    assert.has_error(function() signal.wait("SIGNOPE") end, "bad argument #1 to 'wait' (unknown signal name)")
    assert.has_error(function() signal.wait(0) end, "bad argument #1 to 'wait' (invalid signal number)")
    assert.has_error(function() signal.wait(65) end)
    assert.has_error(function() signal.wait("SIGKILL") end)
    assert.has_error(function() signal.wait({ "SIGSTOP" }) end)
    assert.has_error(function() signal.wait({}) end, "bad argument #1 to 'wait' (no signal to wait for)")
    assert.has_error(function() signal.wait({ {} }) end)
    assert.has_error(function() signal.wait("SIGUSR1", "soon") end)
    assert.has_error(function() signal.raise("nope") end)
  end)

  it("leaves nothing dangling when unscheduled while waiting", function()
    local S = cothread.new()
    local got
    local co = go(S, function() got = { signal.wait("SIGUSR1") } end)
    S.step()
    assert.is_true(S.scheduled(co))
    assert.is_true(S.unschedule(co))
    S.run() -- returns: nothing waits any more
    assert.is_nil(got)
    -- The handle is gone: another wait gets the next signal, the first stays cancelled.
    local other
    go(S, function() other = { signal.wait("SIGUSR1", 5) } end)
    go(S, function() S.delay(0.01); signal.raise("SIGUSR1") end)
    S.run()
    assert.same({ "SIGUSR1", 10 }, other)
    assert.is_nil(got)
    S.schedule(co)
    S.run()
    assert.same({ nil, "cancelled" }, got)
  end)
end)
