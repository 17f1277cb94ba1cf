//! Parking: blocking the thread while a 32-bit word holds a value, until
//! another thread changes the word and unparks it (Linux futexes, private to
//! the process). Wakeups may be spurious: callers re-check the word in a loop.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::error::{Error, Result};
use crate::util::futex;

/// Blocks while `word` holds `expected`, at most `timeout_ns` nanoseconds
/// (`None`: no limit). `Ok` when woken, when the word differs, or spuriously;
/// `Error::TimedOut` when the time passed.
pub fn park(word: &AtomicU32, expected: u32, timeout_ns: Option<u64>) -> Result<()> {
    if word.load(Ordering::Acquire) != expected {
        return Ok(());
    }
    match futex::wait(word, expected, timeout_ns) {
        Ok(()) => Ok(()),
        Err(e) => match e.raw_os_error() {
            Some(libc::ETIMEDOUT) => Err(Error::TimedOut),
            Some(libc::EAGAIN | libc::EINTR) => Ok(()),
            Some(libc::EFAULT) => Err(Error::Inval),
            _ => Err(Error::from_io(&e)),
        },
    }
}

/// Wakes one thread parked on the word at `word`; returns how many woke (0
/// or 1). The word is not read: it may be gone already.
pub fn unpark_one(word: *const u32) -> usize {
    futex::wake(word, 1)
}

/// Wakes every thread parked on the word at `word`; returns how many woke.
pub fn unpark_all(word: *const u32) -> usize {
    futex::wake(word, u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn a_differing_word_returns_at_once_and_a_timeout_times_out() {
        let w = AtomicU32::new(1);
        assert_eq!(park(&w, 0, None), Ok(()));
        let t = Instant::now();
        assert_eq!(park(&w, 1, Some(2_000_000)), Err(Error::TimedOut));
        assert!(t.elapsed() >= Duration::from_millis(2));
        assert_eq!(park(&w, 1, Some(0)), Err(Error::TimedOut));
    }

    #[test]
    fn unpark_wakes_parked_threads() {
        let w = Arc::new(AtomicU32::new(0));
        let parked: Vec<_> = (0..3)
            .map(|_| {
                let w = w.clone();
                std::thread::spawn(move || {
                    while w.load(Ordering::Acquire) == 0 {
                        park(&w, 0, None).unwrap();
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20));
        w.store(1, Ordering::Release);
        let mut woken = unpark_all(w.as_ptr());
        for t in parked {
            t.join().unwrap();
        }
        woken += unpark_one(w.as_ptr());
        assert!(woken <= 3, "{woken} woken");
        assert_eq!(unpark_one(w.as_ptr()), 0, "nobody parked");
    }
}
