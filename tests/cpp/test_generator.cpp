// generator<T, Arg>: lazy start, next()/value(), iterators and range-for, the
// call operator's futures (and `f << gen`), arguments and `co_yield nullptr`,
// early destruction, exceptions, `co_await gen.next()` from a coroutine,
// asynchronous generators resumed by another thread (next() blocks), and
// generator_aggregator with synchronous and asynchronous members.
#include <cocls/async.h>
#include <cocls/future.h>
#include <cocls/generator.h>
#include <cocls/generator_aggregator.h>
#include <cocls/iterator.h>

#include <coroutine>
#include <latch>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "check.h"

using namespace cocls;

static_assert(!std::is_copy_constructible_v<generator<int>> && std::is_nothrow_move_constructible_v<generator<int>>);
static_assert(std::is_same_v<generator<int>::iterator::iterator_category, std::input_iterator_tag>);

static generator<int> fib(int count) {
    int a = 0, b = 1;
    for (int i = 0; i < count; i++) {
        int c = a + b;
        co_yield c;
        a = b;
        b = c;
    }
}

static void next_and_value_give_the_values_then_false() {
    auto gen = fib(5);
    CHECK_THROWS(gen.value(), value_not_ready_exception);  // before the first step
    std::vector<int> got;
    while (gen.next()) got.push_back(gen.value());
    CHECK((got == std::vector<int>{1, 2, 3, 5, 8}));
    CHECK(gen.done());
    CHECK(!gen.next());  // and stays so
    CHECK_THROWS(gen.value(), no_more_values_exception);
}

static generator<int> counted(int &steps) {
    for (int i = 0;; i++) {
        ++steps;
        co_yield i;
    }
}

static void it_starts_suspended_and_runs_one_step_per_call() {
    int steps = 0;
    auto gen = counted(steps);
    CHECK_EQ(steps, 0);
    CHECK(gen.next());
    CHECK_EQ(steps, 1);
    CHECK_EQ(gen.value(), 0);
    CHECK_EQ(gen.value(), 0);  // reading runs nothing
    CHECK(gen.next());
    CHECK_EQ(steps, 2);
    CHECK_EQ(gen.value(), 1);
}

static void a_moved_generator_keeps_its_place() {
    auto a = fib(4);
    CHECK(a.next());
    generator<int> b = std::move(a);
    CHECK(a.done() && !a.next());  // moved from: as finished
    CHECK(b.next());
    CHECK_EQ(b.value(), 2);
    generator<int> c;
    c = std::move(b);
    CHECK(c.next());
    CHECK_EQ(c.value(), 3);
}

static void range_for_and_iterators_walk_the_values() {
    std::vector<int> got;
    auto gen = fib(6);
    for (int &v : gen) got.push_back(v);
    CHECK((got == std::vector<int>{1, 2, 3, 5, 8, 13}));

    auto g2 = fib(3);
    auto it = g2.begin();
    CHECK(it != g2.end());
    CHECK_EQ(*it, 1);
    ++it;
    CHECK_EQ(*it, 2);
    auto old = it++;  // holds the value it stood on
    CHECK_EQ(*old, 2);
    CHECK_EQ(*it, 3);
    ++it;
    CHECK(it == g2.end());
}

static generator<std::string> words() {
    co_yield std::string("temporary");
    const std::string fixed = "const";
    co_yield fixed;
    std::string kept = "lvalue";
    co_yield kept;
    CHECK_EQ(kept, "lvalue");  // the caller got a copy
    co_yield "converted";
}

static void the_call_operator_returns_futures_that_end_without_a_value() {
    auto gen = fib(3);
    std::vector<int> got;
    future<int> val = gen();
    while (val.has_value()) {
        got.push_back(*val);
        val << gen;
    }
    CHECK((got == std::vector<int>{1, 2, 3}));
    CHECK(!val.has_value());  // the end: resolved without a value
    val << gen;               // called again after the end
    CHECK(val.has_value());
    CHECK_THROWS(val.value(), no_more_values_exception);

    auto w = words();
    std::vector<std::string> ws;
    for (future<std::string> f = w(); f.has_value(); f << w) ws.push_back(f.value());
    CHECK((ws == std::vector<std::string>{"temporary", "const", "lvalue", "converted"}));
}

