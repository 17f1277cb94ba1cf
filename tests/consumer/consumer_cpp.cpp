// A C++20 program using cothread::cpp: the C header must be usable from C++.
#include <cothread.h>

#include <cstdio>

static_assert(__cplusplus >= 202002L, "cothread::cpp must bring C++20");

int main() {
    constexpr unsigned expected = (static_cast<unsigned>(COT_VERSION_MAJOR) << 16) |
                                  (static_cast<unsigned>(COT_VERSION_MINOR) << 8) |
                                  static_cast<unsigned>(COT_VERSION_PATCH);
    if (cot_version() != expected) {
        std::fprintf(stderr, "cot_version() = %#x, expected %#x\n", cot_version(), expected);
        return 1;
    }
    std::printf("cothread %s\n", cot_version_string());
    std::printf("consumer_cpp ok\n");
    return 0;
}
