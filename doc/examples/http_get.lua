-- An HTTP/1.1 GET client: several fetches at once, each in its own cothread.
--
--   lua5.4 doc/examples/http_get.lua [directory holding cothread.so] [http://host[:port]/path ...]
--
-- With URLs, it fetches them concurrently and prints each status and body size.
-- Without, it first starts a small HTTP server in cothreads of the same process
-- (on loopback) and fetches a few pages from it: one sized by Content-Length,
-- one chunked, one delimited by the close of the connection, a slow one, and a
-- missing one. Every socket call suspends only the cothread that makes it.

if arg[1] and not arg[1]:match("^http://") then
  package.cpath = arg[1] .. "/?.so;" .. package.cpath
end
local cothread = require "cothread"
local socket = require "cothread.socket"

-- ===== the client =====

-- "http://host[:port][/path]" -> host, port, path.
local function parse_url(url)
  local host, port, path = url:match("^http://([^/:]+):?(%d*)(.*)$")
  if not host then return nil, "not an http:// URL: " .. url end
  return host, tonumber(port) or 80, path ~= "" and path or "/"
end

-- The body, framed as the headers say: chunked, Content-Length, or up to the
-- close of the connection. Returns body, how; or nil, error.
local function read_body(c, headers)
  if (headers["transfer-encoding"] or ""):lower():find("chunked", 1, true) then
    local parts = {}
    while true do
      local line, err = c:receive("*l")        -- "<hex size>[;extensions]"
      local size = line and tonumber(line:match("^%x+"), 16)
      if not size then return nil, err or "bad chunk size" end
      if size == 0 then break end
      local data, derr = c:receive(size)
      if not data then return nil, derr end
      parts[#parts + 1] = data
      c:receive("*l")                          -- the CRLF after the chunk
    end
    repeat                                     -- trailers, up to an empty line
      local line, err = c:receive("*l")
      if not line then return nil, err end
    until line == ""
    return table.concat(parts), "chunked"
  elseif headers["content-length"] then
    local n = tonumber(headers["content-length"])
    if not n then return nil, "bad Content-Length" end
    local body, err = c:receive(n)
    return body, err or "content-length"
  else
    local body, err = c:receive("*a")
    return body, err or "until close"
  end
end

-- GET url: status, reason, headers (lower-case names), body, framing; or nil, error.
local function http_get(url)
  local host, port, path = parse_url(url)
  if not host then return nil, port end
  local c, err = socket.connect(host, port)
  if not c then return nil, err end
  c:settimeout(10)                             -- seconds, for each wait
  local request = table.concat {
    "GET ", path, " HTTP/1.1\r\n",
    "Host: ", host, port ~= 80 and ":" .. port or "", "\r\n",
    "User-Agent: cothread-http-get\r\n",
    "Connection: close\r\n\r\n",
  }
  local ok, serr = c:send(request)
  if not ok then c:close() return nil, serr end

  local line, rerr = c:receive("*l")           -- "HTTP/1.1 200 OK" (CRs are dropped)
  local status, reason = (line or ""):match("^HTTP/%d%.%d (%d%d%d) ?(.*)$")
  if not status then c:close() return nil, rerr or "bad status line" end
  local headers = {}
  while true do
    line, rerr = c:receive("*l")
    if not line then c:close() return nil, rerr end
    if line == "" then break end
    local name, value = line:match("^([^:]+):%s*(.-)%s*$")
    if name then
      name = name:lower()
      headers[name] = headers[name] and headers[name] .. ", " .. value or value
    end
  end

  status = tonumber(status)
  local body, how = "", "none"
  if status >= 200 and status ~= 204 and status ~= 304 then
    body, how = read_body(c, headers)
  end
  c:close()
  if not body then return nil, how end
  return status, reason, headers, body, how
end

-- ===== a server for the demonstration =====

local PAGES = {
  ["/hello"] = "hello, world\n",
  ["/big"] = string.rep("0123456789abcdef", 16384),   -- 256 KiB
}

-- Answers one request on client `c`, then closes it.
local function serve(c)
  c:settimeout(10)
  local request = c:receive("*l") or ""
  repeat local line = c:receive("*l") until not line or line == ""
  local path = request:match("^GET (%S+) HTTP/1%.%d$")
  if path == "/slow" then
    socket.sleep(0.2)                          -- the other fetches go on meanwhile
    path = "/hello"
  end
  if PAGES[path] then
    c:send(("HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"):format(#PAGES[path], PAGES[path]))
  elseif path == "/chunked" then
    c:send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
    for _, part in ipairs { "one ", "two ", "three\n" } do
      c:send(("%x\r\n%s\r\n"):format(#part, part))
    end
    c:send("0\r\n\r\n")
  elseif path == "/close" then
    c:send("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nthe end comes with the close\n")
  else
    c:send("HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\nConnection: close\r\n\r\nnot found\n")
  end
  c:close()
end

-- Serves on 127.0.0.1 (a free port) until `server:close()`; returns the server
-- and its base URL.
local function start_server()
  local server = assert(socket.bind("127.0.0.1", 0))
  local host, port = server:getsockname()
  cothread.schedule(coroutine.create(function()
    while true do
      local c = server:accept()
      if not c then return end                 -- "closed": we are done
      cothread.schedule(coroutine.create(function() serve(c) end))
    end
  end))
  return server, ("http://%s:%d"):format(host, port)
end

-- ===== main =====

local urls, server = {}, nil
for i = 1, #arg do
  if arg[i]:match("^http://") then urls[#urls + 1] = arg[i] end
end
if #urls == 0 then
  local base
  server, base = start_server()
  print("server: listening on " .. base)
  for _, path in ipairs { "/slow", "/hello", "/chunked", "/close", "/big", "/missing" } do
    urls[#urls + 1] = base .. path
  end
end

local unpack = table.unpack or unpack             -- Lua 5.1 and LuaJIT: a global
local results, left = {}, #urls
for i, url in ipairs(urls) do
  cothread.schedule(coroutine.create(function()   -- one cothread per fetch
    results[i] = { http_get(url) }
    left = left - 1
    if left == 0 and server then server:close() end
  end))
end
local t0 = cothread.time()
cothread.run()                                     -- returns when all are done

for i, url in ipairs(urls) do
  local status, reason, headers, body, how = unpack(results[i], 1, 5)
  if status then
    local preview = body:sub(1, 16):gsub("\n", "\\n")
    print(('%s: %d %s, %d bytes (%s) "%s"'):format(url, status, reason, #body, how, preview))
  else
    print(("%s: failed: %s"):format(url, reason))
  end
end
print(("all done in %.2f s"):format(cothread.time() - t0))
