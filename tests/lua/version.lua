-- Loads the cothread Lua module with a stock lua5.4 and checks its version fields.
--
--   lua5.4 tests/lua/version.lua <directory holding cothread.so> [expected version]
--
-- Prints "ok" and exits 0 on success; exits non-zero (with a message) otherwise.

local dir = arg[1]
if not dir or dir == "" then
  io.stderr:write("usage: lua5.4 version.lua <directory holding cothread.so> [expected version]\n")
  os.exit(2)
end
package.cpath = dir .. "/?.so;" .. package.cpath

local cothread = require "cothread"
assert(type(cothread) == "table", "require 'cothread' did not return a table")

local version = cothread.version
assert(type(version) == "string", "cothread.version is not a string: " .. tostring(version))
local major, minor, patch = version:match("^(%d+)%.(%d+)%.(%d+)")
assert(major, "cothread.version is not MAJOR.MINOR.PATCH: " .. version)

for name, expected in pairs({ version_major = major, version_minor = minor,
                              version_patch = patch }) do
  local value = cothread[name]
  assert(math.type(value) == "integer",
         "cothread." .. name .. " is not an integer: " .. tostring(value))
  assert(value == tonumber(expected),
         ("cothread.%s = %d, but version is %s"):format(name, value, version))
end
local expected_version = arg[2]
if expected_version then
  assert(version == expected_version,
         ("cothread.version = %s, expected %s"):format(version, expected_version))
end

print("cothread " .. version)
print("ok")
