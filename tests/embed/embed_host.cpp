// A C++ host embedding Lua 5.4 with cothread::lua, or LuaJIT with cothread::lua51
// (the same source, built twice): one core serves the Lua
// cothreads, the C++ coroutines and plain C, and futures cross between them.
//   a. a Lua cothread awaits futures that C++ coroutines settle on pool threads
//      (a raw cot_promise, and a cocls::future through to_core), other cothreads
//      ticking meanwhile;
//   b. C++ coroutines (core_await) await futures that a Lua cothread settles:
//      a string, a light userdata, an error, a promise collected unsettled;
//   c. promises dropped on the C++ side (cot_promise_free, a cocls promise
//      through to_core) end the Lua await with false, "dropped";
//   d. a Lua future collected while C holds a handle of it stays valid;
//   e. stress: 100 000 futures settled by 4 threads, awaited by 1 000 cothreads;
//   f. one loop: a scheduler attached to a cot_loop the host made, on which a C
//      stackful coroutine awaits a future a Lua cothread settles, then notifies
//      a loop signal that the Lua cothread waits on (cothread.loop_wait); the
//      scheduler collected leaves nothing on the host's loop.
// The Lua side runs in cothread.run() called from here; every await has a
// time limit, so a lost wakeup fails instead of hanging.
#include <lua.hpp>

#include <cocls/async.h>
#include <cocls/core_future.h>
#include <cocls/future.h>
#include <cocls/thread_pool.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <list>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../cpp/check.h"

extern "C" int luaopen_cothread(lua_State *L);  // in libcothread_lua

