/*
 * The floor of a switch for any Lua C module that yields from C, as cothread
 * does: `run(threads)` resumes a round robin of coroutines with `lua_resume`
 * in C, and `yield()` is a C function that only yields. No scheduler, no
 * checks. bench.lua and switch.lua compare it with cothread and with the bare
 * `coroutine.resume` loop (module `switch_floor`). Builds against any Lua 5.1
 * to 5.4 (LuaJIT runs the 5.1 build); bench/lua/versions.sh builds it:
 *
 *     cc -O2 -shared -fPIC $(pkg-config --cflags lua5.4) \
 *       -o switch_floor.so bench/lua/switch_floor.c
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>

#if LUA_VERSION_NUM >= 502
#define array_len lua_rawlen
#else
#define array_len lua_objlen
#endif

static int floor_yield(lua_State *L) { return lua_yield(L, 0); }

/* Resumes co with no values; its status (0 when it ended, LUA_YIELD). */
static int resume(lua_State *L, lua_State *co) {
#if LUA_VERSION_NUM >= 504
    int nres;
    return lua_resume(co, L, 0, &nres);
#elif LUA_VERSION_NUM >= 502
    return lua_resume(co, L, 0);
#else
    (void)L;
    return lua_resume(co, 0);
#endif
}

/* run(threads): resumes each thread of the array in turn until all ended.
 * The array keeps the threads alive while C holds their pointers. */
static int floor_run(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    int n = (int)array_len(L, 1);
    lua_State **q = malloc((size_t)n * sizeof *q);
    if (q == NULL && n > 0) return luaL_error(L, "out of memory");
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 1, i + 1);
        q[i] = lua_tothread(L, -1);
        lua_pop(L, 1);
        if (q[i] == NULL) {
            free(q);
            return luaL_error(L, "thread expected at index %d", i + 1);
        }
    }
    while (n > 0) {
        int live = 0;
        for (int i = 0; i < n; i++) {
            int status = resume(L, q[i]);
            if (status == LUA_YIELD) {
                q[live++] = q[i];
            } else if (status != 0) {
                free(q);
                return luaL_error(L, "a coroutine failed");
            }
        }
        n = live;
    }
    free(q);
    return 0;
}

int luaopen_switch_floor(lua_State *L) {
    lua_newtable(L);
    lua_pushcfunction(L, floor_yield);
    lua_setfield(L, -2, "yield");
    lua_pushcfunction(L, floor_run);
    lua_setfield(L, -2, "run");
    return 1;
}
