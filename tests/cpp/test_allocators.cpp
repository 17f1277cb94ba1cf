// Coroutines allocated by storages (with_allocator): default_storage,
// reusable_storage (one frame, reused, no heap the second time),
// reusable_storage_mtsafe (overlap goes to the heap), promise_extra_storage,
// stack_storage (alloca, the size remembered), static_storage<N>,
// placement_alloc, reusable_buffer_storage. Heap use is counted by replacing
// the global operator new in this program.
#include <cocls/alloca_storage.h>
#include <cocls/async.h>
#include <cocls/coro_storage.h>
#include <cocls/future.h>
#include <cocls/with_allocator.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "heap_count.h"

// GCC 12 takes the templated operator new of with_allocator and the usual
// operator delete for a mismatched pair (GCC PR 109224, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

using namespace cocls;

// `co_await frame_address{&p}` stores the coroutine's frame address in p.
struct frame_address {
    void **out;
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) const noexcept {
        *out = h.address();
        return false;  // goes on at once
    }
    void await_resume() const noexcept {}
};

// The compiler may elide a frame's allocation altogether when it sees the
// whole life of the coroutine (clang does from -O1): then no storage is
// asked. The coroutines here are not inlined, so their storages are used.
#define NOT_ELIDED [[gnu::noinline]]

template <typename Alloc>
NOT_ELIDED static with_allocator<Alloc, async<int>> twice(Alloc &, int x, void **frame = nullptr) {
    if (frame) co_await frame_address{frame};
    co_return 2 * x;
}

template <typename Alloc>
NOT_ELIDED static with_allocator<Alloc, async<int>> wait_for(Alloc &, future<int> &f) {
    co_return co_await f + 1;
}

// A storage that says what it did.
struct observed_storage {
    static inline int allocs = 0;
    static inline int deallocs = 0;
    static inline void *last = nullptr;
    void *alloc(std::size_t sz) { return last = (allocs++, ::operator new(sz)); }
    static void dealloc(void *p, std::size_t) noexcept {
        deallocs++;
        ::operator delete(p);
    }
};

static async<int> use_as_child(default_storage &ds) { co_return co_await twice(ds, 10) + 1; }

static void a_with_allocator_coroutine_is_an_async() {
    default_storage ds;
    async<int> a = twice(ds, 4);
    CHECK_EQ(a.join(), 8);
    CHECK_EQ(twice(ds, 3).start().value(), 6);
    future<int> f = twice(ds, 5);
    CHECK_EQ(f.value(), 10);
    CHECK_EQ(use_as_child(ds).join(), 21);
    twice(ds, 1).detach();
}

static async<int> parked;  // a global: the frame escapes

// COCLS's Reader: a member coroutine takes the storage after `this`.
class reader {
public:
    future<int> read_next(int x) { return read_next_coro(m_storage, x); }
    std::size_t capacity() const { return m_storage.capacity(); }

private:
    NOT_ELIDED with_allocator<reusable_storage, async<int>> read_next_coro(reusable_storage &, int x) {
        co_return m_base + x;
    }
    reusable_storage m_storage;
    int m_base = 100;
};

static void a_member_coroutine_takes_the_storage_after_this() {
    reader r;
    CHECK_EQ(r.read_next(1).wait(), 101);
    CHECK(r.capacity() > 0);
    CHECK_HEAP(heap_allocations_of([&] { CHECK_EQ(r.read_next(2).wait(), 102); }), 0);
}

static void frames_come_from_the_storage_and_go_back_to_it() {
    observed_storage s;
    void *frame = nullptr;
    CHECK_EQ(twice(s, 2, &frame).join(), 4);
    CHECK_EQ(observed_storage::allocs, 1);
    CHECK_EQ(observed_storage::deallocs, 1);
    CHECK(frame == observed_storage::last);
    parked = twice(s, 3);
    CHECK_EQ(observed_storage::allocs, 2);
    parked = async<int>();  // never started: destroyed with its frame
    CHECK_EQ(observed_storage::deallocs, 2);
}

