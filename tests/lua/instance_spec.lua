-- Instances: the module table is the default scheduler; cothread.new() makes
-- independent schedulers with their own error, trap, time and idle.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/instance_spec.lua

-- Lua 5.1 and LuaJIT have neither (their unpack is a global).
table.pack = table.pack or function(...) return { n = select("#", ...), ... } end
table.unpack = table.unpack or unpack
local cothread = require "cothread"

local functions = { "schedule", "unschedule", "scheduled", "current", "running", "iready",
                    "step", "run", "halt", "yield", "suspend", "wait", "notify", "onall",
                    "onany", "postpone", "delay", "plugin" }

describe("require 'cothread'", function()
  it("loads the module from the directory given to busted's --cpath", function()
    local dir = os.getenv("COTHREAD_LUA_DIR")
    local found = package.searchpath("cothread", package.cpath)
    assert.is_string(found)
    if dir then
      assert.equal(dir .. "/cothread.so", found)
    end
  end)

  it("returns the same table each time", function()
    assert.equal(cothread, require "cothread")
  end)

  it("returns a scheduler with the scheduler functions and fields", function()
    for _, name in ipairs(functions) do
      assert.is_function(cothread[name], name)
    end
    assert.is_function(cothread.new)
    assert.is_function(cothread.error)
    assert.is_table(cothread.trap)
    assert.is_function(cothread.time)
    assert.is_function(cothread.idle)
  end)
end)

describe("cothread.new", function()
  it("returns a new table with the same functions", function()
    local S = cothread.new()
    assert.is_table(S)
    assert.are_not.equal(cothread, S)
    for _, name in ipairs(functions) do
      assert.is_function(S[name], name)
    end
  end)

  it("gives each scheduler its own error, trap, time and idle fields", function()
    local S, T = cothread.new(), cothread.new()
    assert.is_function(S.error)
    assert.is_function(T.error)
    S.error = error
    assert.are_not.equal(S.error, T.error)
    assert.is_table(S.trap)
    assert.is_table(T.trap)
    assert.are_not.equal(S.trap, T.trap)
    assert.are_not.equal(cothread.trap, S.trap)
    assert.truthy(getmetatable(S.trap).__mode:find("k", 1, true))
    assert.is_function(S.time)
    assert.is_function(S.idle)
  end)

  it("returns a scheduler whose queues are empty", function()
    local S = cothread.new()
    assert.is_nil(S.current())
    assert.is_nil(S.running())
    assert.is_nil(S.iready()())
    assert.same({ n = 1, "x" }, table.pack(S.run("x")))
  end)
end)

describe("two schedulers side by side", function()
  local S, T
  before_each(function() S, T = cothread.new(), cothread.new() end)

  it("have separate ready queues", function()
    local log = {}
    local a = coroutine.create(function() log[#log + 1] = "a" end)
    local b = coroutine.create(function() log[#log + 1] = "b" end)
    S.schedule(a)
    T.schedule(b)
    assert.is_true(S.scheduled(a))
    assert.is_false(S.scheduled(b))
    assert.is_false(T.scheduled(a))
    assert.equal(a, S.current())
    assert.equal(b, T.current())
    S.run()
    assert.same({ "a" }, log)
    assert.equal(b, T.current())
    T.run()
    assert.same({ "a", "b" }, log)
  end)

  it("have separate signal queues", function()
    local log = {}
    local sig = "shared value"
    S.schedule(coroutine.create(function() log[#log + 1] = "s" end), "wait", sig)
    T.schedule(coroutine.create(function() log[#log + 1] = "t" end), "wait", sig)
    assert.is_true(S.notify(sig))
    assert.is_false(S.notify(sig))
    S.run()
    T.run()
    assert.same({ "s" }, log)
    assert.is_true(T.notify(sig))
    T.run()
    assert.same({ "s", "t" }, log)
  end)

  it("use their own error handler", function()
    local handled = {}
    local default = T.error
    S.error = function(e) handled[#handled + 1] = "S " .. e end
    S.schedule(coroutine.create(function() error("in S", 0) end))
    T.schedule(coroutine.create(function() error("in T", 0) end))
    S.step()
    local ok, err = pcall(T.step)
    assert.is_false(ok)
    assert.equal("in T", err:match("^[^\n]*"))
    assert.same({ "S in S" }, handled)
    assert.equal(default, T.error)
    assert.are_not.equal(S.error, cothread.error)
  end)

  it("use their own trap table", function()
    local trapped = {}
    local a = coroutine.create(function() return "a" end)
    local b = coroutine.create(function() return "b" end)
    S.trap[a] = function(co, ok, v) trapped[#trapped + 1] = "S " .. v end
    S.trap[b] = function(co, ok, v) trapped[#trapped + 1] = "S " .. v end
    S.schedule(a)
    T.schedule(b)
    S.step()
    assert.equal("b", T.step())
    assert.same({ "S a" }, trapped)
  end)

  it("use their own time and idle", function()
    local s_now, t_now = 0, 100
    local idled = {}
    S.time = function() return s_now end
    T.time = function() return t_now end
    S.idle = function(t) idled[#idled + 1] = "S " .. t; s_now = t end
    T.idle = function(t) idled[#idled + 1] = "T " .. t; t_now = t end
    S.schedule(coroutine.create(function() end), "delay", 1)
    T.schedule(coroutine.create(function() end), "delay", 1)
    S.run()
    T.run()
    assert.same({ "S 1", "T 101" }, idled)
  end)

  it("can be run alternately, each keeping its own order", function()
    local log = {}
    local function counter(S, name)
      return coroutine.create(function()
        for i = 1, 3 do
          log[#log + 1] = name .. i
          S.yield()
        end
      end)
    end
    S.schedule(counter(S, "s"))
    S.schedule(counter(S, "S"))
    T.schedule(counter(T, "t"))
    for _ = 1, 3 do
      S.step()
      T.step()
      S.step()
    end
    assert.same({ "s1", "t1", "S1", "s2", "t2", "S2", "s3", "t3", "S3" }, log)
  end)

  it("each report their own running cothread", function()
    local seen = {}
    local inner, outer
    inner = coroutine.create(function()
      seen.inner_T = T.running()
      seen.inner_S = S.running()
    end)
    outer = coroutine.create(function()
      seen.outer_S = S.running()
      seen.outer_T = T.running()
      T.schedule(inner)
      T.step()
      seen.after_T = T.running()
    end)
    S.schedule(outer)
    S.step()
    assert.equal(outer, seen.outer_S)
    assert.is_nil(seen.outer_T)
    assert.equal(inner, seen.inner_T)
    assert.equal(outer, seen.inner_S)
    assert.is_nil(seen.after_T)
    assert.is_nil(S.running())
    assert.is_nil(T.running())
  end)

  it("are independent of the default scheduler", function()
    local co = coroutine.create(function() end)
    S.schedule(co)
    assert.is_false(cothread.scheduled(co))
    assert.is_nil(cothread.current())
    S.run()
  end)
end)
