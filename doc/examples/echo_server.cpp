// A TCP echo server on <cothread/*.h> (doc/cpp.md, "Example: an echo server").
//
//   echo_server [port] [--count N] [--self-test]
//
// Listens on 127.0.0.1 (port 0 or none: a free one, printed), runs a task
// per connection, and stops on SIGINT or SIGTERM, or after N connections.
// --self-test also runs three clients of its own (and --count 3): each
// writes 256 KiB while it reads them back, and checks every byte.
#include <cothread/loop.h>
#include <cothread/signal.h>
#include <cothread/sync_wait.h>
#include <cothread/tcp.h>
#include <cothread/when_all.h>
#include <cothread/when_any.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <variant>
#include <vector>

using namespace std::chrono_literals;

// One connection: what comes goes back. A peer silent for 30 s is dropped.
cothread::task<void> echo(cothread::tcp_socket s) {
    std::string peer = s.peer_endpoint().to_string();
    std::byte buf[16384];
    std::size_t total = 0;
    try {
        while (std::size_t n = co_await s.read(buf, 30s)) {  // 0: the peer is done
            co_await s.write(std::span(buf, n), 30s);       // all of it, or throws
            total += n;
        }
        std::printf("%s: %zu bytes echoed\n", peer.c_str(), total);
    } catch (const std::system_error &e) {  // timed_out, connection_reset, our stop, ...
        std::printf("%s: %s after %zu bytes\n", peer.c_str(), e.what(), total);
    }
}

// Accepts until `count` connections (0: no limit), or until stopped. The
// connections get `conns` as their stop token.
cothread::task<void> accept_all(cothread::loop &lp, cothread::tcp_listener &l, int count, std::stop_token conns) {
    for (int i = 0; count == 0 || i < count; i++) lp.spawn_detached(echo(co_await l.accept()), conns);
}

// Serves until `count` connections, or SIGINT or SIGTERM: whichever comes
// first, the other is stopped. A signal stops the connections too: a
// pending read or write ends with operation_canceled.
cothread::task<void> serve(cothread::loop &lp, cothread::tcp_listener l, int count) {
    cothread::signal_set signals(lp, {SIGINT, SIGTERM});  // watched from here on
    std::printf("listening on %s\n", l.local_endpoint().to_string().c_str());
    std::fflush(stdout);
    std::stop_source conns;
    auto r = co_await cothread::when_any(accept_all(lp, l, count, conns.get_token()), signals.wait());
    if (r.index() == 1) {
        std::printf("server: %s, stopping\n", std::get<1>(r) == SIGINT ? "SIGINT" : "SIGTERM");
        conns.request_stop();
    }
}

// A client: writes 256 KiB while it reads them back (a write and a read
// waiting at once on one socket), then checks them.
cothread::task<void> client(cothread::loop &lp, cothread::endpoint server, int id) {
    cothread::tcp_socket s = co_await cothread::tcp_socket::connect(lp, server, 2s);
    std::string sent(256 * 1024, '\0'), back(sent.size(), '\0');
    for (std::size_t i = 0; i < sent.size(); i++) sent[i] = static_cast<char>('a' + (i * 7 + id) % 26);
    co_await cothread::when_all(s.write(sent, 10s), s.read_exact(std::as_writable_bytes(std::span(back)), 10s));
    s.shutdown_write();
    std::byte more[1];
    if (co_await s.read(more, 10s) != 0 || back != sent) throw std::runtime_error("the bytes did not come back");
    std::printf("client %d: %zu bytes came back\n", id, back.size());
}

cothread::task<void> self_test(cothread::loop &lp, cothread::endpoint server) {
    std::vector<cothread::task<void>> clients;
    for (int id = 0; id < 3; id++) clients.push_back(client(lp, server, id));
    co_await cothread::when_all(std::move(clients));
}

// A whole number in [lo, hi], else -1.
long number(const char *text, long lo, long hi) {
    char *end = nullptr;
    long v = std::strtol(text, &end, 10);
    return *text && !*end && v >= lo && v <= hi ? v : -1;
}

int main(int argc, char **argv) {
    long port = 0, count = 0;
    bool test = false;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--self-test")) {
            test = true;
            count = 3;
        } else if (!std::strcmp(argv[i], "--count") && i + 1 < argc) {
            count = number(argv[++i], 1, 1000000);
        } else {
            port = number(argv[i], 0, 65535);
        }
    }
    if (port < 0 || count < 0) {
        std::fprintf(stderr, "usage: echo_server [port] [--count N] [--self-test]\n");
        return 2;
    }

    cothread::loop lp;
    auto l = cothread::tcp_listener::bind(lp, cothread::endpoint::v4("127.0.0.1", static_cast<std::uint16_t>(port)));
    cothread::endpoint ep = l.local_endpoint();
    lp.spawn_detached(serve(lp, std::move(l), static_cast<int>(count)));
    try {
        if (test) cothread::sync_wait(lp, self_test(lp, ep));
        lp.run();  // until the server and every connection have ended
    } catch (const std::exception &e) {
        std::fprintf(stderr, "echo_server: %s\n", e.what());
        return 1;
    }
    std::printf("all done\n");
}
