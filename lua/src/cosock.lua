-- cosock compatibility for one scheduler: spawn and its handles,
-- get_thread_metadata, asyncify, the `ssl` field. Run by cosock.rs with the
-- scheduler table, `waitinfo(thread)` (what the thread waits for on the
-- event loop) and `ssl_module()` (loads cothread.ssl).
local M, waitinfo, ssl_module = ...

local create, close = coroutine.create, coroutine.close
-- Lua 5.4 closes a cancelled cothread (`coroutine.close`). Older versions
-- have no such call, and no to-be-closed variables: a cancelled thread is
-- only forgotten, and its status here is "dead".
local cancelled = setmetatable({}, { __mode = "k" })
local thread_status = coroutine.status
local function status(co)
  return cancelled[co] and "dead" or thread_status(co)
end
local running = coroutine.running
local traceback = debug and debug.traceback
local socket = M.socket

local function typename(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and type(rawget(mt, "__name")) == "string" and mt.__name or type(v)
end

-- Raises "bad argument" at the caller of the function `fname`, which is
-- `depth` levels above argerror's caller (0: argerror's caller is `fname`).
local function argerror(n, fname, msg, depth)
  error(("bad argument #%d to '%s' (%s)"):format(n, fname, msg), 3 + (depth or 0))
end

-- ===== spawn and handles =====

-- A handle holds its thread in a private field. No weak table maps a handle
-- to its thread: Lua 5.1 and LuaJIT have no ephemerons, so a weak-keyed
-- entry whose value refers back to its key (thread -> handle -> thread) is
-- never collected. The map back is weak on both sides instead: it lives as
-- long as the handle and the thread both do.
local THREAD = {}                                     -- handle[THREAD]: its thread
local handle_of = setmetatable({}, { __mode = "kv" }) -- thread -> handle
local spawned = setmetatable({}, { __mode = "k" })    -- thread -> {serial, time, name}
local serial = 0

local Handle = { __name = "cothread.handle" }
Handle.__index = Handle

-- The thread of handle `h`, or nil if `h` is not a handle.
local function thread_of(h)
  return getmetatable(h) == Handle and rawget(h, THREAD) or nil
end

local function check_handle(h, fname)
  local co = thread_of(h)
  if not co then argerror(1, fname, "spawn handle expected, got " .. typename(h), 1) end
  return co
end

-- handle:cancel(): stops the cothread for good. Its pending operation is
-- dropped (a late readiness, timeout or channel value resumes nothing) and
-- its pending to-be-closed variables are closed.
function Handle.cancel(h)
  local co = check_handle(h, "cancel")
  local st = status(co)
  if st == "dead" then return end
  if st ~= "suspended" then
    error("cannot cancel a running cothread (a cothread cannot cancel itself)", 2)
  end
  M.unschedule(co)
  if not close then
    cancelled[co] = true
    return
  end
  local ok, err = close(co)
  if not ok then error(err, 0) end
end

-- handle:is_alive(): has the cothread neither ended, failed nor been cancelled?
function Handle.is_alive(h)
  return status(check_handle(h, "is_alive")) ~= "dead"
end

function Handle.__tostring(h)
  local name = rawget(h, "name")
  if name ~= nil then return tostring(name) end
  local co = thread_of(h)
  if co and status(co) ~= "dead" then return tostring(co) end
  return "dead-thread"
end

-- spawn(fn [, name]): a new cothread running fn(), at the end of the ready
-- queue; returns its handle.
function M.spawn(fn, name)
  if type(fn) ~= "function" then argerror(1, "spawn", "function expected, got " .. typename(fn)) end
  local co = create(fn)
  serial = serial + 1
  local h = setmetatable({ name = name, [THREAD] = co }, Handle)
  handle_of[co] = h
  spawned[co] = { serial, os.time(), name }
  M.schedule(co)
  return h
end

-- ===== get_thread_metadata =====

local function metadata(co)
  local recvt, sendt, timeout, woke = waitinfo(co)
  local h, born = handle_of[co], spawned[co]
  -- The handle's name (it may be renamed), or, once the handle is
  -- collected, the name it was spawned with.
  local name
  if h then name = rawget(h, "name") elseif born then name = born[3] end
  if co == running() then
    woke = os.time()
  elseif woke == nil or (born and born[2] > woke) then
    woke = born and born[2]
  end
  return {
    name = name,
    traceback = traceback and traceback(co) or nil,
    recvt = recvt,
    sendt = sendt,
    timeout = timeout,
    last_wake = woke or "unknown",
    status = status(co),
  }
end

