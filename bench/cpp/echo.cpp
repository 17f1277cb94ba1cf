// TCP echo on loopback: cothread's tasks (<cothread/tcp.h>) against asio's
// C++20 coroutines, each server on its own thread, both driven by the same
// client (bench/c/echo_load.h: 64 connections ping-ponging 4 KiB messages,
// every byte checked) on the main thread.
//
// Each server is written as its library's user would write it:
//   ours: a tcp_listener, an accept loop spawning a detached task per
//         connection (nodelay), each reading into a 64 KiB buffer and
//         writing back what came; stopped by lp.post(request_stop) through
//         the stop token the tasks were spawned with.
//   asio: io_context(1), co_spawn detached, async_read_some + async_write
//         with as_tuple(use_awaitable), no_delay; stopped by
//         asio::post(close the acceptor; io.stop()).
//
// Best of COT_BENCH_ROUNDS (default 3), the servers alternating,
// COT_BENCH_SECONDS per server (default 3; also argv[1]). COT_BENCH_ONLY=
// cothread or =asio runs one server alone (for a profiler).
//
//     make -C bench/cpp asio             (needs libasio-dev)
//     COT_BENCH_ROUNDS=3 bench/cpp/bench-cpp-echo 3
#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stop_token>
#include <system_error>

#include <cothread/loop.h>
#include <cothread/tcp.h>

#include "echo_load.h"
#include "cot_echo.h"

// ===== ours =====

struct cot_state {
    cothread::loop lp;
    std::stop_source stop;
};

static void *cot_server_main(void *arg) {
    auto *srv = static_cast<server *>(arg);
    cot_state st;
    auto l = cothread::tcp_listener::bind(st.lp, cothread::endpoint::v4("127.0.0.1", 0));
    srv->port = l.local_endpoint().port();
    srv->loop = &st;
    st.lp.spawn_detached(cot_acceptor(std::move(l)), st.stop.get_token());
    sem_post(&srv->ready);
    st.lp.run();  // until the acceptor and every connection have ended
    return nullptr;
}

static void cot_server_stop(server *srv) {
    auto *st = static_cast<cot_state *>(srv->loop);
    st->lp.post([st] { st->stop.request_stop(); });
}

// ===== asio =====

using asio::ip::tcp;
constexpr auto nothrow = asio::experimental::as_tuple(asio::use_awaitable);

static asio::awaitable<void> asio_echo(tcp::socket s) {
    char buf[SERVER_BUF];
    for (;;) {
        auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), nothrow);
        if (ec) co_return;
        auto [ec2, m] = co_await asio::async_write(s, asio::buffer(buf, n), nothrow);
        if (ec2) co_return;
    }
}

static asio::awaitable<void> asio_acceptor(tcp::acceptor &a) {
    for (;;) {
        auto [ec, s] = co_await a.async_accept(nothrow);
        if (ec) co_return;
        s.set_option(tcp::no_delay(true));
        asio::co_spawn(a.get_executor(), asio_echo(std::move(s)), asio::detached);
    }
}

struct asio_state {
    asio::io_context io{1};  // concurrency hint 1: no locking
    tcp::acceptor a{io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
};

static void *asio_server_main(void *arg) {
    auto *srv = static_cast<server *>(arg);
    asio_state st;
    srv->port = st.a.local_endpoint().port();
    srv->loop = &st;
    asio::co_spawn(st.io, asio_acceptor(st.a), asio::detached);
    sem_post(&srv->ready);
    st.io.run();
    return nullptr;
}

static void asio_server_stop(server *srv) {
    auto *st = static_cast<asio_state *>(srv->loop);
    asio::post(st->io, [st] {
        st->a.close();
        st->io.stop();
    });
}

// ===== driver =====

int main(int argc, char **argv) {
    double seconds = argc > 1 ? std::atof(argv[1]) : env_num("COT_BENCH_SECONDS", 3);
    int rounds = int(env_num("COT_BENCH_ROUNDS", 3));
    const char *only = std::getenv("COT_BENCH_ONLY");
    if (!(seconds > 0)) {
        std::fprintf(stderr, "usage: %s [seconds]\n", argv[0]);
        return 2;
    }
    if (only && std::strcmp(only, "cothread") && std::strcmp(only, "asio")) {
        std::fprintf(stderr, "COT_BENCH_ONLY=%s: expected cothread or asio\n", only);
        return 2;
    }
    pattern_fill();

    unsigned v = cot_version();
    std::printf("TCP echo on loopback: %d connections, %d-byte messages, %g s per server, best of %d\n", CONNS,
                MSG, seconds, rounds);
    std::printf("cothread %u.%u.%u, asio %d.%d.%d, g++ %d.%d\n", v >> 16, (v >> 8) & 0xff, v & 0xff,
                ASIO_VERSION / 100000, ASIO_VERSION / 100 % 1000, ASIO_VERSION % 100, __GNUC__, __GNUC_MINOR__);
    server servers[2] = {};
    servers[0].name = "cothread";
    servers[0].main = cot_server_main;
    servers[0].stop = cot_server_stop;
    servers[1].name = "asio";
    servers[1].main = asio_server_main;
    servers[1].stop = asio_server_stop;
    result best[2] = {};
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < 2; i++) {
            int k = r % 2 ? 1 - i : i;  // alternate which goes first
            if (only && std::strcmp(only, servers[k].name)) continue;
            result res = measure(&servers[k], seconds);
            report(servers[k].name, res);
            keep_best(&best[k], res);
        }
    if (!only)
        std::printf("ratio ours/asio: throughput %.3f (target >= 1.0), server CPU per message %.3f\n",
                    msg_rate(best[0]) / msg_rate(best[1]), cpu_per_msg_ns(best[0]) / cpu_per_msg_ns(best[1]));
    return 0;
}
