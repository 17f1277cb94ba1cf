//! A spin lock for short critical sections shared by threads (a channel's
//! items and waiters). Taking it is one atomic exchange and giving it back
//! a plain release store: half the locked instructions of
//! `std::sync::Mutex`, whose release must also learn whether to wake a
//! sleeper (on a VM each costs about 7 ns, most of a channel call). A
//! waiter spins a little, then yields its time slice at each look, so a
//! holder that was preempted gets the CPU back. No poisoning: the data is
//! plain and a panic inside leaves it usable.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// Looks at a held lock before yielding.
const SPINS: u32 = 64;

pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock lets one thread at a time reach `value` (as a `Mutex`
// does), so sharing the lock needs only that `T` may move between threads.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    pub fn new(value: T) -> Self {
        SpinLock { locked: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    /// Takes the lock, waiting while another thread holds it.
    pub fn lock(&self) -> SpinGuard<'_, T> {
        let mut spins = 0;
        while self.locked.swap(true, Acquire) {
            // Wait by reading (no bus lock) until it looks free.
            while self.locked.load(Relaxed) {
                if spins < SPINS {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        SpinGuard { lock: self, _not_send: PhantomData }
    }
}

/// The lock, held until dropped. Neither `Send` nor `Sync` (as a
/// `MutexGuard`): it gives back the lock on the thread that took it.
pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
    _not_send: PhantomData<*mut ()>,
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no `&mut` to the value is
        // alive on any other thread; this borrow ends before the guard.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock and is borrowed mutably, so this
        // is the only reference to the value until it ends.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        // Release: what the holder wrote is seen by the next one (Acquire).
        self.lock.locked.store(false, Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn threads_take_turns() {
        let lock = Arc::new(SpinLock::new(0u64));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..100_000 {
                        *lock.lock() += 1;
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(*lock.lock(), 400_000);
    }
}
