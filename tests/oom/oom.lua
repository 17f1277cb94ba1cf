-- The script tests/oom/oom.c runs under an allocator that refuses every
-- allocation after the first N: a broad tour of the module, each result
-- checked. Arguments: a directory for a scratch file, whether child waits
-- work (valgrind 3.19 lacks pidfd_open), and `report(label, value)`, the
-- host's printer.
--
-- Once an allocation is refused, every later one is too, so a check that
-- fails must not allocate to say so: it calls `report` (C, no allocation)
-- and raises a literal string at level 0 (no position added). The host
-- accepts only "done" or "not enough memory".
local workdir, has_pidfd, report = ...
local cothread = require "cothread"
local socket = require "cothread.socket"
local channel = require "cothread.channel"
local MEM = "not enough memory"

local function wrong(label, value)
  report(label, value)
  error("wrong result", 0)
end

-- A `v, err, ...` result: a success passes, "not enough memory" is raised
-- as Lua raises it, any other failure is wrong.
local function check(label, v, err, ...)
  if v == nil or v == false then
    if err == MEM then error(MEM, 0) end
    wrong(label, err)
  end
  return v, err, ...
end

-- A result that must be the failure `want`.
local function fails(label, want, v, err)
  if err == MEM then error(MEM, 0) end
  if (v ~= nil and v ~= false) or err ~= want then wrong(label, err) end
end

-- Received data is at least this long: short strings are interned, so a
-- copy of one the script already holds would allocate nothing.
local LONG = string.rep("0123456789", 5)

local function go(f, ...)
  return cothread.schedule(coroutine.create(f), ...)
end

local function scheduling()
  local seq = 0
  local function mark(k) seq = seq * 10 + k end
  go(function() mark(1); cothread.wait("go"); mark(3) end)
  go(function()
    mark(2)
    if not cothread.notify("go") then wrong("notify", false) end
  end)
  cothread.run()
  if seq ~= 123 then wrong("wait and notify", seq) end

  seq = 0
  local co = coroutine.create(function(a) mark(a); mark(cothread.yield(2)) end)
  if not cothread.schedule(co) then wrong("schedule", false) end
  if cothread.schedule(co) then wrong("schedule twice", true) end
  if not cothread.scheduled(co) or cothread.current() ~= co then wrong("scheduled", false) end
  for t in cothread.iready() do
    if t ~= co then wrong("iready", t) end
  end
  local two = cothread.step(1)
  cothread.step(two + 2)
  if seq ~= 14 or cothread.scheduled(co) then wrong("step", seq) end

  go(function() cothread.wait("never") end)
  local waiting = cothread.current()
  cothread.step()
  if not cothread.unschedule(waiting) or cothread.scheduled(waiting) then wrong("unschedule", waiting) end

  local flags = 0
  local all, any = cothread.onall("x", "y"), cothread.onany("p", "q", cothread.onall())
  go(function() cothread.wait(all); flags = flags + 1 end)
  go(function() cothread.wait(any); flags = flags + 2 end)
  go(function()
    cothread.notify("x")
    cothread.yield()
    cothread.notify("q")
    cothread.notify("y", "next")
  end)
  cothread.run()
  if flags ~= 3 then wrong("onall and onany", flags) end

  seq = 0
  go(function() cothread.delay(0.001); mark(2) end)
  go(function() mark(1) end)
  cothread.run()
  if seq ~= 12 then wrong("delay", seq) end

  -- The order of wake times, on a second scheduler with a simulated clock.
  local sim, now = cothread.new(), 0
  sim.time = function() return now end
  sim.idle = function(t) now = t end
  seq = 0
  local function sim_go(f, ...) sim.schedule(coroutine.create(f), ...) end
  sim_go(function() sim.delay(2); mark(3) end)
  sim_go(function() sim.postpone(sim.time()); mark(2) end)
  sim_go(function() mark(1) end)
  sim_go(function() mark(4) end, "delay", 4)
  sim.run()
  if seq ~= 1234 or now ~= 4 then wrong("postpone and delay", seq) end
end

local function plugins()
  local count = 0
  local ops = cothread.plugin(function(c, o)
    o.yieldop("sleepon", 1, function(thread, signal)
      count = count + 1
      c.schedule(thread, "wait", signal)
    end)
    o.scheduleop("counted", 0, function(thread)
      count = count + 10
      c.schedule(thread)
    end)
    return o
  end)
  if type(ops) ~= "table" then wrong("plugin", ops) end
  local woke = false
  go(function() cothread.sleepon("bell"); woke = true end)
  go(function() cothread.notify("bell", "counted") end)
  cothread.run()
  if count ~= 11 or not woke then wrong("plugin operations", count) end
end

