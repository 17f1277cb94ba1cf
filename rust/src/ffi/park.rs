//! Parking: blocking waits on a 32-bit word (futexes).

use std::os::raw::c_int;
use std::sync::atomic::AtomicU32;

use super::guard::status;
use super::timeout::timeout;
use crate::error::Error;
use crate::sync::park;

/// Blocks the calling thread while `*word == expected`, at most `timeout_ns`
/// nanoseconds (`COT_FOREVER`: no limit), until another thread calls
/// `cot_unpark_one`/`cot_unpark_all` on `word` (Linux: a process-private
/// futex). Returns 0 when woken or when `*word` differs from `expected`
/// (checked atomically with going to sleep, so a change followed by an
/// unpark is never missed); wakeups may be spurious, so callers loop until the
/// word says they may go on. Returns `COT_ETIMEDOUT` when the time passed,
/// `COT_EINVAL` for NULL or a bad timeout. Safe from any thread.
///
/// # Safety
/// `word` is NULL or points to a live, 4-byte aligned `uint32_t` that others
/// only access atomically (e.g. a C11 `atomic_uint` or a C++
/// `std::atomic<uint32_t>`) during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_park(word: *const u32, expected: u32, timeout_ns: u64) -> c_int {
    if word.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: non-null, aligned, live and only accessed atomically during the
    // call (the caller's contract); the core only loads it.
    let word = unsafe { AtomicU32::from_ptr(word.cast_mut()) };
    status(timeout(timeout_ns).and_then(|t| park::park(word, expected, t)))
}

/// Wakes one thread parked on `word` (`cot_park`). Returns how many woke (0
/// or 1), or `COT_EINVAL` for NULL. The word is not read: it may be gone
/// already (waking after the waiter saw the change and freed the word is
/// harmless: at worst a later waiter on that address wakes spuriously). Set
/// the word before unparking. Safe from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn cot_unpark_one(word: *const u32) -> c_int {
    if word.is_null() {
        return Error::Inval.code();
    }
    park::unpark_one(word) as c_int
}

/// Wakes every thread parked on `word`. Returns how many woke, or
/// `COT_EINVAL` for NULL. As `cot_unpark_one`, the word is not read. Safe
/// from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn cot_unpark_all(word: *const u32) -> c_int {
    if word.is_null() {
        return Error::Inval.code();
    }
    park::unpark_all(word).min(c_int::MAX as usize) as c_int
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::COT_FOREVER;
    use std::sync::atomic::Ordering;

    #[test]
    fn park_until_the_word_changes() {
        let w = AtomicU32::new(0);
        // SAFETY: (every call) `w` is a live atomic.
        unsafe {
            assert_eq!(cot_park(std::ptr::null(), 0, 0), Error::Inval.code());
            assert_eq!(cot_park(w.as_ptr(), 1, COT_FOREVER), 0, "the word differs");
            assert_eq!(cot_park(w.as_ptr(), 0, 1_000_000), Error::TimedOut.code());
        }
        assert_eq!(cot_unpark_one(std::ptr::null()), Error::Inval.code());
        assert_eq!(cot_unpark_all(std::ptr::null()), Error::Inval.code());
        std::thread::scope(|s| {
            let w = &w;
            s.spawn(move || {
                while w.load(Ordering::Acquire) == 0 {
                    // SAFETY: `w` outlives the scoped thread, and is a word as `cot_park` needs.
                    assert_eq!(unsafe { cot_park(w.as_ptr(), 0, COT_FOREVER) }, 0);
                }
            });
            std::thread::sleep(std::time::Duration::from_millis(10));
            w.store(1, Ordering::Release);
            assert!(cot_unpark_one(w.as_ptr()) <= 1);
        });
        assert_eq!(cot_unpark_all(w.as_ptr()), 0);
    }
}
