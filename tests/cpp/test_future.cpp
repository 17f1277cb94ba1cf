// future<T> / promise<T>: values in place, exceptions, dropped promises,
// operator<<, has_value, waits across threads, first setter wins, discard.
#include <cocls/future.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

using namespace cocls;

static void a_promise_set_before_the_wait_gives_the_value() {
    future<int> f([](promise<int> p) { p(42); });
    CHECK(f.ready());
    CHECK(!f.pending());
    CHECK_EQ(f.value(), 42);
    CHECK_EQ(*f, 42);
    CHECK_EQ(f.wait(), 42);
    CHECK(f.has_value());
}

static void an_empty_future_is_not_ready_and_says_so() {
    future<int> f;
    CHECK(!f.ready());
    CHECK(!f.pending());
    CHECK_THROWS(f.value(), value_not_ready_exception);
    auto p = f.get_promise();
    CHECK(f.pending());
    CHECK_THROWS(f.value(), value_not_ready_exception);
    CHECK(static_cast<bool>(p(7)));
    CHECK_EQ(f.value(), 7);
}

static void a_dropped_promise_resolves_without_a_value() {
    future<std::string> f([](promise<std::string>) {});  // the promise dies unset
    CHECK(f.ready());
    CHECK(!f.has_value());
    CHECK_THROWS(f.value(), await_canceled_exception);

    future<int> g;
    auto p = g.get_promise();
    bool set = p(drop);
    CHECK(set);
    CHECK_THROWS(g.value(), await_canceled_exception);
    CHECK(!p(1).value());  // already used
}

static void an_exception_travels_to_the_waiter() {
    future<int> f([](promise<int> p) {
        try {
            throw std::runtime_error("boom");
        } catch (...) {
            p(std::current_exception());
        }
    });
    CHECK(f.has_value());
    CHECK_THROWS(f.value(), std::runtime_error);
}

static void a_void_future_and_a_reference_future() {
    future<void> v([](promise<void> p) { p(); });
    v.value();
    CHECK(v.has_value());
    int x = 5;
    future<int &> r([&](promise<int &> p) { p(x); });
    r.value() = 9;
    CHECK_EQ(x, 9);
}

static future<int> returns_a_future(int v) {
    return [v](promise<int> p) { p(v * 2); };
}

static void operator_shift_constructs_in_place_again() {
    future<int> f;
    f << [] { return returns_a_future(4); };
    CHECK_EQ(f.value(), 8);
    f << [] { return returns_a_future(5); };
    CHECK_EQ(f.value(), 10);
    f << []() -> future<int> { throw std::logic_error("no"); };
    CHECK_THROWS(f.value(), std::logic_error);
}

static void values_live_in_place_and_are_destroyed_once() {
    auto counter = std::make_shared<int>(0);
    {
        future<std::shared_ptr<int>> f([&](promise<std::shared_ptr<int>> p) { p(counter); });
        CHECK_EQ(counter.use_count(), 2);
    }
    CHECK_EQ(counter.use_count(), 1);
    static_assert(!std::is_copy_constructible_v<future<int>> && !std::is_move_constructible_v<future<int>>);
    static_assert(std::is_move_constructible_v<promise<int>> && !std::is_copy_constructible_v<promise<int>>);
}

static void a_thread_sets_while_another_waits() {
    for (int round = 0; round < 200; round++) {
        promise<int> p;
        future<int> f([&](promise<int> q) { p = std::move(q); });
        std::thread t([&] { p(round); });
        CHECK_EQ(f.wait(), round);
        t.join();
    }
}

static void the_first_setter_wins_across_threads() {
    for (int round = 0; round < 200; round++) {
        promise<int> p;
        future<int> f([&](promise<int> q) { p = std::move(q); });
        std::atomic<int> winners{0};
        std::vector<std::thread> ts;
        for (int i = 0; i < 4; i++)
            ts.emplace_back([&, i] {
                if (p(i).value()) winners++;
            });
        f.sync();
        for (auto &t : ts) t.join();
        CHECK_EQ(winners.load(), 1);
        CHECK(f.value() >= 0 && f.value() < 4);
    }
}

static void discard_keeps_the_future_alive_until_it_resolves() {
    promise<int> kept;
    bool called = false;
    discard([&] {
        called = true;
        return future<int>([&](promise<int> p) { kept = std::move(p); });
    });
    CHECK(called);
    kept(3);  // frees the discarded future (ASan checks the free)
}

int main() {
    RUN(a_promise_set_before_the_wait_gives_the_value);
    RUN(an_empty_future_is_not_ready_and_says_so);
    RUN(a_dropped_promise_resolves_without_a_value);
    RUN(an_exception_travels_to_the_waiter);
    RUN(a_void_future_and_a_reference_future);
    RUN(operator_shift_constructs_in_place_again);
    RUN(values_live_in_place_and_are_destroyed_once);
    RUN(a_thread_sets_while_another_waits);
    RUN(the_first_setter_wins_across_threads);
    RUN(discard_keeps_the_future_alive_until_it_resolves);
    return 0;
}
