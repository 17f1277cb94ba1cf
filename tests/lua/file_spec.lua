-- cothread.file: files on the loop's thread pool, with io-like file objects.
--
--   busted --lua=lua5.4 --cpath='<dir holding cothread.so>/?.so' tests/lua/file_spec.lua

-- Lua 5.1 and LuaJIT have neither (their unpack is a global).
table.pack = table.pack or function(...) return { n = select("#", ...), ... } end
table.unpack = table.unpack or unpack
local cothread = require "cothread"
local file = cothread.file

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))
local n = 0
local function tmp()
  n = n + 1
  return ("%s/f%d"):format(dir, n)
end

-- Writes `data` to a new file (with Lua's io) and returns its path.
local function fixture(data)
  local path = tmp()
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
  return path
end

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local support = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "support.lua")
local go = support.go

-- The number of open descriptors of this process, but anonymous pipes (the
-- listing's own pipe may be listed twice: its child's end closes in this
-- process while the listing runs).
local function nfds()
  collectgarbage()
  collectgarbage()
  local p = io.popen("ls -l /proc/" .. cothread.signal.getpid() .. "/fd")
  local count = 0
  for l in p:lines() do
    if l:find(" -> ", 1, true) and not l:find("-> pipe:", 1, true) then count = count + 1 end
  end
  p:close()
  return count
end

teardown(function() os.execute("rm -rf " .. dir) end)