static generator<int, int> doubler() {
    int arg = co_yield nullptr;  // the first call's argument
    for (;;) arg = co_yield arg * 2;
}

static generator<std::string, std::string> echo() {
    std::string last = "start";
    for (;;) {
        std::string &in = co_yield last;  // the next call's argument
        last = in + "!";
    }
}

static void arguments_reach_co_yield() {
    auto gen = doubler();
    for (int i = 1; i <= 3; i++) {
        CHECK(gen.next(i));
        CHECK_EQ(gen.value(), 2 * i);
    }
    CHECK_EQ(*gen(10), 20);
    CHECK_EQ(*gen(2.7), 4);  // converted to int for the step
    const int c = 21;
    CHECK(gen.next(c));  // a const argument: the generator gets a copy
    CHECK_EQ(gen.value(), 42);

    auto e = echo();
    std::string a = "a";
    CHECK(e.next(a));  // the first step ignores it: no co_yield nullptr
    CHECK_EQ(e.value(), "start");
    CHECK(e.next(a));
    CHECK_EQ(e.value(), "a!");
    CHECK(e.next(std::string("b")));
    CHECK_EQ(e.value(), "b!");
}

struct guard {
    int *destroyed;
    explicit guard(int &d) : destroyed(&d) {}
    guard(const guard &) = delete;
    ~guard() { ++*destroyed; }
};

static generator<int> guarded(int &destroyed) {
    guard g(destroyed);
    for (int i = 0;; i++) co_yield i;
}

static generator<int> holds(std::shared_ptr<int> p) {
    co_yield *p;
}

static void destroying_a_suspended_generator_destroys_its_frame() {
    int destroyed = 0;
    {
        auto gen = guarded(destroyed);
        CHECK(gen.next());
        CHECK(gen.next());
        CHECK_EQ(gen.value(), 1);
        CHECK_EQ(destroyed, 0);
    }  // suspended at co_yield
    CHECK_EQ(destroyed, 1);

    auto arg = std::make_shared<int>(5);
    {
        auto gen = holds(arg);
        CHECK_EQ(arg.use_count(), 2);  // never started: the frame holds the argument
    }
    CHECK_EQ(arg.use_count(), 1);
    {
        auto gen = holds(arg);
        while (gen.next()) {
        }
        CHECK_EQ(arg.use_count(), 2);  // finished, not yet destroyed
    }
    CHECK_EQ(arg.use_count(), 1);
}

static generator<int> throws_after(int n) {
    for (int i = 0; i < n; i++) co_yield i;
    throw std::runtime_error("generator failed");
}

static void an_exception_inside_reaches_the_caller() {
    auto gen = throws_after(2);
    CHECK(gen.next() && gen.value() == 0);
    CHECK(gen.next() && gen.value() == 1);
    CHECK(gen.next());  // the step produced an exception
    CHECK_THROWS(gen.value(), std::runtime_error);
    CHECK(!gen.next());  // finished
    CHECK_THROWS(gen.value(), std::runtime_error);

    auto g2 = throws_after(1);
    future<int> f = g2();
    CHECK_EQ(*f, 0);
    f << g2;
    CHECK_THROWS(f.value(), std::runtime_error);

    int seen = 0;
    auto g3 = throws_after(3);
    CHECK_THROWS(
        [&] {
            for (int v : g3) seen += v + 1;
        }(),
        std::runtime_error);
    CHECK_EQ(seen, 1 + 2 + 3);
}

// The loops below give `while (co_await ...)` a block with a declaration: g++
// 12.2 miscompiles a co_await in an if/while condition whose body has none
// (GCC PR 106188, fixed in 12.3): the coroutine never runs.
static async<int> sum_by_co_await(generator<int> &gen) {
    int sum = 0;
    while (co_await gen.next()) {
        int v = gen.value();
        sum += v;
    }
    co_return sum;
}

