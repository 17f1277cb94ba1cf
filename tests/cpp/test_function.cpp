// function<Ret(Args...)>: small callables stay inside (no heap), large ones
// go to the heap and move as a pointer; move-only targets; empty calls throw;
// moving between buffer sizes. generics.h: what co_await yields.
#include <cocls/async.h>
#include <cocls/function.h>
#include <cocls/future.h>
#include <cocls/generics.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <type_traits>

#include "check.h"
#include "heap_count.h"


using namespace cocls;

static void a_small_callable_is_stored_without_the_heap() {
    int base = 40;
    CHECK_HEAP(heap_allocations_of([&] {
                   function<int(int)> f = [&base](int x) { return base + x; };
                   CHECK(static_cast<bool>(f));
                   CHECK_EQ(f(2), 42);
                   function<int(int)> g = std::move(f);
                   CHECK(!f);
                   CHECK_EQ(g(3), 43);
               }),
               0);
}

static void a_large_callable_goes_to_the_heap_and_moves_as_a_pointer() {
    std::array<char, 200> big{};
    big[0] = 7;
    CHECK_HEAP(heap_allocations_of([&] {
                   function<int()> f = [big] { return static_cast<int>(big[0]); };
                   CHECK_EQ(f(), 7);
                   CHECK_HEAP(heap_allocations_of([&] {
                                  function<int()> g = std::move(f);  // the pointer only
                                  CHECK_EQ(g(), 7);
                              }),
                              0);
               }),
               1);
}

static void move_only_targets_and_results_work() {
    auto owned = std::make_unique<std::string>("mine");
    function<std::string()> f = [p = std::move(owned)] { return *p; };
    CHECK_EQ(f(), std::string("mine"));
    function<std::unique_ptr<int>(int)> make = [](int v) { return std::make_unique<int>(v); };
    CHECK_EQ(*make(5), 5);
    function<void(std::string &)> append = [](std::string &s) { s += "!"; };
    std::string s = "hi";
    append(s);
    CHECK_EQ(s, std::string("hi!"));
}

static void an_empty_function_throws_bad_function_call() {
    function<void()> f;
    CHECK(!f);
    CHECK(f == nullptr);
    CHECK_THROWS(f(), std::bad_function_call);
    f = [] {};
    f();
    f = nullptr;
    CHECK(!f);
}

static void functions_of_other_sizes_take_the_target() {
    int calls = 0, twice = 0;
    function<void(), 64> roomy = [&calls, &twice] { calls++, twice += 2; };  // two pointers
    function<void(), sizeof(void *)> tight = std::move(roomy);  // too small: moves to the heap
    CHECK(!roomy);
    tight();
    function<void(), 128> back = std::move(tight);
    back();
    CHECK_EQ(calls, 2);
    CHECK_EQ(twice, 4);
}

static void targets_are_destroyed_once() {
    auto token = std::make_shared<int>(0);
    {
        function<void()> f = [token] {};
        CHECK_EQ(token.use_count(), 2L);
        function<void()> g = std::move(f);
        CHECK_EQ(token.use_count(), 2L);
        g = function<void()>();
        CHECK_EQ(token.use_count(), 1L);
        function<void()> h = [token] {};
    }
    CHECK_EQ(token.use_count(), 1L);
}

static void noexcept_signatures_are_kept() {
    function<int(int) noexcept> f = [](int x) noexcept { return x * 2; };
    static_assert(noexcept(f(1)));
    CHECK_EQ(f(4), 8);
    static_assert(!std::is_constructible_v<function<int(int) noexcept>, int (*)(int)>,
                  "a throwing target does not fit a noexcept signature");
    static_assert(is_function<function<void()>>);
    static_assert(is_function<const function<void()> &>);
    static_assert(!is_function<std::function<void()>>);
}

static async<int> seven() { co_return 7; }

struct plain_awaiter {
    bool await_ready() const noexcept { return true; }
    void await_suspend(std::coroutine_handle<>) const noexcept {}
    long await_resume() const noexcept { return 9; }
};

static void generics_say_what_co_await_yields() {
    static_assert(has_co_await<future<int> &>);
    static_assert(has_co_await<async<int> &&>);
    static_assert(!has_co_await<plain_awaiter>);
    static_assert(std::is_same_v<awaiter_return_value<future<int> &>, int &>);
    static_assert(std::is_same_v<awaiter_return_value<async<int>>, int>);
    static_assert(std::is_same_v<awaiter_return_value<plain_awaiter>, long>);
    plain_awaiter p;
    auto w = retrieve_awaiter(p);
    CHECK(w.await_ready());
    CHECK_EQ(w.await_resume(), 9L);
    auto a = seven();
    auto aw = retrieve_awaiter(std::move(a));
    CHECK(!aw.await_ready());
}

int main() {
    RUN(a_small_callable_is_stored_without_the_heap);
    RUN(a_large_callable_goes_to_the_heap_and_moves_as_a_pointer);
    RUN(move_only_targets_and_results_work);
    RUN(an_empty_function_throws_bad_function_call);
    RUN(functions_of_other_sizes_take_the_target);
    RUN(targets_are_destroyed_once);
    RUN(noexcept_signatures_are_kept);
    RUN(generics_say_what_co_await_yields);
    return 0;
}