namespace {

using namespace std::chrono_literals;

cocls::thread_pool *g_pool;         // 2 threads, made by main
std::thread::id g_lua_thread;       // the only thread that touches Lua

// ===== helpers =====

/// Runs a chunk; a Lua error (an assert in a cothread included) fails the test.
void run_lua(lua_State *L, const char *name, const char *code) {
    lua_getglobal(L, "debug");
    lua_getfield(L, -1, "traceback");
    lua_remove(L, -2);
    if (luaL_loadbuffer(L, code, std::strlen(code), name) != LUA_OK || lua_pcall(L, 0, 0, -2) != LUA_OK) {
        std::fprintf(stderr, "%s: %s\n", name, lua_tostring(L, -1));
        std::exit(1);
    }
    lua_pop(L, 1);
}

/// `[-0, +1]` Hands the C future `f` to Lua as a future object and frees the
/// C handle: cothread.future_of takes a handle of its own.
void push_future(lua_State *L, cot_future *f) {
    lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");  // LUA_LOADED_TABLE, unnamed in LuaJIT
    lua_getfield(L, -1, "cothread");
    lua_getfield(L, -1, "future_of");
    lua_replace(L, -3);
    lua_pop(L, 1);
    lua_pushlightuserdata(L, f);
    lua_call(L, 1, 1);
    cot_future_free(f);
}

/// The light userdata at `idx` (a value as C sees it), or raises.
void *check_pointer(lua_State *L, int idx) {
    luaL_checktype(L, idx, LUA_TLIGHTUSERDATA);
    return lua_touserdata(L, idx);
}

// ===== a. Lua awaits what C++ coroutines settle on pool threads =====

std::atomic<int> g_settled_on_pool{0};      // settles that ran on a pool thread
std::atomic<int> g_lua_ticks{0};            // the Lua ticker's count (host.tick)

/// Holds a pool thread until the Lua ticker counted `ticks` (at most 10 s):
/// a settle that waits for Lua to run proves the await did not block it,
/// whatever the machine's speed.
void wait_for_ticks(int ticks) {
    for (int i = 0; i < 10'000 && g_lua_ticks.load() < ticks; i++) std::this_thread::sleep_for(1ms);
}
std::list<cocls::future<int>> g_cpp_futures;  // to_core's sources: must outlive their resolution

/// A C++ coroutine that moves to a pool thread and settles `p` there.
cocls::async<void> square_on_pool(cot_promise *p, int n, int ticks) {
    co_await *g_pool;  // now on a pool thread
    wait_for_ticks(ticks);
    if (is_current(*g_pool) && std::this_thread::get_id() != g_lua_thread) g_settled_on_pool++;
    auto *v = new int(n * n);
    if (cot_promise_set(p, v, [](void *x) { delete static_cast<int *>(x); }) != 0) delete v;
    cot_promise_free(p);
}

/// The same as a cocls future: to_core hands C a heap copy of the int.
cocls::async<int> cube_on_pool(int n, int ticks) {
    co_await *g_pool;
    wait_for_ticks(ticks);
    if (is_current(*g_pool)) g_settled_on_pool++;
    co_return n * n * n;
}

/// host.tick(): the Lua ticker counts.
int host_tick(lua_State *) {
    g_lua_ticks++;
    return 0;
}

/// future = host.pool_square(n, ticks): settled on a pool thread once the
/// ticker counted `ticks`.
int host_pool_square(lua_State *L) {
    int n = static_cast<int>(luaL_checkinteger(L, 1));
    int ticks = static_cast<int>(luaL_checkinteger(L, 2));
    cot_promise *p;
    cot_future *f;
    CHECK_EQ(cot_promise_new(&p, &f), 0);
    square_on_pool(p, n, ticks).detach();
    push_future(L, f);
    return 1;
}

/// future = host.pool_cube(n, ticks)
int host_pool_cube(lua_State *L) {
    int n = static_cast<int>(luaL_checkinteger(L, 1));
    int ticks = static_cast<int>(luaL_checkinteger(L, 2));
    cocls::future<int> &fut = g_cpp_futures.emplace_back([&](cocls::promise<int> p) {
        cube_on_pool(n, ticks).start(std::move(p));
    });
    push_future(L, cocls::to_core(fut));
    return 1;
}

/// n = host.int_at(pointer)
int host_int_at(lua_State *L) {
    lua_pushinteger(L, *static_cast<int *>(check_pointer(L, 1)));
    return 1;
}

const char *const lua_awaits_cpp = R"lua(
  local ticks, done = 0, false
  cothread.schedule(coroutine.create(function()
    while not done do ticks = ticks + 1; host.tick(); cothread.delay(0.001) end
  end))
  cothread.schedule(coroutine.create(function()
    local f = host.pool_square(12, 3) -- settled once the ticker counted 3
    assert(not f:ready() and f:state() == "pending")
    local ok, v = f:await(10)
    assert(ok == true, v)
    assert(type(v) == "userdata", "a C value is a light userdata")
    assert(host.int_at(v) == 144)
    assert(ticks >= 3, "other cothreads ran during the await: " .. ticks)
    assert(f:state() == "value" and select(2, f:value()) == v)

    local before = ticks
    local g = host.pool_cube(3, before + 1)
    ok, v = g:await(10)
    assert(ok == true, v)
    assert(host.int_at(v) == 27, "to_core's copy of the cocls value")
    assert(ticks > before, "ticked during the second await")
    done = true
    a_done = true
  end))
  cothread.run()
  assert(a_done, "run returned before the awaiting cothread ended")
)lua";

// ===== b. C++ awaits what a Lua cothread settles =====

int g_token = 7;                         // a host object handed to Lua as a light userdata
std::string g_cpp_result;                // what the last awaiting coroutine saw
std::atomic<bool> g_cpp_done{false};
bool g_cpp_on_lua_thread = false;

/// Awaits `f` (and frees it: the coroutine owns that handle), describing what came.
cocls::async<void> describe(cot_future *f, bool as_string) {
    std::string out;
    try {
        void *v = co_await cocls::core_await(f);
        out = as_string ? "string:" + std::string(static_cast<const char *>(v))
                        : (v == &g_token ? "pointer:token" : "pointer:other");
    } catch (const cocls::core_error &e) {
        out = "error:" + std::to_string(e.code()) + ":" + e.what();
    } catch (const cocls::await_canceled_exception &) {
        out = "dropped";
    }
    cot_future_free(f);
    g_cpp_on_lua_thread = std::this_thread::get_id() == g_lua_thread;
    g_cpp_result = out;
    g_cpp_done = true;
}

/// host.cpp_await(handle, "string" | "pointer"): a C++ coroutine awaits the handle (taking it).
int host_cpp_await(lua_State *L) {
    auto *f = static_cast<cot_future *>(check_pointer(L, 1));
    const char *kind = luaL_checkstring(L, 2);
    g_cpp_done = false;
    g_cpp_result.clear();
    describe(f, std::strcmp(kind, "string") == 0).detach();  // runs to its co_await
    return 0;
}

/// result = host.cpp_result(): nil while the coroutine waits.
int host_cpp_result(lua_State *L) {
    if (!g_cpp_done) return 0;
    CHECK(g_cpp_on_lua_thread);  // resumed inside the Lua call that settled it
    lua_pushstring(L, g_cpp_result.c_str());
    return 1;
}

int host_token(lua_State *L) {
    lua_pushlightuserdata(L, &g_token);
    return 1;
}

const char *const cpp_awaits_lua = R"lua(
  cothread.schedule(coroutine.create(function()
    local p, f = cothread.promise()
    host.cpp_await(f:handle(), "string")
    assert(host.cpp_result() == nil, "the C++ coroutine waits")
    cothread.delay(0.01)
    assert(host.cpp_result() == nil, "still waiting")
    assert(p:set("hello from Lua") == true)
    assert(host.cpp_result() == "string:hello from Lua", host.cpp_result())

    local p2, f2 = cothread.promise()
    host.cpp_await(f2:handle(), "pointer")
    cothread.delay(0.005)
    p2:set(host.token())
    assert(host.cpp_result() == "pointer:token", host.cpp_result())

    local p3, f3 = cothread.promise()
    host.cpp_await(f3:handle(), "string")
    p3:fail("no luck", -71)
    assert(host.cpp_result() == "error:-71:no luck", host.cpp_result())

    -- A promise collected unsettled drops the future C++ awaits.
    local p4, f4 = cothread.promise()
    host.cpp_await(f4:handle(), "string")
    p4 = nil
    collectgarbage(); collectgarbage()
    assert(host.cpp_result() == "dropped", host.cpp_result())
    b_done = true
  end))
  cothread.run()
  assert(b_done)
)lua";

