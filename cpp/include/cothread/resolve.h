// resolve(lp, host, service): the addresses of a name, looked up on the
// loop's thread pool (cot_resolve_start) while the task waits:
// `for (endpoint &ep : co_await resolve(lp, "example.org", "443"))`.
// Stream addresses only (one per address), IPv4 and IPv6. An empty host or
// service is left out. The stop token and the deadline end the lookup
// (operation_canceled, timed_out). A name that does not exist throws an
// error equal to make_error(COT_EAI_NONAME) (the COT_EAI_* codes have no
// std::errc); a trailing std::error_code& takes it instead.
#ifndef COTHREAD_RESOLVE_H_INCLUDED
#define COTHREAD_RESOLVE_H_INCLUDED

#include <cothread.h>
#include <netdb.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "deadline.h"
#include "detail/op.h"
#include "endpoint.h"
#include "loop.h"

namespace cothread {

namespace detail {

class resolve_op : public op<resolve_op, std::vector<endpoint>> {
public:
    resolve_op(cot_loop *lp, std::string_view host, std::string_view service, deadline dl, std::error_code *ec)
        : op(lp, op_kind::resolve, 0, dl, ec), m_host(host), m_service(service) {}
    std::int64_t try_now() noexcept { return COT_EAGAIN; }
    int start(std::uint64_t ns) noexcept {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        cot_resolve id = 0;
        int e = cot_resolve_start(m_lp, m_host.empty() ? nullptr : m_host.c_str(),
                                  m_service.empty() ? nullptr : m_service.c_str(), &hints, ns, &on_done, this, &id);
        m_key = id;
        return e;
    }
    std::vector<endpoint> done() noexcept { return std::move(m_out); }
    std::vector<endpoint> failed() noexcept { return {}; }

private:
    static void on_done(cot_loop *, cot_req, int status, addrinfo *res, void *data) {
        auto *self = static_cast<resolve_op *>(data);
        try {
            for (addrinfo *p = res; p; p = p->ai_next) self->m_out.emplace_back(p->ai_addr, p->ai_addrlen);
        } catch (...) {
            status = COT_ENOMEM;
        }
        if (res) freeaddrinfo(res);
        self->finish(status);
    }
    std::string m_host, m_service;
    std::vector<endpoint> m_out;
};

}  // namespace detail

/// `co_await resolve(lp, host, service)`: the addresses, in the system's order.
inline detail::resolve_op resolve(loop &lp, std::string_view host, std::string_view service,
                                  deadline dl = deadline::never()) {
    return {lp.native(), host, service, dl, nullptr};
}
inline detail::resolve_op resolve(loop &lp, std::string_view host, std::string_view service, deadline dl,
                                  std::error_code &ec) {
    return {lp.native(), host, service, dl, &ec};
}

}  // namespace cothread

#endif
