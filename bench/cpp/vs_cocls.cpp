// One side of the comparison with COCLS itself: the operations of cocls_ops.h,
// built once on cothread's headers and once on COCLS's (vs-cocls runs both).
// Prints one line per operation: its name and ns per operation, best of
// COT_BENCH_ROUNDS runs (default 1: the script alternates the two sides).
// COT_BENCH_ONLY=name runs that operation alone (for callgrind).
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cocls_ops.h"

int main() {
    ops = env_num("COT_BENCH_OPS", 1000000);
    int rounds = int(env_num("COT_BENCH_ROUNDS", 1));
    struct {
        const char *name;
        double (*run)();
    } rows[] = {{"pause", ours_pause},
                {"promise", ours_promise},
                {"generator", ours_generator},
                {"mutex", ours_mutex},
                {"thread_pool", ours_pool}};
    const char *only = std::getenv("COT_BENCH_ONLY");
    for (auto &row : rows) {
        if (only && *only && std::strcmp(only, row.name) != 0) continue;
        double best = 1e300;
        for (int r = 0; r < rounds; r++) best = std::min(best, row.run());
        std::printf("%s %.3f\n", row.name, best);
    }
    return 0;
}