// ===== c. promises dropped on the C++ side =====

/// future = host.dropped_raw(ms): its cot_promise is freed unsettled on a pool thread.
int host_dropped_raw(lua_State *L) {
    int ms = static_cast<int>(luaL_checkinteger(L, 1));
    cot_promise *p;
    cot_future *f;
    CHECK_EQ(cot_promise_new(&p, &f), 0);
    g_pool->run_detached([p, ms] {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        cot_promise_free(p);
    });
    push_future(L, f);
    return 1;
}

/// future = host.dropped_cocls(ms): a cocls promise, exposed through to_core,
/// destroyed unset on a pool thread.
int host_dropped_cocls(lua_State *L) {
    int ms = static_cast<int>(luaL_checkinteger(L, 1));
    cocls::future<int> &fut = g_cpp_futures.emplace_back();
    auto prom = std::make_shared<cocls::promise<int>>(fut.get_promise());
    cot_future *f = cocls::to_core(fut);
    g_pool->run_detached([prom, ms] {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        cocls::promise<int> gone(std::move(*prom));
    });  // `gone` dies unset: the cocls future, and so the core one, is dropped
    push_future(L, f);
    return 1;
}

const char *const dropped_on_cpp = R"lua(
  local function pack(...) return { n = select("#", ...), ... } end  -- table.pack, not in LuaJIT
  cothread.schedule(coroutine.create(function()
    local f = host.dropped_raw(100)
    assert(f:state() == "pending")
    local r = pack(f:await(10))
    assert(r.n == 2 and r[1] == false and r[2] == "dropped", tostring(r[2]))
    assert(f:state() == "dropped")

    local g = host.dropped_cocls(100)
    r = pack(g:await(10))
    assert(r.n == 2 and r[1] == false and r[2] == "dropped", tostring(r[2]))

    -- Dropped before the await: no suspension, the same result.
    local h = host.dropped_raw(0)
    while not h:ready() do cothread.delay(0.001) end
    r = pack(h:await(10))
    assert(r[1] == false and r[2] == "dropped")
    c_done = true
  end))
  cothread.run()
  assert(c_done)
)lua";

// ===== d. a Lua future collected while C holds it =====

