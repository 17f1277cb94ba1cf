-- cosock compatibility: spawn and handles, run, get_thread_metadata, asyncify,
-- and ports of cosock's documented examples (loopback, bounded).
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/cosock_spec.lua

local cosock = require "cothread" -- as a cosock program would, with its require changed
local socket = require "cothread.socket"

local here = (debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./")
local support = dofile(here .. "support.lua")

local cost = support.cost

describe("the API", function()
  it("has cosock's fields", function()
    for _, name in ipairs { "spawn", "run", "get_thread_metadata", "asyncify" } do
      assert.is_function(cosock[name], name)
    end
    assert.equal(require "cothread.socket", cosock.socket)
    assert.equal(require "cothread.channel", cosock.channel)
    assert.is_function(cosock.channel.new)
  end)

  it("is per scheduler", function()
    local S = cosock.new()
    assert.not_equal(cosock.spawn, S.spawn)
    local ran = false
    S.spawn(function() ran = true end)
    cosock.run()
    assert.is_false(ran)
    S.run()
    assert.is_true(ran)
  end)
end)

describe("spawn", function()
  it("runs the function as a cothread, in spawn order, and returns a handle", function()
    local S = cosock.new()
    local log = {}
    local a = S.spawn(function() log[#log + 1] = "a" end, "a")
    local b = S.spawn(function() log[#log + 1] = "b" end)
    assert.equal("a", a.name)
    assert.is_nil(b.name)
    assert.is_true(a:is_alive())
    S.run()
    assert.same({ "a", "b" }, log)
    assert.is_false(a:is_alive())
    assert.is_false(b:is_alive())
  end)

  it("gives handles cosock's tostring", function()
    local S = cosock.new()
    local t = {}
    local nameless = S.spawn(function() socket.sleep(60) end)
    local named = S.spawn(function() socket.sleep(60) end, "named")
    local number = S.spawn(function() socket.sleep(60) end, 1)
    local tabled = S.spawn(function() socket.sleep(60) end, t)
    S.spawn(function()
      assert.matches("^thread: 0x", tostring(nameless))
      nameless:cancel()
      assert.equal("dead-thread", tostring(nameless))
      assert.equal("named", tostring(named))
      named:cancel()
      assert.equal("named", tostring(named))
      assert.equal("1", tostring(number))
      number:cancel()
      assert.equal(tostring(t), tostring(tabled))
      tabled:cancel()
    end)
    local _, wall = cost(S.run)
    assert.is_true(wall < 5)
  end)

  it("cancels cothreads sleeping, receiving on a channel, or in a socket call", function()
    local S = cosock.new()
    local control_tx, control_rx = S.channel.new()
    local server = assert(socket.bind("127.0.0.1", 0))
    local after = {}
    local sleeping = S.spawn(function()
      control_tx:send(true)
      socket.sleep(math.maxinteger or 2 ^ 53) -- no integers before Lua 5.3
      after[#after + 1] = "sleep"
    end, "sleep")
    local _, handle_rx = S.channel.new()
    local receiving = S.spawn(function()
      control_tx:send(true)
      handle_rx:receive()
      after[#after + 1] = "rx"
    end, "rx")
    local accepting = S.spawn(function()
      control_tx:send(true)
      server:accept()
      after[#after + 1] = "accept"
    end, "socket")
    local handles = { sleeping, receiving, accepting }
    S.spawn(function()
      for _ = 1, #handles do assert(control_rx:receive()) end
      for _, h in ipairs(handles) do
        assert.is_true(h:is_alive(), h.name)
        h:cancel()
        assert.is_false(h:is_alive(), h.name)
        h:cancel() -- again: nothing
      end
    end, "killer")
    local cpu, wall = cost(S.run)
    assert.same({}, after)
    assert.is_true(wall < 1 and cpu < 0.5)
    -- Nothing dangles: a connection now resumes nobody.
    local c = assert(socket.connect("127.0.0.1", (select(2, server:getsockname()))))
    S.run()
    assert.same({}, after)
    c:close()
    server:close()
  end)

  it("closes the pending to-be-closed variables of a cancelled cothread", function()
    local S = cosock.new()
    local closed = false
    local body = support.tbc([[
      local socket, closed = ...
      return function()
        local _ <close> = setmetatable({}, { __close = closed })
        socket.sleep(60)
      end
    ]], socket, function() closed = true end)
    -- Before Lua 5.4 there are none to close: the cancelled cothread is dead all the same.
    local h = S.spawn(body or function() socket.sleep(60) end)
    S.step()
    h:cancel()
    assert.equal(support.has.close, closed)
    assert.is_false(h:is_alive())
  end)

  it("blames the caller's line for a bad handle", function()
    local h = cosock.spawn(function() end)
    for _, m in ipairs { "cancel", "is_alive" } do
      local line = debug.getinfo(1, "l").currentline + 1
      local ok, err = pcall(function() local r = h[m]({}) return r end)
      assert.is_false(ok)
      assert.matches("cosock_spec%.lua:%d+: bad argument #1 to '" .. m .. "' %(spawn handle expected, got table%)", err)
      assert.matches(":" .. line .. ":", err, nil, true)
    end
    cosock.run()
  end)

  it("raises when a cothread cancels itself", function()
    local S = cosock.new()
    local handle, ok, err
    handle = S.spawn(function()
      assert.is_true(handle:is_alive())
      ok, err = pcall(handle.cancel, handle)
    end)
    S.run()
    assert.is_false(ok)
    assert.matches("cannot cancel a running cothread", err)
  end)

  it("raises for bad arguments", function()
    local S = cosock.new()
    assert.has_error(function() S.spawn() end, "bad argument #1 to 'spawn' (function expected, got nil)")
    assert.has_error(function() S.spawn("f") end, "bad argument #1 to 'spawn' (function expected, got string)")
    local h = S.spawn(function() end)
    assert.has_error(function() h.cancel({}) end, "bad argument #1 to 'cancel' (spawn handle expected, got table)")
    assert.has_error(function() h.is_alive(1) end, "bad argument #1 to 'is_alive' (spawn handle expected, got number)")
    S.run()
  end)
end)

describe("run", function()
  it("returns once every spawned cothread is done", function()
    local S = cosock.new()
    local done = 0
    for i = 1, 5 do
      S.spawn(function()
        socket.sleep(0.01 * i)
        done = done + 1
      end)
    end
    S.run()
    assert.equal(5, done)
  end)

  it("re-raises a cothread's error (a string with its traceback), and goes on when called again", function()
    local S = cosock.new()
    local e = setmetatable({}, { __tostring = function() return "an error object" end })
    local later = false
    S.spawn(function() error("boom") end)
    S.spawn(function() socket.sleep(0.01); error(e) end)
    S.spawn(function() socket.sleep(0.02); later = true end)
    local ok, err = pcall(S.run)
    assert.is_false(ok)
    assert.matches("^[^\n]*cosock_spec.lua:%d+: boom\nstack traceback:\n", err)
    ok, err = pcall(S.run)
    assert.is_false(ok)
    assert.equal(e, err)
    S.run()
    assert.is_true(later)
  end)
end)

describe("get_thread_metadata", function()
  it("describes every live spawned cothread, as cosock does", function()
    local S = cosock.new()
    local server = assert(socket.bind("127.0.0.1", 0))
    local _, port = server:getsockname()
    local info
    local sleeper = S.spawn(function() socket.sleep(5) end, "sleeper")
    S.spawn(function() server:accept() end, "acceptor")
    S.spawn(function() end) -- ended before the capture
    S.spawn(function()
      socket.sleep(0.02)
      info = S.get_thread_metadata()
      sleeper:cancel()
      local c = assert(socket.connect("127.0.0.1", port))
      c:close()
    end, "capture")
    local t0 = os.time()
    S.run()
    server:close()
    assert.equal(3, #info)
    local by = {}
    for _, m in ipairs(info) do by[m.name] = m end
    assert.same({ "sleeper", "acceptor", "capture" }, { info[1].name, info[2].name, info[3].name })
    assert.equal("suspended", by.sleeper.status)
    assert.equal("running", by.capture.status)
    assert.same({ 0, 0 }, { by.sleeper.recvt, by.sleeper.sendt })
    assert.same({ 1, 0 }, { by.acceptor.recvt, by.acceptor.sendt })
    assert.is_nil(by.acceptor.timeout)
    assert.is_true(by.sleeper.timeout > 4 and by.sleeper.timeout <= 5)
    for _, m in ipairs(info) do
      assert.is_number(m.last_wake)
      assert.is_true(math.abs(m.last_wake - t0) <= 2)
      assert.is_string(m.traceback)
    end
  end)

  it("counts the sockets a cothread waits on to send and to receive", function()
    local S = cosock.new()
    local server = assert(socket.bind("127.0.0.1", 0))
    local _, port = server:getsockname()
    local tx, rx = S.channel.new()
    local seen
    local waiter = S.spawn(function()
      local c = assert(socket.connect("127.0.0.1", port))
      socket.select({ c, rx }, { c, c }, 1) -- writable at once: returns
      socket.select({ c, rx }, nil, 1)
      c:close()
    end, "waiter")
    S.spawn(function()
      local a = assert(server:accept())
      socket.sleep(0.01)
      seen = S.get_thread_metadata(waiter)
      assert.equal("running", S.get_thread_metadata(coroutine.running()).status)
      tx:send(1)
      a:close()
    end)
    S.run()
    server:close()
    assert.equal("waiter", seen.name)
    assert.equal(2, seen.recvt)
    assert.equal(0, seen.sendt)
    assert.is_true(seen.timeout > 0 and seen.timeout <= 1)
  end)

  it("raises for a bad argument", function()
    assert.has_error(function() cosock.get_thread_metadata({}) end)
    assert.has_error(function() cosock.get_thread_metadata(42) end,
      "bad argument #1 to 'get_thread_metadata' (spawn handle or thread expected, got number)")
  end)
end)

describe("asyncify", function()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir .. "/probe")
  local function write(name, text)
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(text)
    f:close()
  end
  write("cosock_probe.lua", [[
    local socket = require "socket"
    local nested = require "probe.nested"
    PROBE_GLOBAL = "set"
    return { socket = socket, nested = nested, wait = function(s) socket.sleep(s); return "slept" end }
  ]])
  write("probe_self.lua", [[ return { me = require "probe_self" } ]])
  write("probe_broken.lua", [[ error("broken module") ]])
  write("probe/nested.lua", [[
    local socket = require "socket"
    local string = require "string"
    return { socket = socket, string = string }
  ]])
  local path = package.path
  setup(function() package.path = dir .. "/?.lua;" .. package.path end)
  teardown(function()
    package.path = path
    os.execute("rm -rf " .. dir)
  end)

  it("loads a module whose require 'socket' is cothread.socket, recursively", function()
    local real = package.loaded.socket
    local m = cosock.asyncify("cosock_probe")
    local async = cosock.asyncify("socket") -- cothread.socket as cosock's module behaves
    assert.equal(async, m.socket)
    assert.equal(async, m.nested.socket)
    assert.equal(async, cosock.asyncify("cosock.socket"))
    assert.equal(socket, cosock.asyncify("cothread.socket"))
    assert.equal(string, m.nested.string)
    assert.equal("set", PROBE_GLOBAL) -- its globals are the program's
    PROBE_GLOBAL = nil
    assert.equal(real, package.loaded.socket) -- LuaSocket itself is not loaded
    assert.is_nil(package.loaded.cosock_probe)
    assert.equal(m, cosock.asyncify("cosock_probe")) -- loaded once
    local r
    cosock.spawn(function() r = m.wait(0.01) end)
    cosock.run()
    assert.equal("slept", r)
  end)

  it("names a module that requires itself instead of overflowing the stack", function()
    local ok, err = pcall(cosock.asyncify, "probe_self")
    assert.is_false(ok)
    assert.matches("loop or previous error loading module 'probe_self'", err)
  end)

  it("lets a module whose loading failed be tried again", function()
    for _ = 1, 2 do
      local ok, err = pcall(cosock.asyncify, "probe_broken")
      assert.is_false(ok)
      assert.matches("broken module", err)
    end
  end)

  it("raises for a missing module or a bad name", function()
    local ok, err = pcall(cosock.asyncify, "no.such.module")
    assert.is_false(ok)
    -- As require's: each place searched on a line of its own.
    assert.truthy(err:find("module 'no.such.module' not found:\n\t", 1, true), err)
    assert.truthy(err:find("\n\tno field package.preload%['no.such.module'%]"), err)
    assert.truthy(err:find("\n\tno file '[^\n]*no/such/module.lua'"), err)
    assert.falsy(err:find("'no file", 1, true), err) -- two entries run together
    assert.has_error(function() cosock.asyncify(nil) end, "bad argument #1 to 'asyncify' (string expected, got nil)")
  end)
end)

-- Ports of cosock's documented examples (its book and tests): the program text
-- is cosock's, with its require changed, bounded in rounds, on 127.0.0.1.
describe("cosock's examples", function()
  it("client_server: a channel hands the port to the client", function()
    local port_tx, port_rx = cosock.channel.new()
    local server = socket.tcp() -- made before run
    local pongs = 0
    cosock.spawn(function()
      server:bind("127.0.0.1", 0)
      local _, p = server:getsockname()
      port_tx:send(p)
      server:listen()
      local client = server:accept()
      for _ = 1, 10 do
        local request = assert(client:receive())
        assert.equal("ping", request)
        client:send("pong\n")
      end
      client:close()
    end, "server task")
    cosock.spawn(function()
      local port = assert(port_rx:receive())
      local client = socket.tcp()
      client:connect("127.0.0.1", port)
      for _ = 1, 10 do
        client:send("ping\n")
        assert.equal("pong", assert(client:receive()))
        pongs = pongs + 1
      end
      client:close()
    end, "client task")
    cosock.run()
    server:close()
    assert.equal(10, pongs)
  end)

  it("clients_server_select: one server task serves at most 5 clients at once", function()
    local port_tx, port_rx = cosock.channel.new()
    local done, most, served = 0, 0, 0
    local function handle_recv(client, clients)
      local request, err = client:receive()
      if not request then
        if err == "closed" then
          clients[client] = nil
          served = served + 1
        end
        return
      end
      if request:match("ping") then
        client:send("pong\n")
      else
        client:close()
        clients[client] = nil
      end
    end
    local function handle_accept(server, clients)
      local client, err = server:accept()
      if err and err ~= "timeout" then error("Error in accept: " .. tostring(err)) end
      if client then clients[client] = true end
    end
    cosock.spawn(function()
      local server = socket.tcp()
      server:bind("127.0.0.1", 0)
      local _, p = server:getsockname()
      port_tx:send(p)
      server:listen()
      local clients = {}
      server:settimeout(0)
      while served < 8 do -- cosock's runs until 5 s pass without a request
        local recvt = {}
        for client in pairs(clients) do table.insert(recvt, client) end
        most = math.max(most, #recvt)
        if #recvt < 5 then table.insert(recvt, server) end
        local recvr, _, err = socket.select(recvt, {}, 5)
        assert.is_nil(err)
        for _, sock in ipairs(recvr) do
          if sock == server then
            handle_accept(server, clients)
          elseif clients[sock] then
            handle_recv(sock, clients)
          end
        end
      end
      server:close()
    end, "server task")
    cosock.spawn(function()
      local port = assert(port_rx:receive())
      for i = 1, 8 do
        cosock.spawn(function()
          local client = socket.tcp()
          client:settimeout(10)
          client:connect("127.0.0.1", port)
          for _ = 1, 3 do
            client:send(string.format("ping %s\n", i))
            assert.equal("pong", assert(client:receive()))
            socket.sleep(0.01)
          end
          client:close()
          done = done + 1
        end, "client-task-" .. i)
      end
    end, "clients task")
    cosock.run()
    assert.equal(8, done)
    assert.is_true(most <= 5)
  end)

  it("tick_tock_channels: two cothreads pass the turn through channels", function()
    local tick_tx, tick_rx = cosock.channel.new()
    local tock_tx, tock_rx = cosock.channel.new()
    local log = {}
    local function task(tx, rx, name)
      for _ = 1, 3 do
        rx:receive()
        log[#log + 1] = name
        socket.sleep(0.005)
        tx:send()
      end
    end
    cosock.spawn(function() task(tock_tx, tick_rx, "tick") end)
    cosock.spawn(function() task(tick_tx, tock_rx, "tock") end)
    tick_tx:send() -- before run
    cosock.run()
    assert.same({ "tick", "tock", "tick", "tock", "tick", "tock" }, log)
  end)

  it("channel via select: select after the send finished", function()
    local got
    cosock.spawn(function()
      local sender, receiver = cosock.channel.new()
      cosock.spawn(function() sender:send(true) end)
      socket.sleep(0.01)
      socket.select({ receiver }, {})
      got = receiver:receive()
    end, "receiver")
    cosock.run()
    assert.is_true(got)
  end)

  it("handle aliveness: a handle dies when its cothread ends", function()
    local tx, rx = cosock.channel.new()
    local checked = false
    local handle = cosock.spawn(function() rx:receive() end)
    cosock.spawn(function()
      assert.is_true(handle:is_alive())
      tx:send({})
      socket.sleep(0) -- lets the handle's cothread end
      assert.is_false(handle:is_alive())
      checked = true
    end)
    cosock.run()
    assert.is_true(checked)
  end)

  it("extremely large timeouts: select does not fail", function()
    local err = "not run"
    cosock.spawn(function()
      local server = assert(socket.bind("127.0.0.1", 0))
      local s = assert(socket.connect("127.0.0.1", (select(2, server:getsockname()))))
      local _, sendr
      _, sendr, err = socket.select({}, { s }, math.maxinteger or 2 ^ 53)
      assert.equal(s, sendr[1])
      s:close()
    end, "large timeout")
    cosock.run()
    assert.is_nil(err)
  end)
end)

describe("socket.connect", function()
  it("fails cleanly given a local host without a local port (was a crash)", function()
    local server = assert(socket.bind("127.0.0.1", 0))
    local _, port = server:getsockname()
    local c = assert(socket.connect("127.0.0.1", port, "127.0.0.1"))
    c:close()
    server:close()
  end)
end)
