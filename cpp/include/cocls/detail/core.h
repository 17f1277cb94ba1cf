// The one header of the C++ face that includes the core's C API: everything
// shared between coroutines (the per-thread resume queue, awaiter chains,
// parking, the mutex handoff, the thread pool, timers) lives in the core.
#ifndef COCLS_DETAIL_CORE_H_INCLUDED
#define COCLS_DETAIL_CORE_H_INCLUDED

#include <cothread.h>

#endif
