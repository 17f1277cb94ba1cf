// A C++ program embedding Lua 5.4 with cothread (doc/embedding.md): Lua
// cothreads and C++ coroutines on one core, futures crossing both ways.
//
//   host.square(n)       a Lua future that a C++ coroutine settles on a pool thread
//   host.greet(handle)   a C++ coroutine awaits a future that Lua settles
//
// Build: link cothread::lua and your Lua (see doc/embedding.md).
#include <lua.hpp>

#include <cocls/async.h>
#include <cocls/core_future.h>
#include <cocls/thread_pool.h>

#include <chrono>
#include <cstdio>
#include <thread>

extern "C" int luaopen_cothread(lua_State *L);  // libcothread_lua

static cocls::thread_pool *pool;

// ----- C++ settles, Lua awaits -----

/// Moves to a pool thread, works, settles `p` with a heap int (freed with the future).
static cocls::async<void> square(cot_promise *p, int n) {
    co_await *pool;  // from here on, a pool thread
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    cot_promise_set(p, new int(n * n), [](void *v) { delete static_cast<int *>(v); });
    cot_promise_free(p);  // settled: freeing the promise changes nothing
}

/// future = host.square(n)
static int host_square(lua_State *L) {
    int n = static_cast<int>(luaL_checkinteger(L, 1));
    cot_promise *p;
    cot_future *f;
    if (cot_promise_new(&p, &f) != 0) return luaL_error(L, "out of memory");
    square(p, n).detach();
    // Lua wraps the handle, taking its own; then C frees its handle.
    lua_getfield(L, lua_upvalueindex(1), "future_of");
    lua_pushlightuserdata(L, f);
    lua_call(L, 1, 1);
    cot_future_free(f);
    return 1;
}

/// n = host.int_at(pointer): reads a value as C sees it (a light userdata).
static int host_int_at(lua_State *L) {
    luaL_checktype(L, 1, LUA_TLIGHTUSERDATA);
    lua_pushinteger(L, *static_cast<int *>(lua_touserdata(L, 1)));
    return 1;
}

// ----- Lua settles, C++ awaits -----

/// Owns `f` (a handle from future:handle()) and frees it when done.
static cocls::async<void> greet(cot_future *f) {
    try {
        void *v = co_await cocls::core_await(f);  // resumes on the thread that settles
        std::printf("C++ got: %s\n", static_cast<const char *>(v));  // a Lua string's bytes
    } catch (const cocls::core_error &e) {
        std::printf("C++ got error %d: %s\n", e.code(), e.what());
    } catch (const cocls::await_canceled_exception &) {
        std::printf("C++ got: dropped\n");
    }
    cot_future_free(f);
}

/// host.greet(handle)
static int host_greet(lua_State *L) {
    luaL_checktype(L, 1, LUA_TLIGHTUSERDATA);
    greet(static_cast<cot_future *>(lua_touserdata(L, 1))).detach();  // runs until its co_await
    return 0;
}

static const char *const script = R"lua(
local cothread = require "cothread"   -- the module registered by the host

cothread.schedule(coroutine.create(function()
  local f = host.square(7)             -- settled by C++ on a pool thread
  local ok, v = f:await(5)             -- suspends this cothread only
  print("Lua got:", ok, host.int_at(v))

  local p, g = cothread.promise()
  host.greet(g:handle())               -- C++ awaits it (and frees this handle)
  cothread.delay(0.01)
  p:set("hello from Lua")              -- the C++ coroutine runs inside this call
end))

cothread.schedule(coroutine.create(function()
  for i = 1, 3 do
    print("tick " .. i)                -- runs while the other cothread waits
    cothread.delay(0.01)
  end
end))

cothread.run()
print("all done")
)lua";

int main() {
    cocls::thread_pool threads(2);
    pool = &threads;

    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    luaL_requiref(L, "cothread", luaopen_cothread, 0);  // package.loaded.cothread
    static const luaL_Reg host[] = {{"square", host_square}, {"int_at", host_int_at}, {"greet", host_greet}, {nullptr, nullptr}};
    luaL_newlibtable(L, host);
    lua_pushvalue(L, -2);  // the module: an upvalue of each function
    luaL_setfuncs(L, host, 1);
    lua_setglobal(L, "host");
    lua_pop(L, 1);  // the module

    int status = luaL_dostring(L, script);
    if (status != LUA_OK) std::fprintf(stderr, "%s\n", lua_tostring(L, -1));
    lua_close(L);  // before the pool: nothing of Lua's is left on it
    return status == LUA_OK ? 0 : 1;
}
