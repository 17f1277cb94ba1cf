// Futures across languages: the latency of a future settled by a job on a
// pool thread and awaited by a Lua cothread, against the same round trip
// between C++ coroutines, in one run: a coroutine living on a thread of its
// own (a one-thread pool) awaits a cocls future that a job on the other pool
// resolves, then goes back home; as for Lua, two threads wake per round trip.
// Prints ns per round trip and the ratio Lua / C++; the best of ROUNDS runs,
// the sides alternating. More lines place the figures: C++ coroutines that
// stay on the pool thread that resolved their future (cocls's own way: no
// thread wakes at all), and a C loop request (cot_loop_future_wait), the wait
// under Lua's await. Two passes: the job settles at once (the pool mostly
// wins the race, and the waiter finds the future settled), then after 20 us
// of busy work (every waiter suspends, and its thread sleeps).
//
//     make -C bench/embed run          (after `cmake --build build`)
//     COT_BENCH_OPS=50000 COT_BENCH_ROUNDS=5 bench/embed/bench-embed
#include <lua.hpp>

#include <cocls/async.h>
#include <cocls/core_future.h>
#include <cocls/future.h>
#include <cocls/thread_pool.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" int luaopen_cothread(lua_State *L);

static long ops = 20000;
static cocls::thread_pool *pool;
static int the_value = 1;
/// How long a pool job works before it settles (busy, so that no thread sleeps
/// for it): 0 measures the plain round trip, in which the pool mostly settles
/// before the waiter looks; a delay makes every await suspend.
static double work_ns = 0;

static double now_ns() {
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static void work() {
    if (work_ns <= 0) return;
    for (double end = now_ns() + work_ns; now_ns() < end;) {
    }
}

/// A new core future, settled by a job on a pool thread.
static cot_future *settled_on_pool() {
    cot_promise *p;
    cot_future *f;
    if (cot_promise_new(&p, &f) != 0) std::abort();
    pool->run_detached([p] {
        work();
        cot_promise_set(p, &the_value, nullptr);
        cot_promise_free(p);
    });
    return f;
}

// ===== Lua: a cothread awaits =====

/// future = host_future(): a Lua future of settled_on_pool().
static int host_future(lua_State *L) {
    cot_future *f = settled_on_pool();
    lua_getfield(L, lua_upvalueindex(1), "future_of");
    lua_pushlightuserdata(L, f);
    lua_call(L, 1, 1);
    cot_future_free(f);  // Lua holds its own handle
    return 1;
}

static const char *const lua_loop = R"lua(
  local cothread, n = ...
  suspended = 0
  cothread.schedule(coroutine.create(function()
    for _ = 1, n do
      local f = host_future()
      if not f:ready() then suspended = suspended + 1 end
      local ok, v = f:await()
      if not ok then error("round trip failed: " .. tostring(v)) end
    end
  end))
  cothread.run()
)lua";

static lua_State *L;

static double lua_round_trip() {
    if (luaL_loadbuffer(L, lua_loop, std::strlen(lua_loop), "bench") != LUA_OK) std::abort();
    lua_getglobal(L, "cothread");
    lua_pushinteger(L, ops);
    double t0 = now_ns();
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
        std::fprintf(stderr, "%s\n", lua_tostring(L, -1));
        std::exit(1);
    }
    return (now_ns() - t0) / double(ops);
}

// ===== C++: a coroutine awaits a cocls future =====

static cocls::thread_pool *home;

/// Lives on `home`: each round trip goes to the pool and back.
static cocls::future<long> cpp_hop_waiter() {
    long sum = 0;
    co_await *home;
    for (long i = 0; i < ops; i++) {
        cocls::future<int> f([](cocls::promise<int> p) {
            pool->run_detached([p = std::move(p)]() mutable {
                work();
                p(1);
            });
        });
        sum += co_await f;  // resumes on the pool thread
        co_await *home;     // and back
    }
    co_return sum;
}

static double cpp_hop_round_trip() {
    double t0 = now_ns();
    if (cpp_hop_waiter().join() != ops) std::abort();
    return (now_ns() - t0) / double(ops);
}

/// Stays on the pool thread that resolved the last future.

