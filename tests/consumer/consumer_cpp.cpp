// A C++20 program using cothread::cpp: the C header is usable from C++, and
// the installed <cocls/*.h> headers run coroutines on the installed core, and
// the installed <cothread/*.h> run a task on a loop, with a TCP listener.
#include <cocls/async.h>
#include <cocls/future.h>
#include <cothread.h>
#include <cothread/sync_wait.h>
#include <cothread/tcp.h>
#include <cothread/timer.h>

#include <chrono>

#include <cstdio>

static_assert(__cplusplus >= 202002L, "cothread::cpp must bring C++20");

static cocls::async<int> twice(int v) { co_return 2 * v; }

static cocls::future<int> sum_of_twice(int n) {
    int sum = 0;
    for (int i = 1; i <= n; i++) {
        sum += co_await twice(i);
        co_await cocls::pause();
    }
    co_return sum;
}

static cothread::task<int> after_a_nap(int v) {
    co_await cothread::sleep_for(std::chrono::milliseconds(1));
    co_return v + 1;
}

int main() {
    constexpr unsigned expected = (static_cast<unsigned>(COT_VERSION_MAJOR) << 16) |
                                  (static_cast<unsigned>(COT_VERSION_MINOR) << 8) |
                                  static_cast<unsigned>(COT_VERSION_PATCH);
    if (cot_version() != expected) {
        std::fprintf(stderr, "cot_version() = %#x, expected %#x\n", cot_version(), expected);
        return 1;
    }
    int sum = sum_of_twice(4).join();
    if (sum != 20) {
        std::fprintf(stderr, "sum_of_twice(4) = %d, expected 20\n", sum);
        return 1;
    }
    cothread::loop lp;
    if (cothread::sync_wait(lp, after_a_nap(41)) != 42) {
        std::fprintf(stderr, "sync_wait(after_a_nap(41)) != 42\n");
        return 1;
    }
    cothread::tcp_listener l = cothread::tcp_listener::bind(lp, cothread::endpoint::v4("127.0.0.1", 0));
    if (l.local_endpoint().port() == 0) {
        std::fprintf(stderr, "tcp_listener::bind gave no port\n");
        return 1;
    }
    std::printf("cothread %s\n", cot_version_string());
    std::printf("consumer_cpp ok\n");
    return 0;
}
