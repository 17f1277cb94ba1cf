-- The helpers of LuaSocket's `socket` module that are Lua functions over the
-- core (connect4, connect6, choose, the LTN12 sources and sinks of sockets,
-- BLOCKSIZE), for cothread.socket. Run once per Lua state by socket.rs with
-- the module table.
local M = ...

local setmetatable, type, tostring, error = setmetatable, type, tostring, error
local min = math.min

-- connect4/connect6: socket.connect limited to one family.
function M.connect4(host, port, lhost, lport)
  return M.connect(host, port, lhost, lport, "inet")
end

function M.connect6(host, port, lhost, lport)
  return M.connect(host, port, lhost, lport, "inet6")
end

-- choose(t): a function f(name, a, b) that calls t[name](a, b); a first
-- argument that is not a string means name "default" (the arguments shift).
function M.choose(t)
  return function(name, a, b)
    if type(name) ~= "string" then name, a, b = "default", name, a end
    local f = t[name or "nil"]
    if not f then error("unknown key (" .. tostring(name) .. ")", 3) end
    return f(a, b)
  end
end

-- Bytes a socket source asks `receive` for at a time.
M.BLOCKSIZE = 2048

-- A source or sink is a callable table that also answers getfd and dirty
-- for the socket it wraps, so that select can wait on it.
local function over(sock, call)
  return setmetatable({
    getfd = function() return sock:getfd() end,
    dirty = function() return sock:dirty() end,
  }, { __call = call })
end

local sinkt, sourcet = {}, {}
M.sinkt, M.sourcet = sinkt, sourcet

-- Sinks: each chunk is sent; the end of the data (a nil chunk) closes the
-- socket ("close-when-done") or leaves it open ("keep-open", the default).
sinkt["close-when-done"] = function(sock)
  return over(sock, function(_, chunk)
    if chunk == nil then
      sock:close()
      return 1
    end
    return sock:send(chunk)
  end)
end

sinkt["keep-open"] = function(sock)
  return over(sock, function(_, chunk)
    if chunk == nil then return 1 end
    return sock:send(chunk)
  end)
end

sinkt["default"] = sinkt["keep-open"]

-- Sources: "by-length" gives `length` bytes in chunks, then nil;
-- "until-closed" (the default) gives chunks until the peer closes, then
-- what was left, closes the socket, and gives nil after that.
sourcet["by-length"] = function(sock, length)
  return over(sock, function()
    if length <= 0 then return nil end
    local data, err = sock:receive(min(M.BLOCKSIZE, length))
    if err then return nil, err end
    length = length - #data
    return data
  end)
end

sourcet["until-closed"] = function(sock)
  local ended = false
  return over(sock, function()
    if ended then return nil end
    local data, err, partial = sock:receive(M.BLOCKSIZE)
    if not err then return data end
    if err ~= "closed" then return nil, err end
    sock:close()
    ended = true
    return partial
  end)
end

sourcet["default"] = sourcet["until-closed"]

M.sink = M.choose(sinkt)
M.source = M.choose(sourcet)
