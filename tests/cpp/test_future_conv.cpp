// future_conv<fn>: a future<From> turned into a future<To> by a member or
// free function, without a coroutine; exceptions and dropped promises pass
// through; a conversion may chain another operation. make_promise: a promise
// whose future lives on the heap and calls back when set.
#include <cocls/future.h>
#include <cocls/future_conv.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "check.h"

using namespace cocls;

static promise<int> pending;

static future<int> later() {
    return [](promise<int> p) { pending = std::move(p); };
}

static future<int> on_a_thread(int v) {
    return [v](promise<int> p) { std::thread([v, p = std::move(p)]() mutable { p(v); }).detach(); };
}

class adder {
public:
    explicit adder(int x) : convertor(this), m_x(x) {}
    int conv_fn(int &src) { return src + m_x; }
    future_conv<&adder::conv_fn> convertor;

private:
    int m_x;
};

static void a_member_function_converts_the_value() {
    adder a(22);
    future<int> f = a.convertor << [] { return later(); };
    CHECK(f.pending());
    pending(20);
    CHECK_EQ(f.value(), 42);

    future<int> g = a.convertor << [] { return future<int>([](promise<int> p) { p(1); }); };
    CHECK_EQ(g.value(), 23);  // already resolved: converted at once
}

static std::string describe(int &v) { return "value " + std::to_string(v); }

static void a_free_function_may_change_the_type() {
    future_conv<&describe> c;
    future<std::string> f = c << [] { return later(); };
    pending(5);
    CHECK_EQ(f.value(), std::string("value 5"));
}

struct scale {
    int factor;
};
static int times(int &v, scale *s) { return v * s->factor; }

static void a_free_function_gets_a_context() {
    scale s{3};
    future_conv<&times> c(&s);
    future<int> f = c << [] { return later(); };
    pending(7);
    CHECK_EQ(f.value(), 21);
}

static int may_throw(int &v) {
    if (v < 0) throw std::invalid_argument("negative");
    return v;
}

static void exceptions_and_dropped_promises_pass_through() {
    future_conv<&may_throw> c;
    future<int> thrown = c << [] { return later(); };
    pending(-1);
    CHECK_THROWS(thrown.value(), std::invalid_argument);

    future<int> upstream = c << [] { return later(); };
    pending(std::make_exception_ptr(std::runtime_error("upstream")));
    CHECK_THROWS(upstream.value(), std::runtime_error);

    future<int> dropped = c << [] { return later(); };
    pending = promise<int>();
    CHECK_THROWS(dropped.value(), await_canceled_exception);
}

// COCLS's test: a conversion that sets the promise itself, after a second
// operation through another converter.
class two_step {
public:
    explicit two_step(int x) : convertor(this), m_inner(44), m_x(x) {}

    suspend_point<void> conv_fn(int &src, promise<int> &prom) {
        if (m_first.has_value()) {
            int t = *m_first;
            m_first.reset();
            return prom(t + src + m_x);
        }
        m_first = src;
        convertor(std::move(prom)) << [&]() -> future<int> {
            return m_inner.convertor << [] { return on_a_thread(42); };
        };
        return {};
    }

    future_conv<&two_step::conv_fn> convertor;

private:
    adder m_inner;
    std::optional<int> m_first;
    int m_x;
};

static future<int> cofn3() {
    two_step c(31);
    co_return co_await (c.convertor << [] { return on_a_thread(42); });
}

static void a_conversion_can_continue_with_another_operation() {
    CHECK_EQ(cofn3().wait(), 42 + (42 + 44) + 31);
}

static int noexcept_conv(int &v) noexcept { return v + 100; }

static void noexcept_functions_are_accepted() {
    future_conv<&noexcept_conv> c;
    future<int> f = c << [] { return future<int>([](promise<int> p) { p(1); }); };
    CHECK_EQ(f.value(), 101);
}

static void make_promise_calls_back_with_the_future() {
    int got = 0;
    promise<int> p = make_promise<int>([&](future<int> &f) { got = f.value(); });
    CHECK_EQ(got, 0);
    p(42);
    CHECK_EQ(got, 42);

    bool canceled = false;
    {
        promise<int> q = make_promise<int>([&](future<int> &f) {
            try {
                f.value();
            } catch (const await_canceled_exception &) {
                canceled = true;
            }
        });
    }  // dropped: the callback sees it, and the future is freed (ASan)
    CHECK(canceled);

    std::thread::id where;
    promise<std::string> r = make_promise<std::string>([&](future<std::string> &) { where = std::this_thread::get_id(); });
    std::thread::id setter;
    std::thread t([&] {
        setter = std::this_thread::get_id();
        r("x");
    });
    t.join();
    CHECK(where == setter);  // on the setting thread
}

int main() {
    RUN(a_member_function_converts_the_value);
    RUN(a_free_function_may_change_the_type);
    RUN(a_free_function_gets_a_context);
    RUN(exceptions_and_dropped_promises_pass_through);
    RUN(a_conversion_can_continue_with_another_operation);
    RUN(noexcept_functions_are_accepted);
    RUN(make_promise_calls_back_with_the_future);
    return 0;
}