-- get_thread_metadata(): a list with the metadata of every spawned cothread
-- not dead yet, in spawn order. get_thread_metadata(handle or thread): that
-- cothread's.
function M.get_thread_metadata(which)
  if which ~= nil then
    local co = thread_of(which) or (type(which) == "thread" and which)
    if not co then
      argerror(1, "get_thread_metadata", "spawn handle or thread expected, got " .. typename(which))
    end
    return metadata(co)
  end
  local list = {}
  for co in pairs(spawned) do
    if status(co) ~= "dead" then list[#list + 1] = co end
  end
  table.sort(list, function(a, b) return spawned[a][1] < spawned[b][1] end)
  for i, co in ipairs(list) do list[i] = metadata(co) end
  return list
end

-- ===== asyncify =====

local asyncified = {} -- name -> module
local LOADING = {}     -- asyncified[name] while its loader runs
local asyncify

-- What `require` is inside an asyncified module.
local function redirected_require(name)
  if type(name) ~= "string" then argerror(1, "require", "string expected, got " .. typename(name)) end
  return asyncify(name)
end

-- The environment of asyncified modules: the globals, but `require` redirects.
local env = setmetatable({ require = redirected_require }, { __index = _G, __newindex = _G })

-- What `require "socket"` gives in an asyncified module: cothread.socket as
-- cosock's module behaves, whose calls yield. Its functions that wait
-- (`select`, `sleep`, `connect`) raise Lua's own error where nothing can
-- yield ("attempt to yield from outside a coroutine" in the main thread),
-- instead of blocking the thread as cothread.socket's do there. Every other
-- field is cothread.socket's.
local yield = coroutine.yield
-- Lua 5.1 and 5.2 have no coroutine.isyieldable: there only the main thread is
-- taken as unable to yield (a yield that cannot be made raises Lua's error).
local isyieldable = coroutine.isyieldable or function()
  local co, main = coroutine.running()
  return co ~= nil and not main
end
local async_socket = {}
for k, v in pairs(socket) do async_socket[k] = v end
for _, k in ipairs { "select", "sleep", "connect" } do
  local f = socket[k]
  async_socket[k] = function(...)
    if not isyieldable() then yield() end -- raises Lua's error
    return f(...)
  end
end

local SOCKET = { socket = async_socket, ["cosock.socket"] = async_socket, ["cothread.socket"] = socket }
-- Modules that are cothread's own, loaded when first asked for.
local OWN = { ssl = "cothread.ssl", ["cosock.ssl"] = "cothread.ssl",
  ["ssl.https"] = "cothread.ssl.https", ["cosock.ssl.https"] = "cothread.ssl.https" }

-- asyncify(name): loads module `name` (as `require` finds it) so that its
-- `require "socket"` and `require "ssl"`, and those of the modules it
-- requires in turn, give cothread.socket (as cosock's module behaves: see
-- async_socket) and cothread.ssl. Loaded once per scheduler.
function asyncify(name)
  if SOCKET[name] then return SOCKET[name] end
  if OWN[name] then return require(OWN[name]) end
  local m = asyncified[name]
  if m == LOADING then
    error(("loop or previous error loading module '%s'"):format(name), 3)
  end
  if m ~= nil then return m end
  local loader, extra
  local msg = {}
  for _, searcher in ipairs(package.searchers or package.loaders) do -- loaders: Lua 5.1
    loader, extra = searcher(name)
    if type(loader) == "function" then break end
    if type(loader) == "string" then
      -- Lua 5.4's searchers leave out the "\n\t" that `require` puts
      -- between their messages; older ones begin with it.
      msg[#msg + 1] = loader:find("^\n") and loader or "\n\t" .. loader
    end
    loader = nil
  end
  if not loader then
    m = package.loaded[name] -- a standard library, loaded without a searcher
    if m == nil then error(("module '%s' not found:%s"):format(name, table.concat(msg)), 3) end
  else
    if setfenv then -- Lua 5.1: a chunk's globals are its environment, not _ENV
      if debug.getinfo(loader, "S").what ~= "C" then setfenv(loader, env) end
    end
    for i = 1, math.huge do
      local uv = debug.getupvalue(loader, i)
      if uv == nil then break end
      if uv == "_ENV" then
        debug.setupvalue(loader, i, env)
        break
      end
    end
    asyncified[name] = LOADING
    local ok, r = pcall(loader, name, extra)
    asyncified[name] = nil
    if not ok then error(r, 0) end
    m = r
    if m == nil then m = true end
  end
  asyncified[name] = m
  return m
end

function M.asyncify(name)
  if type(name) ~= "string" then argerror(1, "asyncify", "string expected, got " .. typename(name)) end
  return asyncify(name)
end

-- ===== ssl =====

-- `M.ssl` (cosock.ssl) is cothread.ssl, loaded on first use: LuaSec is
-- loaded only by programs that use TLS, and `require "cothread"` works
-- without it.
setmetatable(M, {
  __index = function(t, k)
    if k ~= "ssl" then return nil end
    local ssl = ssl_module()
    rawset(t, k, ssl)
    return ssl
  end,
})
