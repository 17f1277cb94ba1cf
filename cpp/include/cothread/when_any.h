// when_any: a task awaits several operations and gets the first to end.
// `co_await when_any(a, b, ...)` gives std::variant<R...> holding the
// winner's result at the winner's index (void gives std::monostate);
// `co_await when_any(std::vector<task<T>>)` gives std::pair<index, T> (an
// empty vector throws std::errc::invalid_argument). Arguments as for
// when_all (when_all.h).
// The first child to end wins, with a value or an exception (rethrown). The
// losers are stopped through their own stop sources and joined: the await
// ends only when every child has ended. Children are started in order, each
// until it first suspends; those after a child that ended during this start
// are never started. If the awaiting task's token fires, every child is
// stopped; a winner that ended first is returned, else
// std::errc::operation_canceled is thrown.
// A loser whose operation completed just before its stop has its result
// dropped (bytes a read took are gone): when data must not be lost, use the
// operation's own deadline, not a race against a timer.
#ifndef COTHREAD_WHEN_ANY_H_INCLUDED
#define COTHREAD_WHEN_ANY_H_INCLUDED

#include <utility>
#include <vector>

#include "detail/when.h"
#include "task.h"

namespace cothread {

/// `co_await when_any(a...)`: the first result, in a std::variant (see above).
template <typename... A>
    requires(!(detail::is_task_vector<std::remove_cvref_t<A>> || ...))
[[nodiscard]] auto when_any(A &&...a) {
    static_assert(detail::when_args_ok<A...>());
    return detail::when_tuple<true, A...>(std::forward<A>(a)...);
}

/// `co_await when_any(tasks)`: the first task to end, as {index, result}.
template <typename T>
[[nodiscard]] detail::when_vector<true, T> when_any(std::vector<task<T>> tasks) {
    return detail::when_vector<true, T>(std::move(tasks));
}

}  // namespace cothread

#endif
