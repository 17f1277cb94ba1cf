-- Loaded before LuaSocket's test/testclnt.lua (LUA_INIT) by ./run.
--
-- 1. With COTHREAD_COMPAT=cothread, `require "socket"` gives cothread.socket
--    (the run on our module); otherwise LuaSocket itself (the control run).
-- 2. testclnt.lua refuses to run unless LuaSocket was built with
--    LUASOCKET_DEBUG, and reads what such a build adds: `socket._DEBUG`, and
--    a 4th result of a client's send and receive, the seconds the call took.
--    Debian's LuaSocket is not such a build, so this shim adds both, the same
--    way to either implementation: it sets `_DEBUG` and wraps the client
--    class's send and receive to time them.
if os.getenv("COTHREAD_COMPAT") == "cothread" then
  package.preload["socket"] = function() return require "cothread.socket" end
end

local socket = require "socket"
socket._DEBUG = true

-- The client class's methods: those of a connected object on loopback.
local server = assert(socket.bind("127.0.0.1", 0))
local _, port = server:getsockname()
local client = assert(socket.connect("127.0.0.1", port))
local methods = getmetatable(client).__index
client:close()
server:close()

local gettime = socket.gettime
for _, name in ipairs { "send", "receive" } do
  local f = methods[name]
  methods[name] = function(...)
    local start = gettime()
    local a, b, c = f(...)
    return a, b, c, gettime() - start
  end
end
