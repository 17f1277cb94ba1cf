// loop_group: loops on their own threads, each() on each, invoke_on and
// invoke_on_all (results, exceptions, the caller's stop token reaching the
// invoked task), hand_off of a connection with the bytes it holds, and the
// shutdown of ~loop_group stopping tasks that would run forever. Threaded:
// also under ThreadSanitizer (scripts/tsan-c).
#include <cothread/loop_group.h>
#include <cothread/switch_to.h>
#include <cothread/when_all.h>
#include <cothread/tcp.h>
#include <cothread/timer.h>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

#include "check.h"

using namespace std::chrono_literals;
using cothread::task;

static void test_each_runs_on_each_thread() {
    cothread::loop_group g({.loops = 3});
    CHECK_EQ(g.size(), 3u);
    CHECK(g.current() == nullptr);  // main runs none of them
    std::vector<std::thread::id> ids(3);
    std::vector<int> current_ok(3, 0);
    g.each([&](cothread::loop &lp, std::size_t i) {
        ids[i] = std::this_thread::get_id();
        current_ok[i] = g.current() == &lp && &g[i] == &lp;
    });
    for (std::size_t i = 0; i < 3; i++) {
        CHECK(current_ok[i]);
        CHECK(ids[i] != std::this_thread::get_id());
        for (std::size_t j = 0; j < i; j++) CHECK(ids[i] != ids[j]);
    }
}

static int index_of(cothread::loop_group &g) {
    for (std::size_t i = 0; i < g.size(); i++)
        if (g.current() == &g[i]) return static_cast<int>(i);
    return -1;
}

static task<void> ask(cothread::loop_group &g, std::promise<std::vector<int>> &out) {
    std::vector<int> got;
    got.push_back(co_await cothread::invoke_on(g[1], [&] { return index_of(g); }));
    got.push_back(co_await cothread::invoke_on(g[2], [&]() -> task<int> {
        co_await cothread::sleep_for(1ms);
        co_return index_of(g);
    }));
    got.push_back(index_of(g));  // resumed on its own loop
    try {
        co_await cothread::invoke_on(g[1], []() -> int { throw std::runtime_error("boom"); });
        got.push_back(-1);
    } catch (const std::runtime_error &e) {
        got.push_back(std::strcmp(e.what(), "boom") == 0 ? 7 : -2);
    }
    std::vector<int> all = co_await cothread::invoke_on_all(g, [&] { return index_of(g); });
    got.insert(got.end(), all.begin(), all.end());
    std::atomic<int> ran{0};
    co_await cothread::invoke_on_all(g, [&] { ran++; });
    got.push_back(ran.load());
    out.set_value(got);
}

static void test_invoke() {
    cothread::loop_group g({.loops = 3});
    std::promise<std::vector<int>> p;
    auto f = p.get_future();
    g[0].spawn_detached(ask(g, p));
    CHECK(f.wait_for(60s) == std::future_status::ready);
    std::vector<int> want{1, 2, 0, 7, 0, 1, 2, 3};
    CHECK(f.get() == want);
}

// The caller is stopped while the invoked task sleeps: the stop reaches it.
static task<void> ask_forever(cothread::loop_group &g, std::promise<bool> &out) {
    try {
        co_await cothread::invoke_on(g[1], []() -> task<void> { co_await cothread::sleep_for(3600s); });
        out.set_value(false);
    } catch (const std::system_error &e) {
        out.set_value(e.code() == std::errc::operation_canceled);
    }
}

static void test_stop_reaches_the_invoked_task() {
    cothread::loop_group g({.loops = 2});
    std::stop_source src;
    std::promise<bool> p;
    auto f = p.get_future();
    auto started = std::chrono::steady_clock::now();
    g[0].spawn_detached(ask_forever(g, p), src.get_token());
    std::this_thread::sleep_for(50ms);
    src.request_stop();
    CHECK(f.wait_for(60s) == std::future_status::ready);
    CHECK(f.get());
    CHECK(std::chrono::steady_clock::now() - started < 30s);
}

// A connection read in part on loop 0 moves to loop 1, which reads the rest.
static task<void> serve(cothread::loop_group &g, cothread::tcp_socket s, std::promise<std::string> &out) {
    char buf[16];
    std::error_code ec;
    std::size_t n = co_await s.read(std::span<char>(buf, sizeof buf), ec);  // chars, error_code form
    CHECK(!ec);
    out.set_value(std::to_string(index_of(g)) + ":" + std::string(buf, n));
}

