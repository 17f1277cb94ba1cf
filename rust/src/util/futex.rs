//! Linux futexes: sleeping while a 32-bit word holds a value, and waking the
//! threads that sleep on a word (process-private futexes).

use std::io;
use std::sync::atomic::AtomicU32;

// The `_PRIVATE` forms, as <linux/futex.h> defines them (libc names only the parts).
const FUTEX_WAIT_PRIVATE: libc::c_int = libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG;
const FUTEX_WAKE_PRIVATE: libc::c_int = libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG;

/// Sleeps while `word` holds `expected`, at most `timeout_ns` (`None`:
/// forever). `Ok` when woken (or spuriously); `EAGAIN` if the word differed,
/// `ETIMEDOUT`, `EINTR` as errors.
pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout_ns: Option<u64>) -> io::Result<()> {
    let ts = timeout_ns.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000).min(libc::time_t::MAX as u64) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned 32-bit word accessed atomically (a
    // reference to an atomic), which the kernel only reads; `tsp` is NULL or
    // a valid relative timeout that outlives the call.
    let r = unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), FUTEX_WAIT_PRIVATE, expected, tsp) };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Wakes up to `n` threads sleeping on the word at `word`; returns how many
/// woke. The kernel uses the address only as a key, never reading it, so the
/// word may be gone already (at worst, a later sleeper on that address gets a
/// spurious wakeup).
pub(crate) fn wake(word: *const u32, n: u32) -> usize {
    let n = n.min(i32::MAX as u32) as libc::c_int;
    // SAFETY: FUTEX_WAKE does not access memory at `word`; the other
    // arguments are plain values.
    let r = unsafe { libc::syscall(libc::SYS_futex, word, FUTEX_WAKE_PRIVATE, n) };
    r.max(0) as usize
}
