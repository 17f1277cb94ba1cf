-- cothread.ssl: LuaSec's TLS on the waiting engine (see tls.rs).
--
-- Run once per Lua state with `core` (tls.rs's private functions) and the
-- metatable of our connections; fills its `__index` and returns the module.
-- LuaSec's connection never waits (timeout 0): a call that would block
-- answers "wantread" or "wantwrite", and `operate` below waits for that
-- direction on the engine and calls again. That loop is the only place a
-- TLS call is retried.

local core, meta = ...

local ok, luasec = pcall(require, "ssl")
if not ok or type(luasec) ~= "table" or type(luasec.wrap) ~= "function" then
  error("cothread.ssl needs LuaSec: install it (Debian: apt-get install lua-sec;"
    .. " LuaRocks: luarocks install luasec)\n" .. tostring(luasec), 0)
end
core.ignore_sigpipe()

-- LuaSec's connection methods: its class's `__index` (in the registry, or
-- on a connection made only to read it when the debug library is absent).
local function luasec_methods()
  local reg = debug and debug.getregistry and debug.getregistry()["SSL:Connection"]
  if type(reg) == "table" and type(reg.__index) == "table" then
    return reg.__index
  end
  local sslcore = require "ssl.core"
  local conn = sslcore.create(luasec.newcontext({ mode = "client", protocol = "any" }))
  local idx = getmetatable(conn).__index
  conn:close()
  return idx
end
local methods = luasec_methods()

local begin, wait, turn, setdirty, conn_of = core.begin, core.wait, core.turn, core.setdirty, core.conn
local READ, WRITE = core.READ, core.WRITE
local WANT = { wantread = READ, wantwrite = WRITE }
local hs, recv, snd, dirty, close = methods.dohandshake, methods.receive, methods.send, methods.dirty, methods.close

local HS, RECV, SEND = 1, 2, 3
local ALL = { ["*a"] = true, a = true }

-- The results of a failed operation: `b` is what it kept (receive: the
-- partial data; send: the index of the next byte to send).
local function fail(kind, err, b)
  if kind == HS then return false, err end
  if kind == RECV then return nil, err, b or "" end
  return nil, err, (b or 1) - 1
end

-- One TLS operation, to its end: LuaSec's call; on a want, a wait for its
-- direction (a renegotiation or a key update may ask a receive to write,
-- or a send to read), then the call again with the progress kept. Data
-- LuaSec already decrypted is taken once without waiting.
local function operate(self, kind, a, b, c)
  -- Counts against the cothread's budget (yields first when it is spent).
  local turned, why = turn()
  if not turned then return fail(kind, why, b) end
  local conn, d = begin(self)
  if not conn then return fail(kind, "closed", b) end
  local again, start = false, kind == RECV and b and #tostring(b) or 0
  while true do
    local r1, r2, r3
    if kind == HS then
      r1, r2 = hs(conn)
    elseif kind == RECV then
      r1, r2, r3 = recv(conn, a, b)
    else
      r1, r2, r3 = snd(conn, a, b, c)
    end
    local dt = dirty(conn)
    setdirty(self, dt)
    local dir = not r1 and WANT[r2]
    if not dir then
      -- "*a" ends well at the close if it took anything, as LuaSec's
      -- one blocking call would (ours may be split by waits).
      if r2 == "closed" and kind == RECV and r3 and #r3 > start and ALL[a] then return r3 end
      return r1, r2, r3
    end
    if kind == RECV then b = r3 elseif kind == SEND then b = r3 + 1 end
    if dir == READ and dt and not again then
      again = true
    else
      again = false
      local waited, why = wait(self, dir, d)
      if not waited then return fail(kind, why == "timeout" and r2 or why, b) end
    end
  end
end

local index = meta.__index

-- LuaSec's other methods act on its connection as they are (after a close
-- they give LuaSec's own "closed").
local own = { dohandshake = true, receive = true, send = true, close = true,
  settimeout = true, dirty = true, getfd = true }
for name, f in pairs(methods) do
  if not own[name] and type(f) == "function" then
    index[name] = function(self, ...) return f(conn_of(self), ...) end
  end
end

function index.dohandshake(self) return operate(self, HS) end
function index.receive(self, pattern, prefix) return operate(self, RECV, pattern, prefix) end
function index.send(self, data, i, j) return operate(self, SEND, data, i, j) end

-- Out of the engine first (waiters get "closed"), then LuaSec's close.
function index.close(self)
  local conn = core.release(self)
  if conn then close(conn) end
end
meta.__close = index.close

local M = {
  _VERSION = luasec._VERSION,
  _COPYRIGHT = luasec._COPYRIGHT,
  config = luasec.config,
  loadcertificate = luasec.loadcertificate,
  newcontext = luasec.newcontext,
}

local UNREAD = "socket has unread data: wrap it before receiving from it"

-- `ssl.wrap(sock, params_or_context)`: LuaSec's wrap of a socket that
-- answers getfd/setfd (ours gives its descriptor up), made cooperative.
function M.wrap(sock, cfg)
  local t = type(sock)
  if (t ~= "userdata" and t ~= "table") or not sock.getfd or not sock.setfd then
    error(("bad argument #1 to 'wrap' (socket expected, got %s)"):format(t), 2)
  end
  if sock.dirty and sock:dirty() then return nil, UNREAD end
  local fd = sock:getfd()
  if not fd or fd < 0 then return nil, "closed" end
  local conn, err = luasec.wrap(sock, cfg)
  if not conn then return nil, err end
  conn:settimeout(0)
  return core.new(conn, fd)
end

return M
