-- Loaded before each of cosock's test scripts (LUA_INIT): maps the modules a
-- cosock program requires to cothread's, and changes nothing else.
--   cosock          -> cothread (the scheduler table: spawn, run, socket, channel, ...)
--   cosock.socket   -> cothread.socket
--   cosock.channel  -> cothread.channel
--   cosock.ssl      -> cothread.ssl (LuaSec's surface)
--   cosock.ssl.https -> cothread.ssl.https
--   socket          -> cothread.socket (LuaSocket's surface)
local map = {
  ["cosock"] = "cothread",
  ["cosock.socket"] = "cothread.socket",
  ["cosock.channel"] = "cothread.channel",
  ["cosock.ssl"] = "cothread.ssl",
  ["cosock.ssl.https"] = "cothread.ssl.https",
  ["socket"] = "cothread.socket",
}
for from, to in pairs(map) do
  package.preload[from] = function() return require(to) end
end
