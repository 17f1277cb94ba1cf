// deadline: when an operation gives up. Built from a duration (relative to
// the moment the operation starts; negative is refused with COT_EINVAL), a
// steady_clock time point (past: try once, then time out), or
// deadline::never(). An operation converts it once, when it starts, to the
// C ABI's relative timeout in ns (COT_FOREVER for never).
#ifndef COTHREAD_DEADLINE_H_INCLUDED
#define COTHREAD_DEADLINE_H_INCLUDED

#include <cothread.h>

#include <chrono>
#include <cstdint>

namespace cothread {

class deadline {
public:
    using clock = std::chrono::steady_clock;

    /// No deadline.
    static constexpr deadline never() noexcept { return deadline(); }

    /// `d` from the start of the operation.
    template <typename Rep, typename Period>
    constexpr deadline(std::chrono::duration<Rep, Period> d) noexcept : m_kind(kind::relative) {
        if (d < d.zero()) {
            m_ns = -1;  // refused when the operation starts
        } else if (d >= std::chrono::duration<double, std::nano>(k_huge)) {
            m_kind = kind::never;
        } else {
            m_ns = std::chrono::ceil<std::chrono::nanoseconds>(d).count();
        }
    }

    /// At `tp` (steady_clock is CLOCK_MONOTONIC, the loop's clock).
    template <typename Duration>
    constexpr deadline(std::chrono::time_point<clock, Duration> tp) noexcept : m_kind(kind::absolute) {
        if (tp.time_since_epoch() >= std::chrono::duration<double, std::nano>(k_huge)) {
            m_kind = kind::never;
        } else {
            m_ns = std::chrono::ceil<std::chrono::nanoseconds>(tp.time_since_epoch()).count();
        }
    }

    constexpr bool is_never() const noexcept { return m_kind == kind::never; }

    /// The timeout in ns from the loop's current time, for the C ABI
    /// (COT_FOREVER for never, 0 for a past time point), or COT_EINVAL for
    /// a negative duration. Call it when the operation starts.
    int timeout_ns(cot_loop *lp, std::uint64_t &out) const noexcept {
        switch (m_kind) {
        case kind::never: out = COT_FOREVER; return 0;
        case kind::relative:
            if (m_ns < 0) return COT_EINVAL;
            out = static_cast<std::uint64_t>(m_ns);
            return 0;
        case kind::absolute: {
            std::uint64_t now = cot_loop_now(lp);
            std::uint64_t at = static_cast<std::uint64_t>(m_ns < 0 ? 0 : m_ns);
            out = at > now ? at - now : 0;
            return 0;
        }
        }
        return COT_EINVAL;
    }

private:
    // Beyond ~146 years a deadline is never reached (and ns would overflow).
    static constexpr double k_huge = 4.6e18;
    enum class kind : unsigned char { never, relative, absolute };
    constexpr deadline() noexcept : m_kind(kind::never) {}

    kind m_kind;
    std::int64_t m_ns = 0;
};

}  // namespace cothread

#endif
