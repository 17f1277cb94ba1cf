// Peak memory of large writes: 8 clients each write 64 MiB in one write to
// a server that reads all of it (into 64 MiB per connection, every byte
// checked), all on one loop on one thread. cothread's tasks against asio's
// C++20 coroutines, each side in a child process of its own, so each peak
// (getrusage's ru_maxrss of the child) is that side's alone.
//
// The buffers themselves are 8 x 64 MiB sent and 8 x 64 MiB received:
// 1 GiB. A library that copied what the socket cannot take at once would
// add about 0.5 GiB more.
//
//     make -C bench/cpp asio             (needs libasio-dev)
//     bench/cpp/bench-cpp-bigwrite       COT_BENCH_ROUNDS (default 3)
#include <asio.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cothread/loop.h>
#include <cothread/sync_wait.h>
#include <cothread/tcp.h>
#include <cothread/when_all.h>

#include "common.h"

static constexpr int CLIENTS = 8;
static constexpr std::size_t SIZE = std::size_t(64) << 20;

static std::vector<std::byte> filled(int id) {
    std::vector<std::byte> v(SIZE);
    for (std::size_t i = 0; i < SIZE; i++) v[i] = std::byte((i * 31 + std::size_t(id)) & 0xff);
    return v;
}

static bool intact(const std::vector<std::byte> &got, int id) {
    for (std::size_t i = 0; i < SIZE; i += 4093)
        if (got[i] != std::byte((i * 31 + std::size_t(id)) & 0xff)) return false;
    return true;
}

// ===== ours =====

static cothread::task<bool> cot_receive(cothread::tcp_socket s) {
    std::byte id_byte;
    co_await s.read_exact(std::span(&id_byte, 1));
    std::vector<std::byte> got(SIZE);
    co_await s.read_exact(got);
    co_return intact(got, int(id_byte));
}

static cothread::task<bool> cot_send(cothread::endpoint at, int id) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    std::vector<std::byte> data = filled(id);
    cothread::tcp_socket s = co_await cothread::tcp_socket::connect(lp, at);
    std::byte id_byte = std::byte(id);
    co_await s.write(std::span(&id_byte, 1));
    co_return co_await s.write(data) == SIZE;  // one write of 64 MiB
}

static cothread::task<bool> cot_run() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    auto l = cothread::tcp_listener::bind(lp, cothread::endpoint::v4("127.0.0.1", 0));
    std::vector<cothread::task<bool>> clients;
    for (int i = 0; i < CLIENTS; i++) clients.push_back(cot_send(l.local_endpoint(), i));
    auto server = [](cothread::tcp_listener &l) -> cothread::task<bool> {
        std::vector<cothread::task<bool>> conns;
        for (int i = 0; i < CLIENTS; i++) conns.push_back(cot_receive(co_await l.accept()));
        bool ok = true;
        for (bool r : co_await cothread::when_all(std::move(conns))) ok = ok && r;
        co_return ok;
    };
    auto [sent, received] = co_await cothread::when_all(cothread::when_all(std::move(clients)), server(l));
    bool ok = received;
    for (bool r : sent) ok = ok && r;
    co_return ok;
}

static bool cot_side() {
    cothread::loop lp;
    return cothread::sync_wait(lp, cot_run());
}

// ===== asio =====

using asio::ip::tcp;

static asio::awaitable<void> asio_receive(tcp::socket s, int *ok) {
    std::byte id_byte;
    co_await asio::async_read(s, asio::buffer(&id_byte, 1), asio::use_awaitable);
    std::vector<std::byte> got(SIZE);
    co_await asio::async_read(s, asio::buffer(got), asio::use_awaitable);
    if (intact(got, int(id_byte))) ++*ok;
}

static asio::awaitable<void> asio_accept(tcp::acceptor &a, int *ok) {
    for (int i = 0; i < CLIENTS; i++) {
        tcp::socket s = co_await a.async_accept(asio::use_awaitable);
        asio::co_spawn(a.get_executor(), asio_receive(std::move(s), ok), asio::detached);
    }
}

static asio::awaitable<void> asio_send(tcp::endpoint at, int id, int *ok) {
    std::vector<std::byte> data = filled(id);
    tcp::socket s(co_await asio::this_coro::executor);
    co_await s.async_connect(at, asio::use_awaitable);
    std::byte id_byte = std::byte(id);
    co_await asio::async_write(s, asio::buffer(&id_byte, 1), asio::use_awaitable);
    std::size_t n = co_await asio::async_write(s, asio::buffer(data), asio::use_awaitable);
    if (n == SIZE) ++*ok;
}

static bool asio_side() {
    asio::io_context io(1);
    tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    int received = 0, sent = 0;
    asio::co_spawn(io, asio_accept(a, &received), asio::detached);
    for (int i = 0; i < CLIENTS; i++) asio::co_spawn(io, asio_send(a.local_endpoint(), i, &sent), asio::detached);
    io.run();
    return received == CLIENTS && sent == CLIENTS;
}

// ===== driver =====

/// Runs `side` in a child; its peak resident memory in MiB (-1: it failed).
static double peak_mib(bool (*side)()) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) _exit(side() ? 0 : 1);
    int status = 0;
    struct rusage ru;
    CHECK(wait4(pid, &status, 0, &ru) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
    return double(ru.ru_maxrss) / 1024;  // KiB
}

int main() {
    int rounds = int(env_num("COT_BENCH_ROUNDS", 3));
    unsigned v = cot_version();
    std::printf("Peak memory: %d clients each writing %zu MiB in one write, read whole; %d rounds\n", CLIENTS,
                SIZE >> 20, rounds);
    std::printf("cothread %u.%u.%u, asio %d.%d.%d, g++ %d.%d\n", v >> 16, (v >> 8) & 0xff, v & 0xff,
                ASIO_VERSION / 100000, ASIO_VERSION / 100 % 1000, ASIO_VERSION % 100, __GNUC__, __GNUC_MINOR__);
    double best[2] = {0, 0};
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < 2; i++) {
            int k = r % 2 ? 1 - i : i;  // alternate which goes first
            double p = peak_mib(k == 0 ? cot_side : asio_side);
            if (p < 0) {
                std::fprintf(stderr, "%s: a transfer failed\n", k == 0 ? "cothread" : "asio");
                return 1;
            }
            std::printf("  %-8s peak %.0f MiB\n", k == 0 ? "cothread" : "asio", p);
            if (best[k] == 0 || p < best[k]) best[k] = p;
        }
    }
    std::printf("ratio ours/asio, lowest peak: %.3f (target <= 1.1)\n", best[0] / best[1]);
    return 0;
}
