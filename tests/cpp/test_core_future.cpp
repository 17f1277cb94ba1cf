// core_future.h: coroutines awaiting core futures (values, errors, dropped
// promises, settled already or from another thread), from_core as a cocls
// future, and to_core exposing cocls futures to C (value copies destroyed
// with the last core handle, exceptions as errors, dropped promises).
#include <cocls/core_future.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "check.h"

using namespace cocls;

static int the_value = 42;

static future<int> await_value(const cot_future *f) {
    void *v = co_await core_await(f);
    co_return *static_cast<int *>(v);
}

static future<std::string> await_failure(const cot_future *f) {
    try {
        co_await core_await(f);
    } catch (const core_error &e) {
        co_return std::to_string(e.code()) + " " + e.what();
    } catch (const await_canceled_exception &) {
        co_return "dropped";
    }
    co_return "no error";
}

static void a_coroutine_awaits_a_core_future_settled_on_another_thread() {
    cot_promise *p;
    cot_future *f;
    CHECK_EQ(cot_promise_new(&p, &f), 0);
    future<int> r = await_value(f);
    CHECK(r.pending());
    std::thread setter([p] {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        CHECK_EQ(cot_promise_set(p, &the_value, nullptr), 0);
    });
    CHECK_EQ(r.wait(), 42);
    setter.join();
    // Settled already: no suspension at all.
    future<int> again = await_value(f);
    CHECK(again.ready());
    CHECK_EQ(again.value(), 42);
    cot_promise_free(p);
    cot_future_free(f);
}

static void errors_and_dropped_promises_become_exceptions() {
    cot_promise *p;
    cot_future *f;
    CHECK_EQ(cot_promise_new(&p, &f), 0);
    future<std::string> r = await_failure(f);
    CHECK_EQ(cot_promise_fail(p, -1000, "it broke"), 0);
    CHECK_EQ(r.wait(), std::string("-1000 it broke"));
    cot_promise_free(p);
    cot_future_free(f);

    CHECK_EQ(cot_promise_new(&p, &f), 0);
    future<std::string> d = await_failure(f);
    std::thread dropper([p] { cot_promise_free(p); });
    CHECK_EQ(d.wait(), std::string("dropped"));
    dropper.join();
    cot_future_free(f);
}

static void from_core_is_a_cocls_future() {
    cot_promise *p;
    cot_future *f;
    CHECK_EQ(cot_promise_new(&p, &f), 0);
    future<void *> c = from_core(f);
    cot_future_free(f);  // from_core holds its own handle
    CHECK(c.pending());
    std::thread setter([p] { CHECK_EQ(cot_promise_set(p, &the_value, nullptr), 0); });
    CHECK(c.wait() == &the_value);
    setter.join();
    cot_promise_free(p);

    CHECK_EQ(cot_promise_new(&p, &f), 0);
    future<void *> dropped = from_core(f);
    cot_promise_free(p);
    CHECK_THROWS(dropped.wait(), await_canceled_exception);
    cot_future_free(f);

    CHECK_EQ(cot_promise_new(&p, &f), 0);
    CHECK_EQ(cot_promise_fail(p, COT_EIO, "bad disk"), 0);
    future<void *> failed = from_core(f);
    CHECK_THROWS(failed.wait(), core_error);
    cot_promise_free(p);
    cot_future_free(f);
}

static std::atomic<int> alive{0};
struct tracked {
    int n;
    explicit tracked(int n) : n(n) { alive++; }
    tracked(const tracked &o) : n(o.n) { alive++; }
    ~tracked() { alive--; }
};

static void to_core_exposes_a_cocls_future_to_c() {
    {
        future<tracked> fut;
        auto prom = fut.get_promise();
        cot_future *cf = to_core(fut);
        CHECK_EQ(cot_future_state(cf), COT_FUTURE_PENDING);
        std::thread setter([&prom] { prom(7); });
        CHECK_EQ(cot_future_wait(cf, COT_FOREVER), 0);
        setter.join();
        void *v = nullptr;
        CHECK_EQ(cot_future_result(cf, &v, nullptr), 0);
        CHECK_EQ(static_cast<tracked *>(v)->n, 7);
        CHECK_EQ(fut.value().n, 7);  // the cocls future is untouched
        CHECK_EQ(alive.load(), 2);   // its value and the core's copy
        cot_future_free(cf);
        CHECK_EQ(alive.load(), 1);   // the copy went with the last core handle
    }
    CHECK_EQ(alive.load(), 0);

    future<int> failing;
    auto fp = failing.get_promise();
    cot_future *cf = to_core(failing);
    try {
        throw std::runtime_error("no luck");
    } catch (...) {
        fp(std::current_exception());
    }
    const char *message = nullptr;
    CHECK_EQ(cot_future_result(cf, nullptr, &message), COT_EIO);
    CHECK(std::strcmp(message, "no luck") == 0);
    cot_future_free(cf);

    future<void> dropping;
    cot_future *df;
    {
        auto dp = dropping.get_promise();
        df = to_core(dropping);
    }  // dp dies unset
    CHECK_EQ(cot_future_state(df), COT_FUTURE_DROPPED);
    cot_future_free(df);

    future<void> done([](promise<void> p) { p(); });  // resolved before to_core
    cot_future *vf = to_core(done);
    CHECK_EQ(cot_future_state(vf), COT_FUTURE_VALUE);
    cot_future_free(vf);

    future<int> never;  // no promise made: nothing will resolve it
    cot_future *nf = to_core(never);
    CHECK_EQ(cot_future_state(nf), COT_FUTURE_DROPPED);
    cot_future_free(nf);
}

int main() {
    a_coroutine_awaits_a_core_future_settled_on_another_thread();
    errors_and_dropped_promises_become_exceptions();
    from_core_is_a_cocls_future();
    to_core_exposes_a_cocls_future_to_c();
    std::puts("test_core_future: ok");
    return 0;
}
