// COCLS's <cocls/signal.h> brings in <functional> (through its function.h) and
// <variant>, and programs written for it (its signal example) use
// std::function with no include of their own: ours must too. This file
// includes nothing else on purpose.
#include <cocls/signal.h>

static int last = 0;

static void feed(std::function<void(int)> sink) { sink(3); }

int main() {
    cocls::signal<int> sig;
    sig.connect([](int v) {
        last = v;
        return true;
    });
    feed(sig.get_collector());
    std::variant<int, long> v = 1L;
    cocls::queue<int> q;  // signal.h includes queue.h, as COCLS's does
    return last == 3 && v.index() == 1 ? 0 : 1;
}
