// The cothread echo server of the C++ echo benchmarks (echo.cpp, echo_group.cpp),
// written as its user would: an accept loop spawning a detached task per
// connection (nodelay), each reading into SERVER_BUF bytes and writing back
// what came, all stopped through the accept loop's stop token.
// Include after echo_load.h (SERVER_BUF).
#ifndef BENCH_CPP_COT_ECHO_H
#define BENCH_CPP_COT_ECHO_H

#include <array>
#include <cstddef>
#include <span>
#include <stop_token>
#include <system_error>

#include <cothread/loop.h>
#include <cothread/tcp.h>

static cothread::task<void> cot_echo(cothread::tcp_socket s) {
    std::array<std::byte, SERVER_BUF> buf;
    std::error_code ec;
    for (;;) {
        std::size_t n = co_await s.read(buf, ec);
        if (ec || n == 0) co_return;
        co_await s.write(std::span(buf.data(), n), ec);
        if (ec) co_return;
    }
}

// Accepts on its loop until stopped; the connections get its stop token.
static cothread::task<void> cot_acceptor(cothread::tcp_listener l) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    std::stop_token tok = co_await cothread::this_task::stop_token();
    std::error_code ec;
    for (;;) {
        cothread::tcp_socket s = co_await l.accept(ec);
        if (ec) co_return;  // stopped
        s.set_nodelay(true);
        lp.spawn_detached(cot_echo(std::move(s)), tok);
    }
}

#endif
