-- TCP echo server on luv (libuv's callbacks), for bench/lua/echo.sh and idle.sh:
--   lua5.4 bench/lua/echo_luv.lua CPATH_DIR SIZE
-- Listens on 127.0.0.1 (any free port), prints the port, and echoes every
-- chunk read straight back (read_start callback -> write), as libuv's own
-- echo server does. Runs until killed. (CPATH_DIR and SIZE are unused: the
-- same arguments as the other servers.)

local uv = require "luv"

local server = uv.new_tcp()
assert(server:bind("127.0.0.1", 0))
assert(server:listen(4096, function(err)
  assert(not err, err)
  local client = uv.new_tcp()
  server:accept(client)
  client:nodelay(true)
  client:read_start(function(rerr, data)
    if rerr or not data then
      client:close()
    else
      client:write(data)
    end
  end)
end))
io.write(server:getsockname().port, "\n")
io.stdout:flush()
uv.run()
