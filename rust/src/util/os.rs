//! The operating system's clock and random bytes, and the signal mask of
//! helper threads.

/// `CLOCK_MONOTONIC` in nanoseconds: the clock of every time in the C ABI, so
/// that C code may compute wake times with `clock_gettime` itself.
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists
    // on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Blocks every signal in the calling thread (a helper thread that must never
/// receive one).
pub(crate) fn block_all_signals() {
    // SAFETY: `set` is a valid sigset_t, filled by sigfillset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// A random seed for the generations of a new arena or slab, so that a handle
/// of one instance is almost never valid in another (`getrandom`; if that
/// fails, the clock and the stack address, mixed).
pub(crate) fn generation_seed() -> u32 {
    let mut seed = 0u32;
    // SAFETY: writes at most 4 bytes into `seed`; GRND_NONBLOCK never waits.
    let n = unsafe { libc::getrandom((&mut seed as *mut u32).cast(), 4, libc::GRND_NONBLOCK) };
    if n == 4 {
        return seed;
    }
    let x = (&seed as *const u32 as u64) ^ monotonic_ns();
    let x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (x >> 32) as u32 ^ x as u32
}
