// cothread::category(): the error category of the core's COT_E* codes, so a
// failed operation throws std::system_error whose code compares equal to a
// std::errc (`e.code() == std::errc::timed_out`). Codes are stored positive
// (-COT_ETIMEDOUT); the COT_EAI_* name-lookup codes have no errc and match
// only themselves.
#ifndef COTHREAD_ERROR_H_INCLUDED
#define COTHREAD_ERROR_H_INCLUDED

#include <cothread.h>

#include <string>
#include <system_error>

namespace cothread {

namespace detail {

class error_category final : public std::error_category {
public:
    const char *name() const noexcept override { return "cothread"; }
    std::string message(int ev) const override { return cot_strerror(-ev); }
    std::error_condition default_error_condition(int ev) const noexcept override {
        // The errno-valued codes are negative errno numbers; the others
        // (COT_EAI_* from -3001, COT_EDROPPED) are the core's own.
        if (ev > 0 && ev < 3000) return std::error_condition(ev, std::generic_category());
        return std::error_condition(ev, *this);
    }
};

}  // namespace detail

/// The category of cothread's error codes (one object per program).
inline const std::error_category &category() noexcept {
    static const detail::error_category c;
    return c;
}

/// A std::error_code for a COT_E* code (negative; 0 gives no error).
inline std::error_code make_error(int cot_code) noexcept { return std::error_code(-cot_code, category()); }

/// Throws std::system_error for a COT_E* code.
[[noreturn]] inline void throw_error(int cot_code) { throw std::system_error(make_error(cot_code)); }

}  // namespace cothread

#endif