cot_future *g_held;               // from future:handle(), C's own
std::thread g_holder;             // waits on g_held, blocking
std::string g_holder_saw;

/// host.hold(handle)
int host_hold(lua_State *L) {
    g_held = static_cast<cot_future *>(check_pointer(L, 1));
    CHECK_EQ(cot_future_state(g_held), COT_FUTURE_PENDING);
    return 0;
}

/// host.wait_held_elsewhere(): a thread blocks on the held future, reads it, frees it.
int host_wait_held_elsewhere(lua_State *) {
    g_holder = std::thread([] {
        CHECK_EQ(cot_future_wait(g_held, 10'000'000'000), 0);
        void *v = nullptr;
        CHECK_EQ(cot_future_result(g_held, &v, nullptr), 0);
        g_holder_saw = static_cast<const char *>(v);
        cot_future_free(g_held);  // the last handle, maybe: the Lua value is released later, on the Lua thread
        g_held = nullptr;
    });
    return 0;
}

/// state = host.held_state()
int host_held_state(lua_State *L) {
    static const char *const names[] = {"pending", "value", "error", "dropped"};
    int s = cot_future_state(g_held);
    CHECK(s >= 0 && s < 4);
    lua_pushstring(L, names[s]);
    return 1;
}

/// seen = host.join_holder()
int host_join_holder(lua_State *L) {
    g_holder.join();
    lua_pushstring(L, g_holder_saw.c_str());
    return 1;
}

const char *const collected_while_held = R"lua(
  cothread.schedule(coroutine.create(function()
    local p, f = cothread.promise()
    host.hold(f:handle())
    local weak = setmetatable({ f }, { __mode = "v" })
    f = nil
    collectgarbage(); collectgarbage()
    assert(weak[1] == nil, "the Lua future was collected")
    assert(host.held_state() == "pending")
    host.wait_held_elsewhere()
    cothread.delay(0.01)
    assert(p:set("set after the collection") == true)
    p = nil
    collectgarbage(); collectgarbage()   -- the promise goes too: C holds the last handle
    assert(host.join_holder() == "set after the collection")
    d_done = true
  end))
  cothread.run()
  assert(d_done)
)lua";

// ===== e. stress =====

constexpr int stress_futures = 100'000;
constexpr int stress_threads = 4;
constexpr int stress_cothreads = 1'000;

std::atomic<long> g_live{0};  // values alive: counted destroys each
std::atomic<long> g_made{0};
struct counted {
    int id;
    explicit counted(int i) : id(i) { g_live++, g_made++; }
    ~counted() { g_live--; }
};

std::vector<cot_future *> g_stress_futures;          // C's handles, until handed to Lua
std::vector<std::vector<std::pair<int, cot_promise *>>> g_stress_promises;  // one share per thread
std::vector<unsigned char> g_received;
std::vector<std::thread> g_settlers;

/// n_futures, n_cothreads = host.stress_setup()
int host_stress_setup(lua_State *L) {
    g_stress_futures.assign(stress_futures, nullptr);
    g_stress_promises.assign(stress_threads, {});
    g_received.assign(stress_futures, 0);
    std::mt19937 rng(12345);
    for (int i = 0; i < stress_futures; i++) {
        cot_promise *p;
        CHECK_EQ(cot_promise_new(&p, &g_stress_futures[i]), 0);
        g_stress_promises[static_cast<size_t>(i % stress_threads)].emplace_back(i, p);
    }
    // Each thread settles its share in its own order: awaits meet every mix of
    // settled and pending futures.
    for (auto &share : g_stress_promises) std::shuffle(share.begin(), share.end(), rng);
    lua_pushinteger(L, stress_futures);
    lua_pushinteger(L, stress_cothreads);
    return 2;
}

/// future = host.stress_future(i)
int host_stress_future(lua_State *L) {
    lua_Integer i = luaL_checkinteger(L, 1);
    luaL_argcheck(L, i >= 0 && i < stress_futures && g_stress_futures[static_cast<size_t>(i)], 1,
                  "no such future (or handed out already)");
    cot_future *f = g_stress_futures[static_cast<size_t>(i)];
    g_stress_futures[static_cast<size_t>(i)] = nullptr;
    push_future(L, f);
    return 1;
}

/// host.stress_go(): the settling threads start.
int host_stress_go(lua_State *) {
    for (auto &share : g_stress_promises) {
        g_settlers.emplace_back([&share] {
            for (size_t k = 0; k < share.size(); k++) {
                auto [i, p] = share[k];
                auto *v = new counted(i);
                CHECK_EQ(cot_promise_set(p, v, [](void *x) { delete static_cast<counted *>(x); }), 0);
                cot_promise_free(p);
                if (k % 64 == 0) std::this_thread::yield();
            }
        });
    }
    return 0;
}

/// id = host.stress_take(pointer): marks the value received (once).
int host_stress_take(lua_State *L) {
    auto *c = static_cast<counted *>(check_pointer(L, 1));
    CHECK(c->id >= 0 && c->id < stress_futures);
    CHECK_EQ(g_received[static_cast<size_t>(c->id)]++, 0);
    lua_pushinteger(L, c->id);
    return 1;
}

const char *const stress = R"lua(
  local n, c = host.stress_setup()
  local per = math.floor(n / c)  -- no // before Lua 5.3
  local sum, pending, finished = 0, 0, 0
  for k = 0, c - 1 do
    cothread.schedule(coroutine.create(function()
      for j = 0, per - 1 do
        local i = k * per + j
        local f = host.stress_future(i)
        if not f:ready() then pending = pending + 1 end
        local ok, v = f:await(30)
        assert(ok == true, v)
        assert(host.stress_take(v) == i, "future " .. i .. " gave another's value")
        sum = sum + i
      end
      finished = finished + 1
    end))
  end
  -- Last in the queue: every cothread waits on its first future by then.
  cothread.schedule(coroutine.create(function() host.stress_go() end))
  cothread.run()
  assert(finished == c, "finished " .. finished .. " of " .. c)
  assert(sum == n * (n - 1) / 2, "sum " .. sum)
  assert(pending >= c, "awaits that suspended: " .. pending)
  stress_pending = pending
)lua";

