// when_all: a task awaits several operations at once and gets all their
// results. `co_await when_all(a, b, ...)` gives std::tuple<R...> (void gives
// std::monostate); `co_await when_all(std::vector<task<T>>)` gives
// std::vector<T> (an empty vector throws std::errc::invalid_argument).
// Arguments: task<T> (moved in), cocls::future<T>& (by reference: it must
// outlive its resolution), cocls::async<T> (moved in) and single awaitables
// of a task such as sleep_for(d). Each runs as a child on its own strand,
// with its own stop source linked to the awaiting task's token. At the first
// exception the others are stopped; when they have all ended, that exception
// is rethrown. A cocls future cannot be cancelled: a stopped child waiting
// on an lvalue future ends at once with std::errc::operation_canceled (its
// waiter frees itself when the future resolves); an async is waited for.
#ifndef COTHREAD_WHEN_ALL_H_INCLUDED
#define COTHREAD_WHEN_ALL_H_INCLUDED

#include <utility>
#include <vector>

#include "detail/when.h"
#include "task.h"

namespace cothread {

/// `co_await when_all(a...)`: every result, in a std::tuple (see above).
template <typename... A>
    requires(!(detail::is_task_vector<std::remove_cvref_t<A>> || ...))
[[nodiscard]] auto when_all(A &&...a) {
    static_assert(detail::when_args_ok<A...>());
    return detail::when_tuple<false, A...>(std::forward<A>(a)...);
}

/// `co_await when_all(tasks)`: every task's result, in order.
template <typename T>
[[nodiscard]] detail::when_vector<false, T> when_all(std::vector<task<T>> tasks) {
    return detail::when_vector<false, T>(std::move(tasks));
}

}  // namespace cothread

#endif