static task<void> accept_and_hand_off(cothread::loop_group &g, cothread::tcp_listener &l, std::promise<std::string> &out,
                                      std::promise<char> &first) {
    cothread::tcp_socket s = co_await l.accept();
    char c;
    co_await s.read(std::span<char>(&c, 1));
    first.set_value(c);
    g.hand_off(s, 1, [&](cothread::tcp_socket moved) { return serve(g, std::move(moved), out); });
    CHECK(!s);  // empty: the connection left
}

static void test_hand_off() {
    cothread::loop_group g({.loops = 2});
    cothread::tcp_listener l;  // loop 0's: used on its thread only
    cothread::endpoint ep;
    g.each([&](cothread::loop &lp, std::size_t i) {
        if (i != 0) return;
        l = cothread::tcp_listener::bind(lp, cothread::endpoint::v4("127.0.0.1", 0));
        ep = l.local_endpoint();
    });
    std::promise<std::string> out;
    std::promise<char> first;
    auto fo = out.get_future();
    auto ff = first.get_future();
    g[0].spawn_detached(accept_and_hand_off(g, l, out, first));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_EQ(connect(fd, ep.data(), ep.size()), 0);
    CHECK_EQ(write(fd, "h", 1), 1);
    CHECK(ff.wait_for(60s) == std::future_status::ready);
    CHECK_EQ(ff.get(), 'h');
    CHECK_EQ(write(fd, "ello", 4), 4);
    CHECK(fo.wait_for(60s) == std::future_status::ready);
    CHECK(fo.get() == "1:ello");
    close(fd);
    g.each([&](cothread::loop &, std::size_t i) {
        if (i == 0) l.close();
    });
}

// switch_to moves a spawned task from loop to loop; a when_all child cannot.
static task<int> traveller(cothread::loop_group &g) {
    std::vector<int> seen{index_of(g)};
    co_await cothread::switch_to(g[1]);
    seen.push_back(index_of(g));
    co_await cothread::sleep_for(1ms);  // the sleep runs on loop 1 too
    seen.push_back(index_of(g));
    co_await cothread::switch_to(g[1]);  // there already: nothing
    co_await cothread::switch_to(g[2]);
    seen.push_back(index_of(g));
    int refused = 0;
    try {
        co_await cothread::when_all([](cothread::loop_group &g) -> task<void> { co_await cothread::switch_to(g[0]); }(g));
    } catch (const std::system_error &e) {
        refused = e.code() == std::errc::operation_not_supported;
    }
    std::vector<int> want{0, 1, 1, 2};
    co_return seen == want && refused && index_of(g) == 2;
}

static void test_switch_to() {
    cothread::loop_group g({.loops = 3});
    std::promise<int> p;
    auto f = p.get_future();
    g[0].spawn_detached([](cothread::loop_group &g, std::promise<int> &p) -> task<void> {
        p.set_value(co_await cothread::invoke_on(g[0], [&] { return traveller(g); }));
    }(g, p));
    CHECK(f.wait_for(60s) == std::future_status::ready);
    CHECK_EQ(f.get(), 1);
}

// ~loop_group asks every task to stop: a sleep of an hour ends at once.
static void test_shutdown_stops_tasks() {
    auto started = std::chrono::steady_clock::now();
    std::atomic<int> ended{0};
    {
        cothread::loop_group g({.loops = 2, .grace = 10s});
        for (std::size_t i = 0; i < 2; i++)
            g[i].spawn_detached([](std::atomic<int> &e) -> task<void> {
                try {
                    co_await cothread::sleep_for(3600s);
                } catch (const std::system_error &) {
                }
                e++;
            }(ended));
        std::this_thread::sleep_for(20ms);
    }
    CHECK_EQ(ended.load(), 2);
    CHECK(std::chrono::steady_clock::now() - started < 9s);  // well within the grace
}

int main() {
    test_each_runs_on_each_thread();
    test_invoke();
    test_stop_reaches_the_invoked_task();
    test_hand_off();
    test_switch_to();
    test_shutdown_stops_tasks();
    std::puts("test_loop_group ok");
    return 0;
}