static void reusable_storage_reuses_one_buffer_without_the_heap() {
    reusable_storage stor;
    void *first = nullptr, *second = nullptr;
    long heap1 = heap_allocations_of([&] { CHECK_EQ(twice(stor, 1, &first).join(), 2); });
    CHECK_HEAP(heap1, 1);  // the buffer
    CHECK(stor.capacity() > 0);
    long heap2 = heap_allocations_of([&] { CHECK_EQ(twice(stor, 2, &second).join(), 4); });
    CHECK_HEAP(heap2, 0);
    CHECK(first == second);
    long heap_loop = heap_allocations_of([&] {
        for (int i = 0; i < 100; i++) CHECK_EQ(twice(stor, i).join(), 2 * i);
    });
    CHECK_HEAP(heap_loop, 0);
}

static void the_mtsafe_storage_sends_overlapping_frames_to_the_heap() {
    reusable_storage_mtsafe stor;
    future<int> gate;
    auto p = gate.get_promise();
    future<int> held;
    long heap_first = heap_allocations_of([&] { held << [&] { return future<int>(wait_for(stor, gate)); }; });
    CHECK_HEAP(heap_first, 1);  // the buffer, now taken by a waiting frame
    CHECK(held.pending());
    long heap_overlap = heap_allocations_of([&] { CHECK_EQ(twice(stor, 7).join(), 14); });
    CHECK_HEAP(heap_overlap, 1);  // the buffer was busy
    p(1);
    CHECK_EQ(held.value(), 2);
    long heap_again = heap_allocations_of([&] { CHECK_EQ(twice(stor, 8).join(), 16); });
    CHECK_HEAP(heap_again, 0);  // the buffer is free again
}

static void the_mtsafe_storage_survives_threads() {
    reusable_storage_mtsafe stor;
    constexpr int threads = 4, rounds = 2000;
    std::atomic<long> sum{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) {
        ts.emplace_back([&] {
            long local = 0;
            for (int i = 0; i < rounds; i++) local += twice(stor, i).join();
            sum += local;
        });
    }
    for (auto &t : ts) t.join();
    CHECK_EQ(sum.load(), static_cast<long>(threads) * rounds * (rounds - 1));
}

struct extra {
    static inline int alive = 0;
    std::string name;
    explicit extra(std::string n) : name(std::move(n)) { alive++; }
    extra(extra &&o) noexcept : name(std::move(o.name)) { alive++; }
    ~extra() { alive--; }
};

template <typename Alloc>
NOT_ELIDED static with_allocator<Alloc, async<std::string>> greet(Alloc &storage, future<int> &gate) {
    co_await gate;
    co_return "hello " + storage->name;
}

static void promise_extra_storage_keeps_an_object_as_long_as_the_frame() {
    promise_extra_storage<extra> storage([] { return extra("extra"); });
    future<int> gate;
    auto p = gate.get_promise();
    async<std::string> coro = greet(storage, gate);
    CHECK_EQ(extra::alive, 1);
    CHECK_EQ((*storage).name, std::string("extra"));  // reachable before it starts
    future<std::string> result(std::move(coro));
    storage->name = "world";
    CHECK_EQ(extra::alive, 1);
    p(0);
    CHECK_EQ(result.value(), std::string("hello world"));
    CHECK_EQ(extra::alive, 0);  // gone with the frame

    promise_extra_storage<extra, reusable_storage> reused([] { return extra("again"); });
    future<int> open([](promise<int> q) { q(0); });
    CHECK_EQ(greet(reused, open).join(), std::string("hello again"));
    long heap = heap_allocations_of([&] { CHECK_EQ(greet(reused, open).join(), std::string("hello again")); });
    CHECK_HEAP(heap, 0);
    CHECK_EQ(extra::alive, 0);
}

static std::size_t coro_sz_state = 0;

