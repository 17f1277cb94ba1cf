// Minimal checks for the C++ tests: CHECK(cond), CHECK_EQ(a, b), CHECK_THROWS(expr, type).
// A failed check prints where and exits 1.
#ifndef COCLS_TEST_CHECK_H
#define COCLS_TEST_CHECK_H

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            std::exit(1);                                                            \
        }                                                                            \
    } while (0)

#define CHECK_EQ(a, b)                                                                   \
    do {                                                                                 \
        auto check_a_ = (a);                                                             \
        auto check_b_ = (b);                                                             \
        if (!(check_a_ == check_b_)) {                                                   \
            std::ostringstream check_s_;                                                 \
            check_s_ << check_a_ << " != " << check_b_;                                  \
            std::fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%s)\n", __FILE__, __LINE__, \
                         #a, #b, check_s_.str().c_str());                                \
            std::exit(1);                                                                \
        }                                                                                \
    } while (0)

#define CHECK_THROWS(expr, type)                                                         \
    do {                                                                                 \
        bool check_thrown_ = false;                                                      \
        try {                                                                            \
            (void)(expr);                                                                \
        } catch (const type &) {                                                         \
            check_thrown_ = true;                                                        \
        }                                                                                \
        if (!check_thrown_) {                                                            \
            std::fprintf(stderr, "%s:%d: %s did not throw %s\n", __FILE__, __LINE__, #expr, #type); \
            std::exit(1);                                                                \
        }                                                                                \
    } while (0)

// Runs a named test function and says so.
#define RUN(test)                          \
    do {                                   \
        std::printf("%s\n", #test);        \
        std::fflush(stdout);               \
        test();                            \
    } while (0)

#endif
