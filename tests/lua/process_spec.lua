-- cothread.process: child processes with pipes, waited for in the event loop.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/process_spec.lua

local cothread = require "cothread"
local process = cothread.process

local support = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "support.lua")
local go = support.go

local ticking = support.ticking

describe("cothread.process", function()
  it("reads a child's output line by line, and its exit code", function()
    local lines, r
    local ticks = ticking(function()
      local p = assert(process.spawn("echo a; sleep 0.05; echo b; exit 3", { stdout = true }))
      assert.is_number(p.pid)
      assert.matches("^process %(%d+%)$", tostring(p))
      assert.is_nil(p.stdin)
      assert.is_nil(p.stderr)
      lines = {}
      if support.lua51 then
        -- Lua 5.1 cannot yield from a generic for's iterator (there a read
        -- waits in place, others not running): the iterator is called.
        local it = p.stdout:lines()
        for _ = 1, 3 do lines[#lines + 1] = it() end
      else
        for l in p.stdout:lines() do lines[#lines + 1] = l end
      end
      r = { p:wait() }
    end)
    assert.same({ "a", "b" }, lines)
    assert.same({ nil, "exit", 3 }, r)
    assert.is_true(ticks >= 5, "others ran while it waited: " .. ticks)
  end)

  it("gives true, 'exit', 0 for a success, also outside cothreads", function()
    local p = assert(process.spawn({ "sh", "-c", "echo out; echo err >&2" }, { stdout = "pipe", stderr = "stdout" }))
    assert.equal("out\nerr\n", p.stdout:read("*a"))
    assert.same({ true, "exit", 0 }, { p:wait() })
    assert.same({ true, "exit", 0 }, { p:wait() }, "again: the same")
  end)

  it("pipes stdin to cat and reads it back", function()
    local out
    ticking(function(S)
      local p = assert(process.spawn({ "cat" }, { stdin = true, stdout = true }))
      local big = string.rep("0123456789abcdef", 65536) -- 1 MiB: more than a pipe holds
      local reader = go(S, function() out = p.stdout:read("*a") end)
      assert.equal(p.stdin, p.stdin:write(big, "end\n"))
      assert.is_true(p.stdin:close())
      assert.same({ true, "exit", 0 }, { p:wait() })
      while S.scheduled(reader) do S.yield() end
      assert.equal(big .. "end\n", out)
    end)
  end)

  it("reports a child killed by a signal", function()
    local r
    ticking(function()
      local p = assert(process.spawn({ "sleep", "5" }))
      assert.is_true(p:kill())
      r = { p:wait() }
      assert.same({ nil, "No such process", 3 }, { p:kill() }, "no signal once reaped")
    end)
    assert.same({ nil, "signal", 15 }, r)
    local p = assert(process.spawn({ "sleep", "5" }))
    assert.is_true(p:kill("SIGKILL"))
    assert.same({ nil, "signal", 9 }, { p:wait() })
  end)

  it("waits with a timeout", function()
    local t0 = cothread.time()
    ticking(function()
      local p = assert(process.spawn({ "sleep", "5" }))
      assert.same({ nil, "timeout" }, { p:wait(0.05) })
      assert.is_true(p:kill("KILL"))
      assert.same({ nil, "signal", 9 }, { p:wait(5) })
    end)
    local p = assert(process.spawn({ "sleep", "5" }))
    assert.same({ nil, "timeout" }, { p:wait(0.05) })
    p:kill(9)
    assert.same({ nil, "signal", 9 }, { p:wait() })
    assert.is_true(cothread.time() - t0 < 2)
  end)

  it("sets the environment and the working directory", function()
    local p = assert(process.spawn("echo $FOO; pwd", { stdout = true, env = { FOO = "bar", PATH = os.getenv("PATH") }, cwd = "/" }))
    assert.equal("bar\n/\n", p.stdout:read("*a"))
    assert.is_true((p:wait()))
    local q = assert(process.spawn({ "cat" }, { stdin = "null", stdout = true }))
    assert.is_nil(q.stdout:read("*l"), "/dev/null is empty")
    q:wait()
  end)

  it("fails to spawn a missing program with nil, message, errno", function()
    assert.same({ nil, "no-such-program-here: No such file or directory", 2 },
      { process.spawn({ "no-such-program-here" }, { stdout = true }) })
    local ok, msg, code = process.spawn({ "sh" }, { cwd = "/no/such/dir" })
    assert.is_nil(ok)
    assert.equal(2, code)
    assert.is_string(msg)
  end)

  it("writes to a child that exited: EPIPE, not a SIGPIPE", function()
    local p = assert(process.spawn({ "true" }, { stdin = true }))
    p:wait()
    local ok, msg, code = p.stdin:write(string.rep("x", 100000))
    assert.is_nil(ok)
    assert.equal("Broken pipe", msg)
    assert.equal(32, code)
  end)

  it("ends a read with nil, 'closed' when another cothread closes the pipe", function()
    local S = cothread.new()
    local p = assert(process.spawn({ "sleep", "5" }, { stdout = true }))
    local got
    go(S, function() got = { p.stdout:read("*a") } end)
    go(S, function()
      S.delay(0.02)
      assert.is_true(p.stdout:close())
    end)
    S.run()
    assert.same({ nil, "closed" }, got)
    p:kill()
    assert.same({ nil, "signal", 15 }, { p:wait() })
  end)

  it("lets cothreads of several schedulers read one pipe in turn", function()
    local A, B = cothread.new(), cothread.new()
    local p = assert(process.spawn("echo 1; sleep 0.02; echo 2", { stdout = true }))
    local r = {}
    go(A, function() r[#r + 1] = p.stdout:read() end)
    A.run()
    go(B, function() r[#r + 1] = p.stdout:read() end)
    B.run()
    assert.same({ "1", "2" }, r)
    assert.is_nil(p.stdout:read())
    assert.is_true((p:wait()))
  end)

  it("raises on misuse", function()
    assert.has_error(function() process.spawn() end)
    assert.has_error(function() process.spawn(42) end)
    assert.has_error(function() process.spawn({}) end, "bad argument #1 to 'spawn' (empty command)")
    assert.has_error(function() process.spawn({ "ls", {} }) end)
    assert.has_error(function() process.spawn("ls", 5) end)
    assert.has_error(function() process.spawn("ls", { stdout = "maybe" }) end)
    assert.has_error(function() process.spawn("ls", { env = { A = {} } }) end)
    local p = assert(process.spawn({ "true" }))
    assert.has_error(function() p:kill("SIGNOPE") end)
    assert.has_error(function() p:wait("soon") end)
    assert.has_error(function() p.wait(42) end)
    p:wait()
  end)

  it("refuses what the system would silently cut or misread", function()
    local function err(...)
      local ok, msg = pcall(process.spawn, ...)
      assert.is_false(ok)
      return msg
    end
    assert.matches("%(command contains a NUL byte%)", err({ "echo", "a\0rm -rf" }))
    assert.matches("%(command contains a NUL byte%)", err("echo a\0b"))
    assert.matches("%(option 'env': invalid variable 'A=B'%)", err({ "true" }, { env = { ["A=B"] = "c" } }))
    assert.matches("%(option 'env': invalid variable ''%)", err({ "true" }, { env = { [""] = "c" } }))
    assert.matches("%(option 'env': invalid variable 'A'%)", err({ "true" }, { env = { A = "x\0y" } }))
    assert.matches("%(option 'cwd' contains a NUL byte%)", err({ "true" }, { cwd = "/\0tmp" }))
    assert.matches("%(table or string expected, got number%)", err(42))
    assert.matches("%(invalid option 'stdout'%)", err("ls", { stdout = "maybe" }))
    local long = err({ "true" }, { env = { [string.rep("=", 2 ^ 20)] = "x" } })
    assert.is_true(#long < 200, "a 1 MiB name is not copied into the message")
  end)

  it("leaves nothing dangling when unscheduled while waiting", function()
    local S = cothread.new()
    local p = assert(process.spawn({ "sleep", "0.1" }))
    local r
    local co = go(S, function() r = { p:wait() } end)
    S.step()
    assert.is_true(S.scheduled(co))
    assert.is_true(S.unschedule(co))
    os.execute("sleep 0.2")
    S.run()
    assert.is_nil(r, "the exit resumed nobody")
    assert.same({ true, "exit", 0 }, { p:wait() })
    S.schedule(co)
    S.run()
    assert.same({ true, "exit", 0 }, r, "scheduled again, it finds the exit")
  end)
end)