static async<std::string> catch_by_co_await(generator<int> &gen) {
    std::string out;
    try {
        while (co_await gen.next()) {
            std::string v = std::to_string(gen.value());
            out += v;
        }
    } catch (const std::runtime_error &e) {
        out += e.what();
    }
    bool more = co_await gen.next();
    out += more ? " more" : " end";
    co_return out;
}

static void co_await_next_drives_it_from_a_coroutine() {
    auto gen = fib(5);
    CHECK_EQ(sum_by_co_await(gen).join(), 1 + 2 + 3 + 5 + 8);
    CHECK_EQ(sum_by_co_await(gen).join(), 0);  // finished: false at once
    auto g2 = throws_after(2);
    CHECK_EQ(catch_by_co_await(g2).join(), "01generator failed end");
}

// A gate a generator waits at. `armed` opens once the generator has subscribed
// (it is then surely suspended), so whoever opens the gate resumes it: the
// order of the openings is the order in which the generators go on.
struct gate {
    future<int> fut;
    promise<int> prom = fut.get_promise();
    std::latch armed{1};

    void open(int v) {
        armed.wait();
        prom(v);  // the generator runs here, on this thread
    }

    struct gate_awaiter : awaiter {
        gate &g;
        explicit gate_awaiter(gate &gt) : g(gt) {}
        bool await_ready() const noexcept { return false; }
        bool await_suspend(std::coroutine_handle<> h) noexcept {
            set_handle(h);
            std::latch &armed = g.armed;  // after the count_down the frame may run elsewhere
            bool waits = g.fut.subscribe(this);
            armed.count_down();
            return waits;
        }
        int await_resume() { return g.fut.value(); }
    };
    gate_awaiter operator co_await() { return gate_awaiter(*this); }
};

static generator<int> through_gates(std::vector<gate> &gates, std::vector<std::thread::id> &ran_on) {
    for (gate &g : gates) {
        int v = co_await g;
        ran_on.push_back(std::this_thread::get_id());
        co_yield v;
    }
}

static void next_blocks_until_an_asynchronous_step_ends_on_another_thread() {
    std::vector<gate> gates(3);
    std::vector<std::thread::id> ran_on;
    auto gen = through_gates(gates, ran_on);
    std::thread::id opener_id;
    std::thread opener([&] {
        opener_id = std::this_thread::get_id();
        for (int i = 0; i < 3; i++) gates[i].open(10 + i);
    });
    std::vector<int> got;
    while (gen.next()) got.push_back(gen.value());  // each step blocks until the opener ran it
    opener.join();
    CHECK((got == std::vector<int>{10, 11, 12}));
    CHECK_EQ(ran_on.size(), 3u);
    for (auto id : ran_on) CHECK(id == opener_id);
}

static void range_for_over_an_asynchronous_generator_blocks_per_value() {
    std::vector<gate> gates(4);
    std::vector<std::thread::id> ran_on;
    auto gen = through_gates(gates, ran_on);
    std::thread opener([&] {
        for (int i = 0; i < 4; i++) gates[i].open(i * i);
    });
    int sum = 0;
    for (int v : gen) sum += v;
    opener.join();
    CHECK_EQ(sum, 0 + 1 + 4 + 9);
}

static void the_future_of_an_asynchronous_step_resolves_on_the_other_thread() {
    std::vector<gate> gates(2);
    std::vector<std::thread::id> ran_on;
    auto gen = through_gates(gates, ran_on);
    future<int> f = gen();
    CHECK(f.pending());  // the step waits at the gate
    std::thread opener([&] { gates[0].open(7); });
    CHECK_EQ(f.wait(), 7);
    opener.join();
    f << gen;
    CHECK(f.pending());
    gates[1].open(8);  // from this thread: the step ends here
    CHECK(f.ready());
    CHECK_EQ(f.value(), 8);
    f << gen;
    CHECK(!f.has_value());
}

