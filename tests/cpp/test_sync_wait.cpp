// sync_wait of awaitables that are not tasks: when_all, when_any, a socket
// read (and its error_code form), a sleep, a connect's move-only result,
// references (the loop, an lvalue awaitable's member, an rvalue reference),
// another library's awaitable (a relay), a cocls future, exceptions, and
// the refusal inside a task.
#include <cocls/future.h>
#include <cothread/endpoint.h>
#include <cothread/error.h>
#include <cothread/loop.h>
#include <cothread/sync_wait.h>
#include <cothread/task.h>
#include <cothread/tcp.h>
#include <cothread/timer.h>
#include <cothread/when_all.h>
#include <cothread/when_any.h>

#include <chrono>
#include <coroutine>
#include <cstddef>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "check.h"
#include "tcp_pair.h"

using namespace std::chrono_literals;
using cothread::task;
using steady = std::chrono::steady_clock;

static task<int> value_after(int v, std::chrono::milliseconds d) {
    co_await cothread::sleep_for(d);
    co_return v;
}
static task<std::string> text_now(std::string s) { co_return s; }
static task<int> thrower() {
    co_await cothread::yield();
    throw std::runtime_error("boom");
}

static void test_when_all() {
    cothread::loop lp;
    auto [a, s, slept] = cothread::sync_wait(lp, cothread::when_all(value_after(1, 2ms), text_now("two"), cothread::sleep_for(1ms)));
    static_assert(std::is_same_v<decltype(slept), std::monostate>);
    CHECK_EQ(a, 1);
    CHECK(s == "two");
    // An lvalue works too, and is awaited in place.
    auto both = cothread::when_all(value_after(3, 0ms), value_after(4, 1ms));
    auto [x, y] = cothread::sync_wait(lp, both);
    CHECK_EQ(x + y, 7);
    // The first exception passes up.
    bool thrown = false;
    try {
        cothread::sync_wait(lp, cothread::when_all(value_after(1, 1h), thrower()));
    } catch (const std::runtime_error &e) {
        thrown = std::string(e.what()) == "boom";
    }
    CHECK(thrown);
}

static void test_when_any() {
    cothread::loop lp;
    auto r = cothread::sync_wait(lp, cothread::when_any(value_after(1, 1h), text_now("now")));
    static_assert(std::is_same_v<decltype(r), std::variant<int, std::string>>);
    CHECK_EQ(r.index(), std::size_t(1));
    CHECK(std::get<1>(r) == "now");
    auto t0 = steady::now();
    auto s = cothread::sync_wait(lp, cothread::when_any(value_after(1, 1h), cothread::sleep_for(5ms)));
    CHECK_EQ(s.index(), std::size_t(1));  // the sleep won; the hour-long task was stopped
    CHECK(steady::now() - t0 < 1min);
}

// A read of bytes written before, then one that must wait for a writer
// task, then a deadline in the error_code form; the sockets come from a
// sync_wait of a task, the accepted end's reconnect from a sync_wait of
// the connect operation itself (a move-only result).
static void test_socket_read() {
    cothread::loop lp;
    auto [c, a] = cothread::sync_wait(lp, connected());
    CHECK_EQ(cothread::sync_wait(lp, a.write(bytes("hello"), 5s)), std::size_t(5));
    std::byte buf[16];
    std::size_t n = cothread::sync_wait(lp, c.read(buf, 5s));
    CHECK_EQ(n, std::size_t(5));
    CHECK(std::string(reinterpret_cast<const char *>(buf), n) == "hello");

    auto later = [](cothread::tcp_socket *s) -> task<void> {
        co_await cothread::sleep_for(5ms);
        co_await s->write(bytes("later"));
    };
    lp.spawn_detached(later(&a));
    n = cothread::sync_wait(lp, c.read(buf, 5s));  // the writer runs meanwhile
    CHECK_EQ(n, std::size_t(5));
    CHECK(std::string(reinterpret_cast<const char *>(buf), n) == "later");

    std::error_code ec;
    n = cothread::sync_wait(lp, c.read(buf, 5ms, ec));
    CHECK_EQ(n, std::size_t(0));
    CHECK(ec == std::errc::timed_out);
    CHECK_THROWS(cothread::sync_wait(lp, c.read(buf, 5ms)), std::system_error);

    cothread::tcp_listener l = cothread::tcp_listener::bind(lp, cothread::endpoint::v4("127.0.0.1", 0));
    cothread::tcp_socket d = cothread::sync_wait(lp, cothread::tcp_socket::connect(lp, l.local_endpoint(), 5s));
    CHECK(d);
    cothread::tcp_socket e = cothread::sync_wait(lp, l.accept(5s));
    CHECK(e.peer_endpoint() == d.local_endpoint());
}

