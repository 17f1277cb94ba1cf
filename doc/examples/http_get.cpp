// An HTTP/1.1 GET client on <cothread/*.h> (doc/cpp.md, "Example: an HTTP GET client").
//
//   http_get [http://host[:port][/path]]
//
// Resolves the host, connects (5 s for each address), sends the request and
// reads the response to the end of the connection, all under one deadline;
// prints the status line and the body's length. Without a URL it serves
// itself a few pages on 127.0.0.1 (a task of the same loop) and fetches them
// from http://localhost:<port>, all at once.
#include <cothread/loop.h>
#include <cothread/resolve.h>
#include <cothread/sync_wait.h>
#include <cothread/tcp.h>
#include <cothread/timer.h>
#include <cothread/when_all.h>
#include <cothread/when_any.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

using namespace std::chrono_literals;

// ===== the client =====

struct url {
    std::string host, port, path;
};

// "http://host[:port][/path]" (a name or an IPv4 address); throws
// std::invalid_argument for anything else.
url parse_url(std::string_view text) {
    constexpr std::string_view scheme = "http://";
    if (!text.starts_with(scheme)) throw std::invalid_argument("not an http:// URL: " + std::string(text));
    text.remove_prefix(scheme.size());
    std::size_t slash = text.find('/');
    std::string_view authority = text.substr(0, slash);
    url u{std::string(authority), "80", slash == text.npos ? "/" : std::string(text.substr(slash))};
    if (std::size_t colon = authority.find(':'); colon != authority.npos) {
        u.host = authority.substr(0, colon);
        u.port = authority.substr(colon + 1);
    }
    if (u.host.empty() || u.port.empty()) throw std::invalid_argument("no host or port in " + std::string(text));
    return u;
}

// The first address of the host that accepts (localhost may be ::1, then
// 127.0.0.1).
cothread::task<cothread::tcp_socket> connect(cothread::loop &lp, const url &u) {
    std::error_code ec;
    for (const cothread::endpoint &ep : co_await cothread::resolve(lp, u.host, u.port, 5s)) {
        cothread::tcp_socket s = co_await cothread::tcp_socket::connect(lp, ep, 5s, ec);
        if (!ec) co_return s;
    }
    throw std::system_error(ec);
}

// A chunked body: "<hex size>\r\n<data>\r\n" ... "0\r\n\r\n".
std::string dechunk(std::string_view in) {
    std::string out;
    for (;;) {
        std::size_t size = 0, eol = in.find("\r\n");
        auto [end, ec] = std::from_chars(in.data(), in.data() + in.size(), size, 16);
        if (ec != std::errc() || eol == in.npos || in.size() - eol - 2 < size) throw std::runtime_error("bad chunked body");
        if (size == 0) return out;
        out.append(in.substr(eol + 2, size));
        in.remove_prefix(std::min(in.size(), eol + 2 + size + 2));
    }
}

struct response {
    std::string status_line, body;
};

// GET: the response, read up to the end of the connection.
cothread::task<response> get(cothread::loop &lp, url u) {
    cothread::tcp_socket s = co_await connect(lp, u);
    std::string request = "GET " + u.path + " HTTP/1.1\r\nHost: " + u.host + "\r\nConnection: close\r\n\r\n";
    co_await s.write(request, 5s);
    std::string raw;
    char buf[16384];
    while (std::size_t n = co_await s.read(buf, 10s)) raw.append(buf, n);  // 0: the end

    std::size_t eol = raw.find("\r\n"), end = raw.find("\r\n\r\n");
    if (!raw.starts_with("HTTP/1.") || end == raw.npos) throw std::runtime_error("not an HTTP response");
    response r{raw.substr(0, eol), raw.substr(end + 4)};
    std::string head = raw.substr(0, end + 2);
    std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
    if (head.find("\r\ntransfer-encoding: chunked\r\n") != head.npos) r.body = dechunk(r.body);
    co_return r;
}

// get() under one deadline for the whole request: the first of the two to
// end wins, and the other is stopped.
cothread::task<response> fetch(cothread::loop &lp, std::string text, std::chrono::seconds limit) {
    auto r = co_await cothread::when_any(get(lp, parse_url(text)), cothread::sleep_for(limit));
    if (r.index() == 1) throw std::system_error(std::make_error_code(std::errc::timed_out));
    co_return std::get<0>(std::move(r));
}

void print(const std::string &text, const response &r) {
    std::printf("%s: %s, %zu bytes\n", text.c_str(), r.status_line.c_str(), r.body.size());
}

// ===== a server for the demonstration =====

// Answers one request, then closes the connection.
cothread::task<void> answer(cothread::tcp_socket c) {
    std::string request;
    char buf[4096];
    while (request.find("\r\n\r\n") == request.npos) {
        std::size_t n = co_await c.read(buf, 5s);
        if (n == 0) co_return;
        request.append(buf, n);
    }
    std::string path = request.substr(4, request.find(' ', 4) - 4);  // "GET <path> HTTP/1.1"
    std::string reply;
    if (path == "/") {
        reply = "HTTP/1.1 200 OK\r\nContent-Length: 13\r\nConnection: close\r\n\r\nhello, world\n";
    } else if (path == "/big") {
        reply = "HTTP/1.1 200 OK\r\nContent-Length: 262144\r\nConnection: close\r\n\r\n" + std::string(262144, 'x');
    } else if (path == "/chunked") {
        reply = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                "4\r\none \r\n4\r\ntwo \r\n6\r\nthree\n\r\n0\r\n\r\n";
    } else {
        reply = "HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\nConnection: close\r\n\r\nnot found\n";
    }
    co_await c.write(reply, 5s);
}

cothread::task<void> serve(cothread::loop &lp, cothread::tcp_listener l) {
    for (;;) lp.spawn_detached(answer(co_await l.accept()));  // until the stop
}

// Fetches a few pages of `base` at once.
cothread::task<void> demo(cothread::loop &lp, std::string base) {
    const std::vector<std::string> urls = {base + "/", base + "/chunked", base + "/big", base + "/missing"};
    std::vector<cothread::task<response>> gets;
    for (const std::string &u : urls) gets.push_back(fetch(lp, u, 10s));
    std::vector<response> rs = co_await cothread::when_all(std::move(gets));
    for (std::size_t i = 0; i < rs.size(); i++) print(urls[i], rs[i]);
}

int main(int argc, char **argv) {
    cothread::loop lp;
    try {
        if (argc > 1) {
            print(argv[1], cothread::sync_wait(lp, fetch(lp, argv[1], 30s)));
            return 0;
        }
        auto l = cothread::tcp_listener::bind(lp, cothread::endpoint::v4("127.0.0.1", 0));
        std::string base = "http://localhost:" + std::to_string(l.local_endpoint().port());
        std::stop_source stop;
        lp.spawn_detached(serve(lp, std::move(l)), stop.get_token());
        cothread::sync_wait(lp, demo(lp, base));
        stop.request_stop();
        lp.run();  // until the server has ended
    } catch (const std::exception &e) {
        std::fprintf(stderr, "http_get: %s\n", e.what());
        return 1;
    }
    std::printf("all done\n");
}
