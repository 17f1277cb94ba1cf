/* A host embedding Lua with the installed cothread::lua (Lua 5.4), or LuaJIT with
 * cothread::lua51: the module is registered from the linked library (no
 * cothread.so is loaded), a Lua cothread awaits a future this host settles from
 * C, and the run returns. */
#include <cothread.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>

int luaopen_cothread(lua_State *L); /* in libcothread_lua */

static const char chunk[] =
    "local cothread = require 'cothread'\n"
    "local future, expected = cothread.future_of((...)), select(2, ...)\n"
    "local got\n"
    "cothread.schedule(coroutine.create(function() got = { future:await(5) } end))\n"
    "cothread.run()\n"
    "assert(got[1] == true and got[2] == expected, tostring(got[2]))\n";

static char value[] = "from C"; /* C values reach Lua as light userdata */

static void set_from_c(void *data, int status) {
    if (status == 0) cot_promise_set(data, value, NULL);
}

int main(void) {
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    /* luaL_requiref(L, "cothread", luaopen_cothread, 0), which LuaJIT lacks */
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "loaded");
    lua_pushcfunction(L, luaopen_cothread);
    lua_call(L, 0, 1);
    lua_setfield(L, -2, "cothread");
    lua_pop(L, 2);
    cot_promise *p;
    cot_future *f;
    if (cot_promise_new(&p, &f) != 0) return 1;
    cot_pool *pool = cot_pool_new(1);
    if (luaL_loadstring(L, chunk) != LUA_OK) return 1;
    lua_pushlightuserdata(L, f);
    lua_pushlightuserdata(L, value);
    if (cot_pool_submit(pool, set_from_c, p) != 0) return 1; /* settled on a pool thread */
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
        fprintf(stderr, "%s\n", lua_tostring(L, -1));
        return 1;
    }
    cot_pool_free(pool);
    cot_future_free(f);
    cot_promise_free(p);
    lua_close(L);
    puts("consumer_lua ok");
    return 0;
}