local function errors()
  go(function() error("boom", 0) end)
  local ok, e = pcall(cothread.run)
  if e == MEM then error(MEM, 0) end
  -- The message, then the cothread's traceback (the default cothread.error).
  if ok or type(e) ~= "string" or e:match("^[^\n]*") ~= "boom" then wrong("an error out of run", e) end

  local tag = {}
  local co = coroutine.create(function() error(tag) end)
  -- The cothread itself may run out of memory: its trap or `error` then
  -- gets Lua's memory error instead.
  cothread.trap[co] = function(thread, success, err)
    return thread == co and not success, err
  end
  cothread.schedule(co)
  local trapped, err = cothread.step()
  if err == MEM then error(MEM, 0) end
  if not trapped or err ~= tag then wrong("trap", err) end

  cothread.error = function(e) return e end
  go(function() error("logged", 0) end)
  local logged = cothread.run()
  cothread.error = error
  if logged == MEM then error(MEM, 0) end
  if logged ~= "logged" then wrong("cothread.error", logged) end

  go(function() coroutine.yield("frob") end)
  ok, e = pcall(cothread.run)
  if e == MEM then error(MEM, 0) end
  if ok or e ~= "invalid yield operation 'frob'" then wrong("invalid yield", e) end

  ok, e = pcall(cothread.wait, nil)
  if e == MEM then error(MEM, 0) end
  if ok or type(e) ~= "string" then wrong("a bad argument", e) end

  -- A message made at the error (freed if Lua cannot copy it).
  local s = socket.tcp()
  ok, e = pcall(s.setoption, s, LONG)
  s:close()
  if e == MEM then error(MEM, 0) end
  if ok or not tostring(e):find("option '" .. LONG:sub(1, 40), 1, true) then wrong("a made message", e) end
end

local function channels()
  local tx, rx = channel.new()
  rx:settimeout(5)
  local sum = 0
  go(function()
    for _ = 1, 3 do sum = sum + check("receive", rx:receive()) end
    fails("receive after close", "closed", rx:receive())
  end)
  go(function()
    for i = 1, 3 do
      check("send", tx:send(i))
      cothread.yield()
    end
    tx:close()
    fails("send after close", "closed", tx:send(4))
  end)
  cothread.run()
  if sum ~= 6 then wrong("channel values", sum) end
end

local function futures()
  local p, f = cothread.promise()
  local sum
  go(function()
    local ok, a, b = f:await(5)
    check("await", ok, a)
    sum = a + b
  end)
  go(function()
    cothread.delay(0.001)
    if not p:set(20, 22) then wrong("promise:set", false) end
  end)
  cothread.run()
  if sum ~= 42 then wrong("await's values", sum) end
  if not f:ready() or f:state() ~= "value" then wrong("future state", f:state()) end

  local p2, f2 = cothread.promise()
  p2:fail("bad")
  local ok, err = f2:value()
  if ok ~= false or err ~= "bad" or p2:fail("again") then wrong("promise:fail", err) end
  if p2:future():state() ~= "error" then wrong("promise:future", p2:future():state()) end
end

local function cosock()
  local slept = cothread.spawn(function() socket.sleep(0.001) end, "sleeper")
  local stuck = cothread.spawn(function()
    local _, rx = channel.new()
    rx:receive()
  end)
  local list = cothread.get_thread_metadata()
  if #list ~= 2 or list[1].name ~= "sleeper" then wrong("get_thread_metadata", #list) end
  cothread.run()
  if slept:is_alive() or not stuck:is_alive() then wrong("spawn and run", slept:is_alive()) end
  stuck:cancel()
  if stuck:is_alive() or tostring(slept) ~= "sleeper" then wrong("cancel", stuck:is_alive()) end

  package.preload["oom.helper"] = function()
    local s = require "socket"
    return { sleep = s.sleep }
  end
  local helper = cothread.asyncify("oom.helper")
  local done = false
  cothread.spawn(function() helper.sleep(0.001); done = true end)
  cothread.run()
  if not done then wrong("asyncify", done) end

  local protected = socket.protect(function()
    local try = socket.newtry()
    try(nil, "oops")
  end)
  fails("protect", "oops", protected())
end

-- A cothread taken out while it waits, then scheduled again: its call
-- ends with "cancelled" (the engine moves the wait into a ticket).
local function cancel()
  local _, rx = channel.new()
  local got, err
  local co = coroutine.create(function() got, err = rx:receive() end)
  cothread.schedule(co)
  cothread.step()
  if not cothread.unschedule(co) then wrong("unschedule a waiting cothread", false) end
  cothread.schedule(co)
  cothread.run()
  if err == MEM then error(MEM, 0) end
  if got ~= nil or err ~= "cancelled" then wrong("a cancelled receive", err) end
end

-- Numeric addresses only: nothing leaves the machine.
local function dns()
  local ip, list
  go(function()
    ip = check("dns.toip", cothread.dns.toip("127.0.0.1"))
    list = check("dns.getaddrinfo", cothread.dns.getaddrinfo("127.0.0.1"))
  end)
  cothread.run()
  if ip ~= "127.0.0.1" then wrong("dns.toip's address", ip) end
  if list[1].addr ~= "127.0.0.1" or list[1].family ~= "inet" then wrong("getaddrinfo", list[1].addr) end
end

