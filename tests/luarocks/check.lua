-- The module as `luarocks make --tree TREE` installed it: it loads from TREE and
-- schedules (two cothreads take turns, one of them sleeps). Run by scripts/test:
--
--     LUA_CPATH="$(luarocks --lua-version=5.1 --tree TREE path --lr-cpath)" lua5.1 tests/luarocks/check.lua TREE
local tree = assert(..., "usage: check.lua TREE")

-- Where `require` finds the module (package.searchpath, which Lua 5.1 lacks).
local function search(name)
  for template in package.cpath:gmatch("[^;]+") do
    local path = template:gsub("%?", name)
    local file = io.open(path)
    if file then
      file:close()
      return path
    end
  end
end
local found = search("cothread")
assert(found and found:sub(1, #tree + 1) == tree .. "/", "cothread.so is not from " .. tree .. ": " .. tostring(found))

local cothread = require "cothread"
local log = {}
cothread.schedule(coroutine.create(function()
  for i = 1, 3 do
    log[#log + 1] = "a" .. i
    cothread.yield()
  end
end))
local slept
cothread.schedule(coroutine.create(function()
  local t0 = cothread.time()
  cothread.delay(0.05)
  slept = cothread.time() - t0
  log[#log + 1] = "b"
end))
cothread.run()
local got = table.concat(log, " ")
assert(got == "a1 a2 a3 b", got)
assert(slept >= 0.049, "b slept " .. slept .. " s")
print(string.format("%s: %s: %s (b slept %.3f s)", _VERSION, found, got, slept))
