// The exceptions COCLS code catches. All derive from std::exception.
#ifndef COCLS_EXCEPTIONS_H_INCLUDED
#define COCLS_EXCEPTIONS_H_INCLUDED

#include <exception>

// COCLS's exceptions.h names these standard headers; programs written for it may rely on them.
#include <stdexcept>

namespace cocls {

/// The awaited operation will never complete: its promise was dropped, its
/// queue destroyed, its timer cancelled.
class await_canceled_exception : public std::exception {
public:
    const char *what() const noexcept override { return "cocls: co_await canceled"; }
};

/// A value was read from a future (or generator) that has none yet.
class value_not_ready_exception : public std::exception {
public:
    const char *what() const noexcept override { return "cocls: value is not ready"; }
};

/// A finished generator was asked for another value.
class no_more_values_exception : public std::exception {
public:
    const char *what() const noexcept override { return "cocls: no more values"; }
};

/// The object that would have delivered the value is gone.
class no_longer_available_exception : public std::exception {
public:
    const char *what() const noexcept override { return "cocls: no longer available"; }
};

/// COCLS's own spelling, kept for code written against it.
using no_longer_avaible_exception = no_longer_available_exception;

}  // namespace cocls

#endif