local function tcp()
  local server = check("bind", socket.bind("127.0.0.1", 0))
  local _, port = check("getsockname", server:getsockname())
  server:settimeout(5)
  local echoed, second
  go(function()
    local c = check("accept", server:accept())
    c:settimeout(5)
    local line = check("server receive", c:receive("*l"))
    check("server send", c:send(line .. "!\n" .. LONG .. "\n"))
    c:close()
  end)
  go(function()
    local c = check("tcp", socket.tcp())
    c:settimeout(5)
    check("connect", c:connect("127.0.0.1", port))
    check("client send", c:send(LONG .. "\n"))
    local readable = check("select", socket.select({ c }, nil, 5))
    if readable[1] ~= c then wrong("select's answer", readable[1]) end
    local head = check("client receive", c:receive(3))
    echoed = check("client receive", c:receive("*l", head))
    second = check("client receive", c:receive("*l"))
    -- Nothing is left: "*a" answers LuaSocket's nil, "closed", "".
    local rest, err, partial = c:receive("*a")
    if err == MEM then error(MEM, 0) end
    if rest ~= nil or err ~= "closed" or partial ~= "" then wrong("receive all", err) end
    c:close()
  end)
  cothread.run()
  server:close()
  if echoed ~= LONG .. "!" or second ~= LONG then wrong("echo", echoed) end
end

local function udp()
  local a = check("udp", socket.udp())
  check("setsockname", a:setsockname("127.0.0.1", 0))
  local _, port = check("udp getsockname", a:getsockname())
  local b = check("udp", socket.udp())
  a:settimeout(5)
  local got
  go(function() got = check("receivefrom", a:receivefrom()) end)
  go(function() check("sendto", b:sendto(LONG, "127.0.0.1", port)) end)
  cothread.run()
  if got ~= LONG then wrong("datagram", got) end

  -- Connected: setpeername, send and receive.
  check("setpeername", b:setpeername("127.0.0.1", port))
  local _, bport = check("udp getsockname", b:getsockname())
  check("setpeername", a:setpeername("127.0.0.1", bport))
  local back
  go(function() back = check("udp receive", a:receive()) end)
  go(function() check("udp send", b:send(LONG)) end)
  cothread.run()
  a:close()
  b:close()
  if back ~= LONG then wrong("connected datagram", back) end
end

local function options()
  local t = check("tcp", socket.tcp4())
  check("setoption", t:setoption("reuseaddr", true))
  check("setoption", t:setoption("linger", { on = true, timeout = 3 }))
  local linger = check("getoption", t:getoption("linger"))
  if linger.on ~= true or linger.timeout ~= 3 then wrong("linger", linger.timeout) end
  if check("getoption", t:getoption("reuseaddr")) ~= true then wrong("reuseaddr", false) end
  t:close()
  local u = check("udp", socket.udp4())
  check("setoption", u:setoption("broadcast", true))
  if check("getoption", u:getoption("broadcast")) ~= true then wrong("broadcast", false) end
  u:close()
end

local function files()
  local path = workdir .. "/oom.tmp"
  local first, number, lines
  go(function()
    local f = check("open to write", cothread.file.open(path, "w"))
    check("write", f:write("one\n", 2, "\nthree\n"))
    f:close()
    local st = check("stat", cothread.file.stat(path))
    if st.size ~= 12 or st.mode ~= "file" then wrong("stat's size", st.size) end
    f = check("open to read", cothread.file.open(path))
    first, number = f:read("l", "n")
    check("read", first, number)
    lines = 0
    for _ in f:lines() do lines = lines + 1 end
    check("seek", f:seek("set"))
    if cothread.file.type(f) ~= "file" then wrong("file.type", cothread.file.type(f)) end
    f:close()
  end)
  cothread.run()
  if first ~= "one" or number ~= 2 or lines ~= 2 then wrong("file contents", first) end
end

local function process()
  local line, how, code
  go(function()
    local p = check("spawn", cothread.process.spawn("echo hi; exit 3", { stdout = true }))
    line = check("pipe read", p.stdout:read("l"))
    p.stdout:close()
    if has_pidfd then
      local ok
      ok, how, code = p:wait(5)
      if how == MEM then error(MEM, 0) end
      if ok ~= nil then wrong("wait", ok) end
    end
  end)
  cothread.run()
  if line ~= "hi" then wrong("the child's output", line) end
  if has_pidfd and (how ~= "exit" or code ~= 3) then wrong("the child's exit", how) end

  go(function()
    local p = check("spawn", cothread.process.spawn({ "sleep", "5" }))
    check("kill", p:kill())
    if has_pidfd then
      local ok
      ok, how, code = p:wait(5)
      if how == MEM then error(MEM, 0) end
      if ok ~= nil then wrong("wait after kill", ok) end
    end
  end)
  cothread.run()
  if has_pidfd and (how ~= "signal" or code ~= 15) then wrong("the killed child's end", how) end
end

local function os_signals()
  local name
  go(function() name = check("signal.wait", cothread.signal.wait("SIGUSR1", 5)) end)
  go(function() check("signal.raise", cothread.signal.raise("SIGUSR1")) end)
  cothread.run()
  if name ~= "SIGUSR1" then wrong("the signal", name) end
end

scheduling()
plugins()
errors()
channels()
futures()
cosock()
cancel()
dns()
tcp()
udp()
options()
files()
process()
os_signals()
return "done"
