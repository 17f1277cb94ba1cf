// ThreadSanitizer annotations for synchronisation done inside the core. The
// core (Rust) is not instrumented, so TSan cannot see that a cot_mutex unlock
// on one thread happens before the lock on another; these calls tell it.
// They compile to nothing unless the build uses -fsanitize=thread.
#ifndef COCLS_DETAIL_TSAN_H_INCLUDED
#define COCLS_DETAIL_TSAN_H_INCLUDED

#if defined(__SANITIZE_THREAD__)
#define COCLS_DETAIL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define COCLS_DETAIL_TSAN 1
#endif
#endif

#ifdef COCLS_DETAIL_TSAN
extern "C" void __tsan_acquire(void *addr);
extern "C" void __tsan_release(void *addr);
#endif

namespace cocls::detail {

/// What happened before tsan_release(p) on another thread happens before this.
inline void tsan_acquire([[maybe_unused]] const void *p) noexcept {
#ifdef COCLS_DETAIL_TSAN
    __tsan_acquire(const_cast<void *>(p));
#endif
}

/// Publishes what this thread did so far to a later tsan_acquire(p).
inline void tsan_release([[maybe_unused]] const void *p) noexcept {
#ifdef COCLS_DETAIL_TSAN
    __tsan_release(const_cast<void *>(p));
#endif
}

}  // namespace cocls::detail

#endif
