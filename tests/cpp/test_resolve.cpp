// cothread resolve: localhost, numeric addresses, a name that does not
// exist (COT_EAI_NONAME through cothread::category()), bad input, and a
// lookup cancelled by the stop token, from the loop thread and another.
#include <cothread/endpoint.h>
#include <cothread/error.h>
#include <cothread/loop.h>
#include <cothread/resolve.h>
#include <cothread/sync_wait.h>
#include <cothread/task.h>
#include <cothread/tcp.h>
#include <cothread/timer.h>

#include <atomic>
#include <chrono>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "check.h"

using namespace std::chrono_literals;
using cothread::endpoint;
using cothread::task;
using steady = std::chrono::steady_clock;

static task<int> localhost() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    std::vector<endpoint> eps = co_await cothread::resolve(lp, "localhost", "8080", 10s);
    CHECK(!eps.empty());
    bool loopback = false;
    for (const endpoint &e : eps) {
        CHECK_EQ(e.port(), 8080);
        CHECK(e.family() == AF_INET || e.family() == AF_INET6);
        if (e == endpoint::v4("127.0.0.1", 8080) || e == endpoint::v6("::1", 8080)) loopback = true;
    }
    CHECK(loopback);
    // Then a connect to what it found: a listener on localhost.
    cothread::tcp_listener l = cothread::tcp_listener::bind(lp, endpoint::v4("127.0.0.1", 0));
    std::string port = std::to_string(l.local_endpoint().port());
    std::vector<endpoint> here = co_await cothread::resolve(lp, "127.0.0.1", port);
    CHECK_EQ(here.size(), std::size_t(1));
    cothread::tcp_socket c = co_await cothread::tcp_socket::connect(lp, here[0], 5s);
    cothread::tcp_socket a = co_await l.accept(5s);
    CHECK(a.peer_endpoint() == c.local_endpoint());
    co_return 1;
}

static void test_localhost() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, localhost()), 1);
}

static task<int> numeric() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    std::vector<endpoint> v4 = co_await cothread::resolve(lp, "10.1.2.3", "99");
    CHECK_EQ(v4.size(), std::size_t(1));
    CHECK(v4[0] == endpoint::v4("10.1.2.3", 99));
    CHECK_EQ(v4[0].to_string(), std::string("10.1.2.3:99"));
    std::vector<endpoint> v6 = co_await cothread::resolve(lp, "fe80::1", "7");
    CHECK_EQ(v6.size(), std::size_t(1));
    CHECK(v6[0] == endpoint::v6("fe80::1", 7));
    CHECK_EQ(v6[0].to_string(), std::string("[fe80::1]:7"));
    // Service only: the loopback addresses (no AI_PASSIVE).
    std::vector<endpoint> svc = co_await cothread::resolve(lp, "", "80");
    CHECK(!svc.empty());
    co_return 1;
}

static void test_numeric() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, numeric()), 1);
}

static task<int> unknown() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    bool noname = false;
    try {
        co_await cothread::resolve(lp, "no-such-host.invalid", "80", 10s);
    } catch (const std::system_error &e) {
        // Without a network a resolver may say "try again" instead.
        noname = e.code() == cothread::make_error(COT_EAI_NONAME) || e.code() == cothread::make_error(COT_EAI_AGAIN);
        CHECK(e.code().category() == cothread::category());
    }
    CHECK(noname);
    std::error_code ec;
    std::vector<endpoint> none = co_await cothread::resolve(lp, "no-such-host.invalid", "80", 10s, ec);
    CHECK(ec == cothread::make_error(COT_EAI_NONAME) || ec == cothread::make_error(COT_EAI_AGAIN));
    CHECK(none.empty());
    // Bad input: no host and no service; a negative deadline.
    co_await cothread::resolve(lp, "", "", 10s, ec);
    CHECK(ec == std::errc::invalid_argument);
    co_await cothread::resolve(lp, "localhost", "80", -1s, ec);
    CHECK(ec == std::errc::invalid_argument);
    co_return 1;
}

static void test_unknown() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, unknown()), 1);
}

// A stop while the lookup is pending ends it with operation_canceled.
struct stop_result {
    std::atomic<bool> parked{false};
    std::atomic<bool> ended{false};
    bool canceled = false;
};

static task<void> lookup(stop_result *r) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    r->parked = true;
    try {
        std::vector<endpoint> eps = co_await cothread::resolve(lp, "localhost", "80");
    } catch (const std::system_error &e) {
        r->canceled = e.code() == std::errc::operation_canceled;
    }
    r->ended = true;
}

static task<void> stop_now(std::stop_source *src) {
    src->request_stop();
    co_return;
}

// On the loop thread the stop comes before the loop turns: the lookup
// cannot have ended.
static void test_cancel_same_thread() {
    cothread::loop lp;
    std::stop_source src;
    stop_result r;
    lp.spawn_detached(lookup(&r), src.get_token());
    lp.spawn_detached(stop_now(&src));
    lp.run();
    CHECK(r.canceled);
}

// From another thread. The loop's pool has one thread, held by a job until
// the task has seen its cancel, so the lookup cannot win the race.
static void test_cancel_other_thread() {
    cothread::loop lp;
    CHECK_EQ(cot_loop_set_pool_size(lp.native(), 1), 0);
    std::atomic<bool> release{false};
    auto hold = [](void *data) {
        auto *flag = static_cast<std::atomic<bool> *>(data);
        while (!*flag) std::this_thread::sleep_for(1ms);
    };
    auto after = [](cot_loop *, cot_req, int, void *) {};
    CHECK_EQ(cot_work_submit(lp.native(), hold, after, &release, nullptr), 0);
    std::stop_source src;
    stop_result r;
    lp.spawn_detached(lookup(&r), src.get_token());
    std::thread t([&] {
        while (!r.parked) std::this_thread::sleep_for(1ms);
        std::this_thread::sleep_for(5ms);
        src.request_stop();
        while (!r.ended) std::this_thread::sleep_for(1ms);
        release = true;  // then the lookup runs, and ~loop waits for it
    });
    lp.run();
    t.join();
    CHECK(r.canceled);
}

int main() {
    RUN(test_localhost);
    RUN(test_numeric);
    RUN(test_unknown);
    RUN(test_cancel_same_thread);
    RUN(test_cancel_other_thread);
    return 0;
}
