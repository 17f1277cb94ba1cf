-- What getmetatable shows of the module's objects: every field of the real
-- metatable but __gc (the metatable's __metatable is that copy). Lua code
-- thus cannot finalize an object by hand, say from another object's
-- finalizer while a method of the module is reading it.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/metatable_spec.lua

local cothread = require "cothread"
local socket = require "cothread.socket"
local channel = require "cothread.channel"
local support = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "support.lua")

-- One object of each kind, with a closer for after the test.
local function objects()
  local list = {}
  local function add(name, obj, close) list[#list + 1] = { name = name, obj = obj, close = close } end
  local master = socket.tcp()
  add("tcp master", master, function() master:close() end)
  local server = assert(socket.bind("127.0.0.1", 0))
  add("tcp server", server, function() server:close() end)
  local udp = socket.udp()
  add("udp", udp, function() udp:close() end)
  local path = os.tmpname()
  local file = assert(cothread.file.open(path, "w"))
  add("file", file, function() file:close(); os.remove(path) end)
  local tx, rx = channel.new()
  add("sender", tx)
  add("receiver", rx)
  local promise, future = cothread.promise()
  add("promise", promise)
  add("future", future)
  local proc = assert(cothread.process.spawn { "true" })
  add("process", proc, function()
    cothread.schedule(coroutine.create(function() proc:wait() end))
    cothread.run()
  end)
  return list
end

describe("getmetatable on the module's objects", function()
  it("shows every field of the real metatable but __gc", function()
    for _, o in ipairs(objects()) do
      local shown, real = getmetatable(o.obj), debug.getmetatable(o.obj)
      assert.is_table(shown, o.name)
      assert.is_function(real.__gc, o.name)
      assert.is_nil(shown.__gc, o.name)
      assert.is_not.equal(shown, real)
      local count = 0
      for k, v in pairs(real) do
        if k ~= "__gc" and k ~= "__metatable" then
          assert.equal(v, shown[k], o.name .. "." .. tostring(k))
          count = count + 1
        end
      end
      assert.is_true(count >= 2, o.name) -- __name and the methods at least
      assert.equal(real.__name, shown.__name)
      if o.close then o.close() end
    end
  end)

  it("shares the methods table, so a method added there is every object's", function()
    local a, b = socket.tcp(), socket.tcp()
    local methods = getmetatable(a).__index
    assert.equal(methods, debug.getmetatable(a).__index)
    methods.answer = function() return 42 end
    assert.equal(42, b:answer())
    methods.answer = nil
    a:close()
    b:close()
  end)

  it("gives another object's finalizer no __gc to call", function()
    local s = socket.tcp4()
    local fd = s:getfd()
    local seen
    support.on_gc(function()
      seen = { pcall(function() getmetatable(s).__gc(s) end) }
    end)
    collectgarbage()
    collectgarbage()
    assert.is_false(seen[1])
    -- Lua's words: "a nil value (field '__gc')" from 5.3, "field '__gc' (a nil value)" before.
    assert.matches("attempt to call .*nil value", seen[2])
    assert.equal(fd, s:getfd(), "still open and usable")
    s:close()
  end)

  it("leaves the debug library a finalizer that runs once", function()
    -- The debug library reaches the real metatable (as for any C library);
    -- a finalized object is then refused, and the collector's own call does
    -- nothing more.
    local t = socket.tcp4()
    assert.is_true(t:getfd() >= 0)
    debug.getmetatable(t).__gc(t)
    assert.error_matches(function() t:getfd() end, "tcp{any} expected, got userdata")
    assert.error_matches(function() t:close() end, "tcp{any} expected")
    debug.getmetatable(t).__gc(t)
    t = nil
    collectgarbage()
  end)
end)