// ===== f. one loop: Lua attached to the host's loop, with a C coroutine =====

cot_loop *g_loop;
cot_promise *g_coro_promise;  // settled by Lua
cot_future *g_coro_future;    // awaited by the C coroutine
const char g_signal = 0;      // its address is the loop signal
std::string g_coro_got;
bool g_coro_notified;

void *c_coroutine(void *) {
    CHECK_EQ(cot_coro_await(g_coro_future, 5'000'000'000), 0);
    void *v = nullptr;
    CHECK_EQ(cot_future_result(g_coro_future, &v, nullptr), 0);
    g_coro_got = static_cast<const char *>(v);  // a Lua string, as C sees it
    CHECK_EQ(cot_coro_sleep(1'000'000), 0);
    CHECK(cot_loop_notify(cot_coro_loop(cot_coro_current()), &g_signal, COT_LATER) >= 0);
    g_coro_notified = true;
    return nullptr;
}

int host_loop(lua_State *L) {
    lua_pushlightuserdata(L, g_loop);
    lua_pushlightuserdata(L, const_cast<char *>(&g_signal));
    lua_pushlightuserdata(L, g_coro_promise);
    return 3;
}

const char *one_loop = R"lua(
  local function pack(...) return { n = select("#", ...), ... } end
  local loop, signal, promise = host.loop()
  local S = cothread.new()
  assert(S.attach(loop) == true)
  assert(not pcall(S.attach, loop), "a second attach raises")
  local p = S.promise_of(promise)
  local got
  S.schedule(coroutine.create(function()
    assert(p:set("from lua"))
    got = pack(S.loop_wait(signal, 5))
  end))
  S.run()
  assert(got and got[1] == true, "loop_wait: " .. tostring(got and got[2]))
  assert(not pcall(S.loop_wait, signal), "outside a cothread it raises")
)lua";

void one_loop_scenario(lua_State *L) {
    g_loop = cot_loop_new();
    CHECK(g_loop != nullptr);
    CHECK_EQ(cot_promise_new(&g_coro_promise, &g_coro_future), 0);
    cot_coro *co = nullptr;
    CHECK_EQ(cot_coro_new(g_loop, c_coroutine, nullptr, 0, &co), 0);
    CHECK_EQ(cot_coro_start(co), 0);
    run_lua(L, "f: one loop", one_loop);  // Lua's run drives the host's loop
    CHECK(g_coro_got == "from lua");
    CHECK(g_coro_notified);
    CHECK_EQ(cot_coro_status(co), COT_CORO_FINISHED);
    CHECK_EQ(cot_coro_free(co), 0);
    lua_gc(L, LUA_GCCOLLECT, 0);  // the scheduler goes: its handles close on the loop
    lua_gc(L, LUA_GCCOLLECT, 0);
    CHECK_EQ(cot_loop_run(g_loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_loop_close(g_loop), 0);
    cot_promise_free(g_coro_promise);
    cot_future_free(g_coro_future);
}

void register_host(lua_State *L) {
    static const luaL_Reg fns[] = {
        {"pool_square", host_pool_square},
        {"pool_cube", host_pool_cube},
        {"int_at", host_int_at},
        {"cpp_await", host_cpp_await},
        {"cpp_result", host_cpp_result},
        {"token", host_token},
        {"dropped_raw", host_dropped_raw},
        {"dropped_cocls", host_dropped_cocls},
        {"hold", host_hold},
        {"wait_held_elsewhere", host_wait_held_elsewhere},
        {"held_state", host_held_state},
        {"join_holder", host_join_holder},
        {"stress_setup", host_stress_setup},
        {"stress_future", host_stress_future},
        {"stress_go", host_stress_go},
        {"stress_take", host_stress_take},
        {"tick", host_tick},
        {"loop", host_loop},
        {nullptr, nullptr},
    };
    luaL_newlib(L, fns);
    lua_setglobal(L, "host");
}

/// `[-0, +0]` Opens the module of this process's core as package.loaded.cothread
/// and the global cothread: luaL_requiref(L, "cothread", luaopen_cothread, 1),
/// which LuaJIT lacks.
void open_cothread(lua_State *L) {
    lua_pushcfunction(L, luaopen_cothread);
    lua_pushstring(L, "cothread");
    lua_call(L, 1, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "cothread");
    lua_pop(L, 1);
    lua_setglobal(L, "cothread");
}

}  // namespace

int main() {
    g_lua_thread = std::this_thread::get_id();
    cocls::thread_pool pool(2);
    g_pool = &pool;

    lua_State *L = luaL_newstate();
    CHECK(L != nullptr);
    luaL_openlibs(L);
    open_cothread(L);
    register_host(L);

    auto t0 = std::chrono::steady_clock::now();
    run_lua(L, "a: Lua awaits C++", lua_awaits_cpp);
    CHECK_EQ(g_settled_on_pool.load(), 2);
    run_lua(L, "b: C++ awaits Lua", cpp_awaits_lua);
    run_lua(L, "c: dropped on the C++ side", dropped_on_cpp);
    run_lua(L, "d: collected while C holds it", collected_while_held);
    CHECK(g_held == nullptr);
    one_loop_scenario(L);

    auto t1 = std::chrono::steady_clock::now();
    run_lua(L, "e: stress", stress);
    for (auto &t : g_settlers) t.join();
    for (unsigned char r : g_received) CHECK_EQ(static_cast<int>(r), 1);
    lua_getglobal(L, "stress_pending");
    std::printf("stress: %d futures, %d cothreads, %d threads: %lld awaits suspended, %.0f ms\n",
                stress_futures, stress_cothreads, stress_threads, static_cast<long long>(lua_tointeger(L, -1)),
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count());
    lua_pop(L, 1);
    // A value lives while a handle does; Lua's futures are the last ones.
    CHECK_EQ(g_made.load(), static_cast<long>(stress_futures));
    lua_gc(L, LUA_GCCOLLECT, 0);
    lua_gc(L, LUA_GCCOLLECT, 0);
    CHECK_EQ(g_live.load(), 0L);

    lua_close(L);
    pool.stop();
    g_cpp_futures.clear();
    std::printf("embed_host: all scenarios passed (%.0f ms before the stress)\n",
                std::chrono::duration<double, std::milli>(t1 - t0).count());
    return 0;
}
