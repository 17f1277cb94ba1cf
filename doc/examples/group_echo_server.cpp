// A TCP echo server on every core (doc/cpp.md, "Many cores"): a
// cothread::loop_group, a task per connection.
//
//   group_echo_server [port] [--loops N] [--handoff] [--self-test]
//
// Connections reach the loops in one of two ways: each loop has its own
// listener on the port (SO_REUSEPORT, the default), or loop 0 alone accepts
// and hands each connection to the loop with the fewest (--handoff). Stops
// on SIGINT or SIGTERM; --self-test runs 32 clients of its own instead, then
// stops, and prints how the connections were spread.
#include <cothread/loop_group.h>
#include <cothread/signal.h>
#include <cothread/sync_wait.h>
#include <cothread/tcp.h>
#include <cothread/timer.h>
#include <cothread/when_all.h>

#include <csignal>
#include <signal.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

using namespace std::chrono_literals;

// One connection: what comes goes back; a peer silent for 30 s is dropped.
cothread::task<void> echo(cothread::tcp_socket s) {
    std::byte buf[16384];
    try {
        while (std::size_t n = co_await s.read(buf, 30s)) co_await s.write(std::span(buf, n), 30s);
    } catch (const std::system_error &) {  // timed out, reset, or the shutdown's stop
    }
}

// Accepts on one loop until the shutdown stops it. With `g`, each
// connection goes to the loop with the fewest; without, it stays here.
cothread::task<void> accept_all(cothread::tcp_listener l, cothread::loop_group *g) {
    cothread::loop &here = co_await cothread::this_task::get_loop();
    for (;;) {
        cothread::tcp_socket s = co_await l.accept();
        if (g) g->hand_off(s, echo);
        else here.spawn_detached(echo(std::move(s)));
    }
}

// A client's echo: 64 KiB out and back, every byte checked.
cothread::task<void> echo_check(cothread::tcp_socket &s, int id) {
    std::string sent(64 * 1024, '\0'), back(sent.size(), '\0');
    for (std::size_t i = 0; i < sent.size(); i++) sent[i] = static_cast<char>('a' + (i * 7 + id) % 26);
    co_await cothread::when_all(s.write(sent, 10s), s.read_exact(std::as_writable_bytes(std::span(back)), 10s));
    if (back != sent) throw std::runtime_error("the bytes did not come back");
}

// 32 clients connect, then all echo at once; how the server spread their
// connections over its loops is printed while they are open.
cothread::task<void> self_test(cothread::loop &lp, cothread::loop_group &g, cothread::endpoint server) {
    std::vector<cothread::tcp_socket> socks;
    for (int id = 0; id < 32; id++) socks.push_back(co_await cothread::tcp_socket::connect(lp, server, 5s));
    std::size_t open = 0;
    for (int tries = 0; open < socks.size() && tries < 500; tries++) {  // the loops take them in
        co_await cothread::sleep_for(10ms);
        open = 0;
        for (std::size_t i = 0; i < g.size(); i++) open += g.load(i);
    }
    std::printf("connections per loop:");
    for (std::size_t i = 0; i < g.size(); i++) std::printf(" %zu", g.load(i));
    std::printf("\n");
    std::vector<cothread::task<void>> echoes;
    for (int id = 0; id < 32; id++) echoes.push_back(echo_check(socks[static_cast<std::size_t>(id)], id));
    co_await cothread::when_all(std::move(echoes));
    std::printf("32 clients: every byte came back\n");
}

long number(const char *text, long lo, long hi) {
    char *end = nullptr;
    long v = std::strtol(text, &end, 10);
    return *text && !*end && v >= lo && v <= hi ? v : -1;
}

int main(int argc, char **argv) {
    long port = 0, loops = 0;
    bool handoff = false, test = false;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--self-test")) test = true;
        else if (!std::strcmp(argv[i], "--handoff")) handoff = true;
        else if (!std::strcmp(argv[i], "--loops") && i + 1 < argc) loops = number(argv[++i], 1, 1024);
        else port = number(argv[i], 0, 65535);
    }
    if (port < 0 || loops < 0) {
        std::fprintf(stderr, "usage: group_echo_server [port] [--loops N] [--handoff] [--self-test]\n");
        return 2;
    }
    // SIGINT and SIGTERM are this thread's (a signal_set below): blocked
    // before the loops' threads start, which inherit the mask.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

    try {
        cothread::loop_group g({.loops = static_cast<std::size_t>(loops), .pin = true, .grace = 5s});
        cothread::endpoint ep = cothread::endpoint::v4("127.0.0.1", static_cast<std::uint16_t>(port));
        g.each([&](cothread::loop &lp, std::size_t i) {
            if (handoff && i != 0) return;
            auto l = cothread::tcp_listener::bind(lp, ep, {.reuse_port = !handoff});
            ep = l.local_endpoint();  // port 0: the others bind the port the first got
            lp.spawn_detached(accept_all(std::move(l), handoff ? &g : nullptr));
        });
        std::printf("listening on %s, %zu loops, %s\n", ep.to_string().c_str(), g.size(),
                    handoff ? "loop 0 hands connections out" : "a listener per loop");
        std::fflush(stdout);

        cothread::loop main_loop;  // this thread's: the clients, or the signals
        if (test) {
            cothread::sync_wait(main_loop, self_test(main_loop, g, ep));
        } else {
            cothread::signal_set signals(main_loop, {SIGINT, SIGTERM});
            int s = cothread::sync_wait(main_loop, signals.wait());
            std::printf("%s: stopping\n", s == SIGINT ? "SIGINT" : "SIGTERM");
        }
    } catch (const std::exception &e) {  // ~loop_group has shut the loops down
        std::fprintf(stderr, "group_echo_server: %s\n", e.what());
        return 1;
    }
    std::printf("all done\n");
}