static async<void> collect(generator<int> &gen, std::vector<int> &out) {
    while (co_await gen.next()) {
        int v = gen.value();
        out.push_back(v);
    }
}

static void co_await_next_on_an_asynchronous_generator_resumes_with_its_step() {
    std::vector<gate> gates(3);
    std::vector<std::thread::id> ran_on;
    auto gen = through_gates(gates, ran_on);
    std::vector<int> out;
    future<void> done = collect(gen, out).start();
    CHECK(out.empty() && done.pending());
    gates[0].open(1);  // the generator goes on, then the collector, here
    CHECK((out == std::vector<int>{1}));
    gates[1].open(2);
    CHECK((out == std::vector<int>{1, 2}));
    std::thread opener([&] { gates[2].open(3); });
    opener.join();
    CHECK(done.ready());
    CHECK((out == std::vector<int>{1, 2, 3}));
}

static generator<int> guarded_gate(gate &g, int &destroyed) {
    guard keep(destroyed);
    int v = co_await g;
    co_yield v;
    co_yield v + 1;
}

static void destroying_after_an_asynchronous_step_destroys_the_frame() {
    int destroyed = 0;
    gate g;
    {
        auto gen = guarded_gate(g, destroyed);
        std::thread opener([&] { g.open(4); });
        CHECK(gen.next());
        CHECK_EQ(gen.value(), 4);
        opener.join();
    }
    CHECK_EQ(destroyed, 1);
}

static generator<int> seq(int from, int count) {
    for (int i = 0; i < count; i++) co_yield from + i;
}

static void the_aggregator_alternates_synchronous_members() {
    std::vector<generator<int>> gens;
    gens.push_back(seq(1, 3));
    gens.push_back(seq(10, 2));
    gens.push_back(seq(100, 1));
    auto agg = generator_aggregator(std::move(gens));
    std::vector<int> got;
    for (int v : agg) got.push_back(v);
    CHECK((got == std::vector<int>{1, 10, 100, 2, 11, 3}));

    std::vector<generator<int>> none;
    auto empty = generator_aggregator(std::move(none));
    CHECK(!empty.next());
}

struct running_sum {
    int id;
    double sum = 0;
    int count = 0;
};

static generator<running_sum, double> summary(int id) {
    double val = co_yield nullptr;
    running_sum rs{id};
    for (;;) {
        rs.count++;
        rs.sum += val;
        val = co_yield rs;
    }
}

static void the_aggregator_passes_arguments_to_the_member_that_answered_last() {
    std::vector<generator<running_sum, double>> gens;
    gens.push_back(summary(1));
    gens.push_back(summary(2));
    auto agg = generator_aggregator(std::move(gens));
    // 1 starts both; then each argument goes to the member returned before.
    const double data[] = {1, 4, 32, 31.3};
    const int ids[] = {1, 2, 1, 2};
    const double sums[] = {1, 1, 5, 33};
    for (int i = 0; i < 4; i++) {
        future<running_sum> f = agg(data[i]);
        const running_sum &rs = f.value();
        CHECK_EQ(rs.id, ids[i]);
        CHECK_EQ(rs.sum, sums[i]);
    }
    CHECK(agg.next(0.7));  // to member 2 (33 + 0.7); member 1 answers (5 + 31.3)
    CHECK_EQ(agg.value().id, 1);
    CHECK_EQ(agg.value().sum, 5 + 31.3);
    CHECK(agg.next(1.0));  // to member 1; member 2 answers
    CHECK_EQ(agg.value().id, 2);
    CHECK_EQ(agg.value().sum, 33 + 0.7);
}

static void the_aggregator_rethrows_a_member_exception_after_the_other_values() {
    std::vector<generator<int>> gens;
    gens.push_back(throws_after(1));
    gens.push_back(seq(10, 3));
    auto agg = generator_aggregator(std::move(gens));
    std::vector<int> got;
    bool threw = false;
    try {
        for (int v : agg) got.push_back(v);
    } catch (const std::runtime_error &) {
        threw = true;
    }
    CHECK(threw);
    CHECK((got == std::vector<int>{0, 10, 11, 12}));
}

