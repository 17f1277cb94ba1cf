-- Combined signals nested deep: made, waited on, notified, left and collected at a
-- million levels without overflowing the native stack (issue 17: ~65 000 levels
-- segfaulted). Not run under valgrind: a million levels take seconds natively.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/nesting_spec.lua

local cothread = require "cothread"

local LEVELS = 1000000

local function collect()
  -- LuaJIT's compiled traces keep the objects they ran on: flushed first.
  if jit then jit.flush() end
  collectgarbage("collect")
  collectgarbage("collect")
end

-- LEVELS combined signals of scheduler S over `base`, each the only part of the
-- next (onany and onall alternating); returns the top.
local function chain(S, base)
  local sig = base
  for i = 1, LEVELS do
    sig = i % 2 == 1 and S.onany(sig) or S.onall(sig)
  end
  return sig
end

describe("a deeply nested combined signal", function()
  it("is waited on and fired: the reproducer of issue 17", function()
    local sig = "base"
    for _ = 1, 100000 do sig = cothread.onany(sig) end
    local woke = false
    cothread.schedule(coroutine.create(function()
      cothread.wait(sig)
      woke = true
    end))
    cothread.run()
    assert.is_false(woke)
    assert.is_true(cothread.notify("base"))
    cothread.run()
    assert.is_true(woke)
  end)

  it("of a million levels is armed, left, armed again, fired and collected", function()
    local S = cothread.new()
    local base = {}
    local log = {}
    local before = collectgarbage("count")
    ;(function()
      local top = chain(S, base)
      local leaver = coroutine.create(function() S.wait(top) log[#log + 1] = "left" end)
      S.schedule(leaver)
      S.run() -- waits: every level is armed
      assert.is_true(S.unschedule(leaver)) -- disarms every level
      assert.is_false(S.notify(base), "nothing armed counts it")
      S.schedule(coroutine.create(function() S.wait(top) log[#log + 1] = "woke" end))
      S.run()
    end)()
    collect() -- the waiter holds the chain
    assert.same({}, log)
    assert.is_true(S.notify(base))
    S.run()
    assert.same({ "woke" }, log)
    collect() -- frees the million signals in the core, outermost first
    S.run()
    assert.is_true(collectgarbage("count") < before + 1024, "the chain's Lua memory came back")
  end)

  it("of a million levels goes with its scheduler while armed", function()
    local refs = setmetatable({}, { __mode = "v" })
    ;(function()
      local S = cothread.new()
      refs.S = S
      local top = chain(S, {})
      S.schedule(coroutine.create(function() S.wait(top) end))
      S.run()
    end)()
    collect()
    assert.is_nil(refs.S)
  end)
end)