// Runs twice() with its frame on this function's stack; returns the heap
// allocations it took and whether the frame was in the alloca'd memory.
static long run_on_stack(int x, bool *in_stack) {
    long heap = 0;
    stack_storage storage(coro_sz_state);
    void *mem = alloca(storage);
    storage = mem;
    void *frame = nullptr;
    heap = heap_allocations_of([&] { CHECK_EQ(twice(storage, x, &frame).join(), 2 * x); });
    *in_stack = frame == mem;
    return heap;
}

static void stack_storage_learns_the_frame_size_then_avoids_the_heap() {
    coro_sz_state = 0;
    bool in_stack = true;
    CHECK_HEAP(run_on_stack(1, &in_stack), 1);  // nothing reserved yet: heap
    CHECK(!in_stack);
    CHECK(coro_sz_state > 0);  // the size needed is remembered
    std::size_t learned = coro_sz_state;
    CHECK_HEAP(run_on_stack(2, &in_stack), 0);
    CHECK(in_stack);
    CHECK_EQ(coro_sz_state, learned);
}

static void static_storage_holds_one_frame_and_falls_back_when_small_or_busy() {
    static_storage<1024> stor;
    long heap = heap_allocations_of([&] {
        for (int i = 0; i < 10; i++) CHECK_EQ(twice(stor, i).join(), 2 * i);
    });
    CHECK_HEAP(heap, 0);

    static_storage<8> tiny;
    CHECK_HEAP(heap_allocations_of([&] { CHECK_EQ(twice(tiny, 4).join(), 8); }), 1);

    future<int> gate;
    auto p = gate.get_promise();
    future<int> held(wait_for(stor, gate));  // occupies the buffer
    CHECK_HEAP(heap_allocations_of([&] { CHECK_EQ(twice(stor, 5).join(), 10); }), 1);
    p(3);
    CHECK_EQ(held.value(), 4);
    CHECK_HEAP(heap_allocations_of([&] { CHECK_EQ(twice(stor, 6).join(), 12); }), 0);
}

static void placement_and_buffer_storages_use_the_memory_given() {
    alignas(__STDCPP_DEFAULT_NEW_ALIGNMENT__) static unsigned char mem[2048];
    placement_alloc place(mem);
    void *frame = nullptr;
    CHECK_HEAP(heap_allocations_of([&] { CHECK_EQ(twice(place, 3, &frame).join(), 6); }), 0);
    CHECK(frame == mem);

    std::vector<char> buffer;
    reusable_buffer_storage<std::vector<char>> bs(buffer);
    CHECK_EQ(twice(bs, 4, &frame).join(), 8);
    CHECK(!buffer.empty());
    CHECK(frame == buffer.data());
    CHECK_HEAP(heap_allocations_of([&] { CHECK_EQ(twice(bs, 5).join(), 10); }), 0);
}

static void make_promise_can_take_its_future_from_a_storage() {
    reusable_storage stor;
    int got = 0;
    promise<int> p = make_promise<int>([&](future<int> &f) { got = f.value(); }, stor);
    CHECK(stor.capacity() > 0);
    p(12);
    CHECK_EQ(got, 12);
    long heap = heap_allocations_of([&] {
        promise<int> q = make_promise<int>([&](future<int> &f) { got = f.value() + 1; }, stor);
        q(20);
    });
    CHECK_HEAP(heap, 0);
    CHECK_EQ(got, 21);
}

int main() {
    RUN(a_with_allocator_coroutine_is_an_async);
    RUN(frames_come_from_the_storage_and_go_back_to_it);
    RUN(a_member_coroutine_takes_the_storage_after_this);
    RUN(reusable_storage_reuses_one_buffer_without_the_heap);
    RUN(the_mtsafe_storage_sends_overlapping_frames_to_the_heap);
    RUN(the_mtsafe_storage_survives_threads);
    RUN(promise_extra_storage_keeps_an_object_as_long_as_the_frame);
    RUN(stack_storage_learns_the_frame_size_then_avoids_the_heap);
    RUN(static_storage_holds_one_frame_and_falls_back_when_small_or_busy);
    RUN(placement_and_buffer_storages_use_the_memory_given);
    RUN(make_promise_can_take_its_future_from_a_storage);
    return 0;
}