describe("cothread.file", function()
  it("is the file field of every scheduler", function()
    assert.equal(file, cothread.new().file)
    for _, name in ipairs { "open", "stat", "type" } do assert.is_function(file[name]) end
  end)

  it("writes, then reads back what it wrote (outside cothreads: synchronously)", function()
    local path = tmp()
    local f = assert(file.open(path, "w"))
    assert.equal(f, f:write("one\n", 2, "\n", 3.5, "\n"))
    assert.equal(f, f:flush())
    assert.is_true(f:close())
    assert.equal("one\n2\n3.5\n", slurp(path))
    f = assert(file.open(path))
    assert.same({ "one", 2, 3.5 }, { f:read("l", "n", "n") })
    assert.is_nil(f:read("*n"))
    f:close()
  end)

  -- f:read(...) as io gives it; Lua 5.1's io has no "*L" (LuaJIT's has):
  -- there, each format is read alone, "*L" as "*l" and the newline it took.
  local function io_read(f, ...)
    if not support.lua51 then return f:read(...) end
    local got = {}
    for i = 1, select("#", ...) do
      local format, p = select(i, ...), f:seek()
      local v = f:read(format == "*L" and "*l" or format)
      if format == "*L" and v and f:seek() - p > #v then v = v .. "\n" end
      got[i] = v
      if v == nil then return unpack(got, 1, i) end
    end
    return unpack(got, 1, select("#", ...))
  end

  it("reads with io's formats, giving what io gives", function()
    local data = "first line\r\n  42  -0x1F 7.5e1 word\n\nlast"
    local path = fixture(data)
    local cases = {
      { "l", "l", "l", "l", "l" },
      { "L", "L", "L", "L", "L" },
      { "*l", "n", "n", "n", "n", "l" },
      { 3, 0, 100, 0, 1 },
      { "a", "a", "l", 0 },
      { "n" },
      { 5, "l", "L", "n" },
    }
    local pack = table.pack or function(...) return { n = select("#", ...), ... } end
    local unpack = table.unpack or unpack
    for i, formats in ipairs(cases) do
      if _VERSION < "Lua 5.3" then -- io's formats need their '*' there
        for j, f in ipairs(formats) do
          if type(f) == "string" and f:sub(1, 1) ~= "*" then formats[j] = "*" .. f end
        end
      end
      local ours, theirs = assert(file.open(path)), assert(io.open(path))
      local a = pack(ours:read(unpack(formats)))
      local b = pack(io_read(theirs, unpack(formats)))
      assert.same(b, a, "case " .. i)
      assert.same({ theirs:read("*a") }, { ours:read("*a") }, "rest of case " .. i)
      ours:close()
      theirs:close()
    end
  end)

  it("reads in cothreads too, and lines iterates with formats", function()
    local path = fixture("a\nb\nc\n1 2\n3 4\n")
    local S = cothread.new()
    local got = {}
    go(S, function()
      local f = assert(S.file.open(path))
      for l in f:lines() do
        got[#got + 1] = l
        if l == "c" then break end
      end
      for x, y in f:lines("n", "n") do got[#got + 1] = x + y end
      assert.equal(0, f:seek("set"))
      for c in f:lines(1) do got[#got + 1] = c; if #got == 7 then break end end
      f:close()
      assert.has_error(function() f:lines() end, "attempt to use a closed file")
    end)
    S.run()
    assert.same({ "a", "b", "c", 3, 7, "a", "\n" }, { got[1], got[2], got[3], got[4], got[5], got[6], got[7] })
  end)

  it("takes many formats at once", function()
    local path = fixture(string.rep("x", 40))
    local formats = {}
    for i = 1, 20 do formats[i] = 1 end
    local f = assert(file.open(path))
    local S = cothread.new()
    local rows = {}
    go(S, function()
      for a, b, c, d, e, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u in f:lines(table.unpack(formats)) do
        rows[#rows + 1] = table.concat { a, b, c, d, e, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u }
      end
    end)
    S.run()
    assert.same({ string.rep("x", 20), string.rep("x", 20) }, rows)
    f:seek("set")
    for i = 1, 300 do formats[i] = 0 end
    assert.equal(300, select("#", f:read(table.unpack(formats))))
    f:close()
  end)

  it("copies a file in chunks while other cothreads tick", function()
    local chunk = string.rep("0123456789abcdef", 4096) -- 64 KiB
    local parts = {}
    for i = 1, 64 do parts[i] = chunk:sub(i) .. i end
    local src, dst = fixture(table.concat(parts)), tmp()
    local S = cothread.new()
    local done, ticks, ticks_during = false, 0, nil
    go(S, function()
      local from, to = assert(S.file.open(src, "rb")), assert(S.file.open(dst, "wb"))
      local t0 = ticks
      while true do
        local data = from:read(65536)
        if not data then break end
        assert(to:write(data))
      end
      ticks_during = ticks - t0
      from:close()
      to:close()
      done = true
    end)
    go(S, function()
      while not done do
        ticks = ticks + 1
        S.yield()
      end
    end)
    S.run()
    assert.is_true(done)
    assert.equal(slurp(src), slurp(dst))
    assert.is_true(ticks_during >= 64, "the other cothread ran during the copy: " .. ticks_during)
  end)

  it("answers lines from its buffer: one pool job per chunk, not per line", function()
    local lines = {}
    for i = 1, 10000 do lines[i] = "line " .. i end
    local path = fixture(table.concat(lines, "\n") .. "\n")
    local S = cothread.new()
    local count, done = 0, false
    local co = go(S, function()
      local f = assert(S.file.open(path))
      for l in f:lines() do
        count = count + 1
        assert.equal(lines[count], l)
      end
      f:close()
      done = true
    end)
    -- Counts the reader's waits: each leaves the ready queue until its job is done.
    local waits, was_ready = 0, true
    local t0 = cothread.time()
    -- A guard against a hang, not a measure: valgrind on a loaded machine is slow.
    while not done and cothread.time() - t0 < 60 do
      local ready = false
      for c in S.iready() do ready = ready or c == co end
      if was_ready and not ready then waits = waits + 1 end
      was_ready = ready
      S.step()
    end
    assert.equal(10000, count)
    assert.is_true(waits <= 10, "few waits for 10000 lines (88 KiB): " .. waits)
  end)

  it("seeks, and writes after reading where the reading stopped", function()
    local path = fixture("0123456789")
    local f = assert(file.open(path, "r+"))
    assert.equal("01", f:read(2))
    assert.equal(2, f:seek())
    assert.equal(f, f:write("ab"))
    assert.equal(4, f:seek())
    assert.equal(10, f:seek("end"))
    assert.equal(7, f:seek("set", 7))
    assert.equal("789", f:read("*a"))
    assert.equal(8, f:seek("cur", -2))
    assert.equal("89", f:read("*a"))
    f:close()
    assert.equal("01ab456789", slurp(path))
    local a = assert(file.open(path, "a+"))
    a:write("!")
    a:seek("set")
    assert.equal("01ab456789!", a:read("*a"))
    a:close()
    local s, msg, code = assert(file.open(path)):seek("set", -1)
    assert.is_nil(s)
    assert.equal("Invalid argument", msg)
    assert.equal(22, code)
  end)

  it("stats files and directories", function()
    local path = fixture("12345")
    local st = assert(file.stat(path))
    assert.equal(5, st.size)
    assert.equal("file", st.mode)
    assert.matches("^r[w-][x-][r-][w-][x-][r-][w-][x-]$", st.permissions)
    assert.is_true(math.abs(st.modification - os.time()) < 5)
    assert.is_number(st.ino)
    local S = cothread.new()
    local d
    go(S, function() d = S.file.stat(dir) end)
    S.run()
    assert.equal("directory", d.mode)
  end)

  it("fails as io.open does: nil, message, errno", function()
    local missing = dir .. "/missing"
    assert.same({ nil, missing .. ": No such file or directory", 2 }, { file.open(missing) })
    assert.same({ nil, missing .. ": No such file or directory", 2 }, { file.stat(missing) })
    local S = cothread.new()
    local r
    go(S, function() r = { S.file.open(missing) } end)
    S.run()
    assert.same({ nil, missing .. ": No such file or directory", 2 }, r)
    local _, msg, code = file.open(dir, "w")
    assert.equal(dir .. ": Is a directory", msg)
    assert.equal(21, code)
    local ro = assert(file.open(fixture("x")))
    local ok, err, errno = ro:write("y")
    assert.is_nil(ok)
    assert.equal("Bad file descriptor", err)
    assert.equal(9, errno)
    ro:close()
  end)

  it("reads numerals as io does: none over 200 characters", function()
    -- The limit is 5.3's io's; 5.1's and 5.2's read a numeral of any length.
    local io_limited = _VERSION >= "Lua 5.3"
    for _, len in ipairs { 1, 199, 200, 201, 250 } do
      local path = fixture(string.rep("7", len) .. "\n")
      local ref = assert(io.open(path))
      local f = assert(file.open(path))
      local want, got = ref:read("*n"), f:read("*n")
      if len <= 200 or io_limited then assert.equal(want, got, "a numeral of " .. len .. " digits") end
      assert.equal(len <= 200, got ~= nil)
      ref:close()
      f:close()
    end
  end)

  it("refuses a path with a NUL byte instead of cutting it", function()
    local path = fixture("secret")
    -- The message names the path as io does: up to the NUL.
    assert.same({ nil, path .. ": Invalid argument", 22 }, { file.open(path .. "\0x") })
    assert.same({ nil, path .. ": Invalid argument", 22 }, { file.stat(path .. "\0x") })
  end)

  it("opens with every mode of io.open", function()
    local path = fixture("abc")
    for _, mode in ipairs { "r", "rb", "r+", "r+b", "a", "a+", "ab", "w", "w+", "wb", "w+b" } do
      local f = assert(file.open(path, mode))
      assert.equal("file", file.type(f))
      f:close()
    end
    path = fixture("abc") -- "w" emptied the other
    local f = assert(file.open(path, "a+"))
    assert(f:write("def"))
    f:seek("set", 0)
    assert.equal("abcdef", f:read("*a"), "a+ reads from the start and appends at the end")
    f:close()
  end)

  it("raises on misuse", function()
    assert.has_error(function() file.open() end, "bad argument #1 to 'open' (string expected, got no value)")
    assert.has_error(function() file.open({}) end)
    assert.has_error(function() file.open(tmp(), "rw") end, "bad argument #2 to 'open' (invalid mode)")
    assert.has_error(function() file.open(tmp(), "x") end, "bad argument #2 to 'open' (invalid mode)")
    assert.has_error(function() file.stat(nil) end)
    local f = assert(file.open(fixture("abc")))
    assert.has_error(function() f:read("x") end, "bad argument #1 to 'read' (invalid format)")
    assert.has_error(function() f:read({}) end)
    assert.has_error(function() f:write({}) end)
    assert.has_error(function() f:seek("middle") end, "bad argument #1 to 'seek' (invalid option)")
    assert.has_error(function() f.read(42) end)
    assert.matches("^file %(0x", tostring(f))
    assert.equal("file", file.type(f))
    f:close()
    assert.equal("file (closed)", tostring(f))
    assert.equal("closed file", file.type(f))
    assert.is_nil(file.type(io.stdout))
    for _, m in ipairs { "read", "write", "lines", "seek", "flush", "close" } do
      assert.has_error(function() f[m](f) end, "attempt to use a closed file")
    end
  end)

  it("closes with <close> and when collected", function()
    collectgarbage()
    collectgarbage()
    local before = nfds()
    local opened = support.tbc([[
      local file, path = ...
      local f <close> = assert(file.open(path))
      return true
    ]], file, fixture("x"))
    assert.equal(before, nfds())
    local g = assert(file.open(fixture("y")))
    g = nil
    collectgarbage()
    collectgarbage()
    assert.equal(before, nfds())
  end)

  it("leaves nothing dangling when unscheduled while its job runs", function()
    local fifo = tmp()
    assert(os.execute("mkfifo " .. fifo))
    local S = cothread.new()
    local result
    local co = go(S, function() result = { S.file.open(fifo) } end)
    S.step() -- the open blocks in a pool thread until a writer comes
    collectgarbage()
    collectgarbage()
    local before = nfds()
    assert.is_true(S.scheduled(co))
    assert.is_true(S.unschedule(co))
    -- Lets the job finish if it started. "r+" (O_RDWR) does not block on
    -- Linux: a job cancelled before it started opens no reader, and a "w"
    -- would then wait for one forever.
    local w = assert(io.open(fifo, "r+"))
    local t0 = cothread.time()
    while cothread.time() - t0 < 0.2 do S.step() end
    assert.is_nil(result, "the late completion resumed nobody")
    assert.is_false(S.scheduled(co))
    w:close()
    assert.equal(before, nfds(), "the descriptor its job opened was closed at once")
    S.schedule(co)
    S.run()
    assert.same({ nil, "cancelled" }, result)
  end)
end)