static cocls::future<long> cpp_waiter() {
    long sum = 0;
    for (long i = 0; i < ops; i++) {
        cocls::future<int> f([](cocls::promise<int> p) {
            pool->run_detached([p = std::move(p)]() mutable {
                work();
                p(1);
            });
        });
        sum += co_await f;  // resumes on the pool thread that resolved it
    }
    co_return sum;
}

static double cpp_round_trip() {
    double t0 = now_ns();
    if (cpp_waiter().join() != ops) std::abort();
    return (now_ns() - t0) / double(ops);
}

// ===== C++: a coroutine awaits a core future =====

static cocls::future<long> core_waiter() {
    long sum = 0;
    for (long i = 0; i < ops; i++) {
        cot_future *f = settled_on_pool();
        sum += *static_cast<int *>(co_await cocls::core_await(f));
        cot_future_free(f);
    }
    co_return sum;
}

static double core_round_trip() {
    double t0 = now_ns();
    if (core_waiter().join() != ops) std::abort();
    return (now_ns() - t0) / double(ops);
}

// ===== C: a loop request on this thread =====

static double loop_round_trip() {
    cot_loop *loop = cot_loop_new();
    long done = 0;
    double t0 = now_ns();
    for (long i = 0; i < ops; i++) {
        cot_future *f = settled_on_pool();
        cot_loop_future_wait(
            loop, f, [](cot_loop *, cot_req, const cot_future *, int, void *d) { ++*static_cast<long *>(d); },
            &done, nullptr);
        cot_future_free(f);  // the request holds its own
        cot_loop_run(loop, COT_RUN_DEFAULT);
    }
    double t = (now_ns() - t0) / double(ops);
    if (done != ops) std::abort();
    cot_loop_close(loop);
    return t;
}

int main() {
    if (const char *s = std::getenv("COT_BENCH_OPS")) ops = std::atol(s);
    int rounds = 5;
    if (const char *s = std::getenv("COT_BENCH_ROUNDS")) rounds = std::atoi(s);
    cocls::thread_pool threads(1), home_thread(1);
    pool = &threads;
    home = &home_thread;

    L = luaL_newstate();
    luaL_openlibs(L);
    luaL_requiref(L, "cothread", luaopen_cothread, 1);
    lua_pushcclosure(L, host_future, 1);  // the module table as its upvalue
    lua_setglobal(L, "host_future");

    for (double delay : {0.0, 20000.0}) {
        work_ns = delay;
        double lua = 1e300, hop = 1e300, cpp = 1e300, core = 1e300, loop = 1e300;
        long suspended = 0;
        for (int r = 0; r < rounds; r++) {
            lua = std::min(lua, lua_round_trip());
            lua_getglobal(L, "suspended");
            suspended = std::max(suspended, static_cast<long>(lua_tointeger(L, -1)));
            lua_pop(L, 1);
            hop = std::min(hop, cpp_hop_round_trip());
            cpp = std::min(cpp, cpp_round_trip());
            core = std::min(core, core_round_trip());
            loop = std::min(loop, loop_round_trip());
        }
        std::printf("future settled on a pool thread (1 thread) after %.0f ns of work, awaited; %ld round trips, best of %d\n",
                    delay, ops, rounds);
        std::printf("  %-70s %6.0f ns  (%.0f %% of the awaits suspended)\n",
                    "Lua cothread, future:await(), back on the Lua thread", lua, 100.0 * double(suspended) / double(ops));
        std::printf("  %-70s %6.0f ns\n", "C++ coroutine, co_await cocls::future, then back to its thread", hop);
        std::printf("  ratio Lua / C++: %.2fx", lua / hop);
        if (delay > 0) std::printf("  (beyond the work: %.0f ns / %.0f ns = %.2fx)", lua - delay, hop - delay, (lua - delay) / (hop - delay));
        std::printf("\n");
        std::printf("  %-70s %6.0f ns\n", "C++ coroutine, co_await cocls::future, staying on the pool", cpp);
        std::printf("  %-70s %6.0f ns\n", "C++ coroutine, co_await core_await(cot_future *), staying on the pool", core);
        std::printf("  %-70s %6.0f ns\n", "C, cot_loop_future_wait, back on the loop's thread", loop);
        std::printf("  ratio Lua / C loop request: %.2fx\n", lua / loop);
    }
    lua_close(L);
    return 0;
}
