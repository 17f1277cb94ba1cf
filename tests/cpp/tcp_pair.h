// What the C++ socket tests share: a connected TCP pair made through a
// listener, and a string's bytes.
#ifndef COTHREAD_TEST_TCP_PAIR_H
#define COTHREAD_TEST_TCP_PAIR_H

#include <cothread/loop.h>
#include <cothread/tcp.h>

#include <chrono>
#include <span>
#include <string>
#include <utility>

#include "check.h"

inline std::span<const std::byte> bytes(const std::string &s) { return std::as_bytes(std::span(s)); }

// A connected pair (client, accepted) through a listener on `ep` (port 0: any).
inline cothread::task<std::pair<cothread::tcp_socket, cothread::tcp_socket>> connected(
    cothread::endpoint ep = cothread::endpoint::v4("127.0.0.1", 0)) {
    using namespace std::chrono_literals;
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    cothread::tcp_listener l = cothread::tcp_listener::bind(lp, ep);
    cothread::tcp_socket c = co_await cothread::tcp_socket::connect(lp, l.local_endpoint(), 5s);
    cothread::tcp_socket a = co_await l.accept(5s);
    CHECK(c.peer_endpoint() == a.local_endpoint());
    CHECK(a.peer_endpoint() == c.local_endpoint());
    co_return std::pair(std::move(c), std::move(a));
}

#endif
