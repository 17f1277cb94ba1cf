-- The Lua module for LuaRocks, built from this checkout (doc/lua.md, "Installing
-- and loading"):
--
--     luarocks --lua-version=5.1 make --tree <tree>    # or 5.2, 5.3, 5.4
--
-- The CMake build (CMakeLists.txt) makes the module for the Lua of LuaRocks'
-- LUA_INCDIR and installs it alone, stripped, in LuaRocks' LIBDIR. Needs
-- cargo, a C compiler, CMake, patchelf and objcopy (binutils); fetches nothing
-- but cargo's crates (none when cargo has them). CARGO_TARGET_DIR shares
-- compiled crates with other builds.
rockspec_format = "3.0"
package = "cothread"
version = "scm-1"
source = {
  url = ".",
}
description = {
  summary = "A scheduler of coroutines on an event loop, written in Rust",
  detailed = [[
    cothread resumes coroutines in turn, wakes them on signals and timers, and
    runs sockets, files, processes and OS signals on its event loop; LuaSocket-
    and cosock-compatible. Lua 5.1, 5.2, 5.3, 5.4 and LuaJIT (the 5.1 build).
  ]],
  license = "MIT",
}
dependencies = {
  "lua >= 5.1, < 5.5",
}
build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    CMAKE_INSTALL_PREFIX = "$(PREFIX)",
    LUA_INCDIR = "$(LUA_INCDIR)",
    COTHREAD_LUAROCKS_LIBDIR = "$(LIBDIR)",
  },
}