static void test_sleep() {
    cothread::loop lp;
    auto t0 = steady::now();
    cothread::sync_wait(lp, cothread::sleep_for(10ms));
    static_assert(std::is_void_v<decltype(cothread::sync_wait(lp, cothread::sleep_for(1ms)))>);
    CHECK(steady::now() - t0 >= 10ms);
    cothread::sync_wait(lp, cothread::yield());
    bool invalid = false;
    try {
        cothread::sync_wait(lp, cothread::sleep_for(-1ms));
    } catch (const std::system_error &e) {
        invalid = e.code() == std::errc::invalid_argument;
    }
    CHECK(invalid);
}

// A native awaitable whose result is a reference to its own member.
struct member_ref {
    using cothread_awaitable = void;
    int value = 0;
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<>) noexcept { return false; }
    int &await_resume() noexcept { return value; }
};

// Another library's awaitable (no cothread_awaitable: a task relays it),
// giving an rvalue reference to an outside string.
struct foreign_rref {
    std::string *s;
    bool await_ready() const noexcept { return true; }
    void await_suspend(std::coroutine_handle<>) noexcept {}
    std::string &&await_resume() noexcept { return std::move(*s); }
};

static void test_references() {
    cothread::loop lp;
    cothread::loop &got = cothread::sync_wait(lp, cothread::this_task::get_loop());
    CHECK(&got == &lp);
    member_ref m;
    int &r = cothread::sync_wait(lp, m);
    CHECK(&r == &m.value);
    std::string text = "moved";
    std::string &&rr = cothread::sync_wait(lp, foreign_rref{&text});
    CHECK(&rr == &text);
    std::string taken = cothread::sync_wait(lp, foreign_rref{&text});
    CHECK(taken == "moved");
    std::stop_token tok = cothread::sync_wait(lp, cothread::this_task::stop_token());
    CHECK(!tok.stop_requested());
    CHECK(!tok.stop_possible());  // its root, and so its source, are gone
}

static void test_cocls_future() {
    cothread::loop lp;
    cocls::future<int> f = lp.spawn(value_after(42, 2ms));
    CHECK_EQ(cothread::sync_wait(lp, f), 42);  // a wait() here would never end: nobody runs the loop
    cocls::future<int> g = lp.spawn(thrower());
    CHECK_THROWS(cothread::sync_wait(lp, g), std::runtime_error);
}

// Inside a task of the loop: refused before anything starts.
static task<int> nested(cothread::loop *lp) {
    bool refused = false;
    try {
        cothread::sync_wait(*lp, cothread::sleep_for(1ms));
    } catch (const std::system_error &e) {
        refused = e.code() == std::errc::resource_deadlock_would_occur;
    }
    CHECK(refused);
    co_return 1;
}

static void test_nested() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, nested(&lp)), 1);
}

int main() {
    RUN(test_when_all);
    RUN(test_when_any);
    RUN(test_socket_read);
    RUN(test_sleep);
    RUN(test_references);
    RUN(test_cocls_future);
    RUN(test_nested);
    return 0;
}