static generator<int> one_at_gate(gate &g) {
    co_yield co_await g;
}

static void the_aggregator_delivers_asynchronous_members_in_completion_order() {
    std::vector<gate> gates(3);
    std::vector<generator<int>> gens;
    for (gate &g : gates) gens.push_back(one_at_gate(g));
    auto agg = generator_aggregator(std::move(gens));
    std::thread opener([&] {
        gates[1].open(1);
        gates[0].open(0);
        gates[2].open(2);
    });
    std::vector<int> got;
    while (agg.next()) got.push_back(agg.value());  // the first call starts all three
    opener.join();
    CHECK((got == std::vector<int>{1, 0, 2}));
}

static void the_aggregator_under_co_await_follows_the_caller_s_order() {
    std::vector<gate> gates(4);
    std::vector<generator<int>> gens;
    for (gate &g : gates) gens.push_back(one_at_gate(g));
    gens.push_back(seq(50, 2));  // a synchronous member too
    auto agg = generator_aggregator(std::move(gens));
    std::vector<int> out;
    future<void> done = collect(agg, out).start();
    CHECK((out == std::vector<int>{50, 51}));  // all that was ready
    gates[3].open(3);
    CHECK((out == std::vector<int>{50, 51, 3}));
    gates[0].open(0);
    gates[2].open(2);
    CHECK((out == std::vector<int>{50, 51, 3, 0, 2}));
    CHECK(done.pending());
    std::thread opener([&] { gates[1].open(1); });
    opener.join();
    CHECK(done.ready());
    CHECK((out == std::vector<int>{50, 51, 3, 0, 2, 1}));
}

static void destroying_the_aggregator_waits_for_members_in_a_step() {
    int destroyed = 0;
    gate g0, g1;
    std::latch destroying{1};
    std::thread opener;
    {
        std::vector<generator<int>> gens;
        gens.push_back(guarded_gate(g0, destroyed));
        gens.push_back(guarded_gate(g1, destroyed));
        auto agg = generator_aggregator(std::move(gens));
        opener = std::thread([&] {
            g0.open(5);
            destroying.wait();
            g1.open(6);  // the member's step ends while (or before) the aggregator is destroyed
        });
        CHECK(agg.next());
        CHECK_EQ(agg.value(), 5);
        CHECK_EQ(destroyed, 0);
        destroying.count_down();
    }  // blocks until member 1 ended its step
    CHECK_EQ(destroyed, 2);
    opener.join();
}

int main() {
    RUN(next_and_value_give_the_values_then_false);
    RUN(it_starts_suspended_and_runs_one_step_per_call);
    RUN(a_moved_generator_keeps_its_place);
    RUN(range_for_and_iterators_walk_the_values);
    RUN(the_call_operator_returns_futures_that_end_without_a_value);
    RUN(arguments_reach_co_yield);
    RUN(destroying_a_suspended_generator_destroys_its_frame);
    RUN(an_exception_inside_reaches_the_caller);
    RUN(co_await_next_drives_it_from_a_coroutine);
    RUN(next_blocks_until_an_asynchronous_step_ends_on_another_thread);
    RUN(range_for_over_an_asynchronous_generator_blocks_per_value);
    RUN(the_future_of_an_asynchronous_step_resolves_on_the_other_thread);
    RUN(co_await_next_on_an_asynchronous_generator_resumes_with_its_step);
    RUN(destroying_after_an_asynchronous_step_destroys_the_frame);
    RUN(the_aggregator_alternates_synchronous_members);
    RUN(the_aggregator_passes_arguments_to_the_member_that_answered_last);
    RUN(the_aggregator_rethrows_a_member_exception_after_the_other_values);
    RUN(the_aggregator_delivers_asynchronous_members_in_completion_order);
    RUN(the_aggregator_under_co_await_follows_the_caller_s_order);
    RUN(destroying_the_aggregator_waits_for_members_in_a_step);
    return 0;
}
