//! The per-thread resume queue ("coro mode"): coroutines to resume on this
//! thread, in order, instead of resuming them recursively.
//!
//! A thread enters coro mode when it starts resuming coroutines (`enter`
//! returns true for the outermost caller, which then drains the queue and
//! leaves); code running inside pushes the coroutines it would resume, and a
//! cooperative pause is one [`ResumeQueue::yield_now`]. Items are opaque
//! pointers (C++ coroutine handle addresses); the queue never looks at them.
//!
//! Each thread has one queue, a `const`-initialised thread-local that
//! allocates nothing until the first push. [`current`] hands out its address
//! once, so that a face can keep it and skip the thread-local lookup on every
//! operation (from a shared library that lookup is a `__tls_get_addr` call,
//! as costly as the operation). The queue dies with its thread: items still
//! queued are dropped, never resumed. Leaving coro mode keeps the queue.

use std::cell::Cell;
use std::ffi::c_void;

use crate::util::ring::Ring;

/// One thread's queue and mode. Not `Sync`: only its thread touches it.
/// C's layout: the C++ headers read and write it inline (the ring's words,
/// then the mode), as `cot_resume_queue` in the header spells out.
#[repr(C)]
pub struct ResumeQueue {
    items: Ring,
    active: Cell<bool>,
}

thread_local! {
    static CURRENT: ResumeQueue = const { ResumeQueue::new() };
}

/// The calling thread's queue; `None` once its thread-locals are destroyed.
/// The reference is valid until the thread exits.
pub fn current() -> Option<*const ResumeQueue> {
    CURRENT.try_with(|q| q as *const ResumeQueue).ok()
}

impl ResumeQueue {
    /// Offsets of the ring's slots, mask, head and len and of the mode, for
    /// the C mirror's layout check (`cot_resume_queue`).
    pub const LAYOUT: [usize; 5] = {
        let r = std::mem::offset_of!(ResumeQueue, items);
        let [slots, mask, head, len] = Ring::LAYOUT;
        [r + slots, r + mask, r + head, r + len, std::mem::offset_of!(ResumeQueue, active)]
    };

    const fn new() -> ResumeQueue {
        ResumeQueue { items: Ring::new(), active: Cell::new(false) }
    }

    /// Enters coro mode: true if the thread was not in it (the caller now owns
    /// the mode and must [`leave`](Self::leave)), false if it was already.
    #[inline]
    pub fn enter(&self) -> bool {
        !self.active.replace(true)
    }

    /// Leaves coro mode (the queue keeps its items).
    #[inline]
    pub fn leave(&self) {
        self.active.set(false)
    }

    /// Whether the thread is in coro mode.
    #[inline]
    pub fn active(&self) -> bool {
        self.active.get()
    }

    /// Appends `item` at the tail.
    #[inline]
    pub fn push(&self, item: *mut c_void) {
        self.items.push(item)
    }

    /// Takes the head out.
    #[inline]
    pub fn pop(&self) -> Option<*mut c_void> {
        self.items.pop()
    }

    /// Pushes `item` (unless NULL) at the tail, then takes the head: `item`
    /// itself if the queue was empty. One call for a cooperative pause.
    #[inline]
    pub fn yield_now(&self, item: *mut c_void) -> Option<*mut c_void> {
        self.items.push_pop((!item.is_null()).then_some(item))
    }

    /// Resumes `item` by the mode's rule with `run`: in coro mode it is
    /// queued (false); otherwise the thread enters coro mode, runs it, then
    /// every item queued meanwhile, in order, and leaves (true).
    #[inline]
    pub fn run(&self, item: *mut c_void, mut run: impl FnMut(*mut c_void)) -> bool {
        if !self.enter() {
            self.push(item);
            return false;
        }
        run(item);
        while let Some(next) = self.pop() {
            run(next);
        }
        self.leave();
        true
    }

    /// Items queued.
    #[inline]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing is queued.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.items.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(n: usize) -> *mut c_void {
        n as *mut c_void
    }

    /// Runs `f` with this thread's queue.
    fn here<R>(f: impl FnOnce(&ResumeQueue) -> R) -> R {
        CURRENT.with(f)
    }

    #[test]
    fn coro_mode_is_entered_once_per_thread() {
        std::thread::spawn(|| {
            here(|q| {
                assert!(!q.active());
                assert!(q.enter());
                assert!(q.active());
                assert!(!q.enter(), "already in coro mode");
                let other = std::thread::spawn(|| here(|q| (q.active(), q.enter()))).join().unwrap();
                assert_eq!(other, (false, true), "per thread");
                q.leave();
                assert!(!q.active());
                assert!(q.enter());
                q.leave();
            })
        })
        .join()
        .unwrap();
    }

    #[test]
    fn fifo_and_yield() {
        std::thread::spawn(|| {
            here(|q| {
                assert_eq!(q.pop(), None);
                assert_eq!(q.yield_now(p(9)), Some(p(9)), "an empty queue gives the item back");
                assert_eq!(q.yield_now(std::ptr::null_mut()), None);
                assert!(q.is_empty());
                for i in 1..=3 {
                    q.push(p(i));
                }
                assert_eq!(q.len(), 3);
                assert_eq!(q.yield_now(p(4)), Some(p(1)));
                assert_eq!(q.yield_now(std::ptr::null_mut()), Some(p(2)));
                let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
                assert_eq!(rest, [p(3), p(4)]);
                q.push(p(5)); // items left at exit are dropped
            })
        })
        .join()
        .unwrap();
    }

    #[test]
    fn run_runs_now_in_normal_mode_and_queues_in_coro_mode() {
        std::thread::spawn(|| {
            here(|q| {
                let mut ran = Vec::new();
                // Normal mode: 1 runs, queues 2 and 3 (coro mode now), which run after it.
                let entered = q.run(p(1), |i| {
                    ran.push(i);
                    if i == p(1) {
                        assert!(!q.run(p(2), |_| unreachable!("queued, not run")));
                        q.push(p(3));
                    }
                });
                assert!(entered);
                assert_eq!(ran, [p(1), p(2), p(3)]);
                assert!(!q.active() && q.is_empty());
            })
        })
        .join()
        .unwrap();
    }

    #[test]
    fn queues_are_per_thread_and_current_is_stable() {
        let threads: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    assert_eq!(current(), current());
                    here(|q| {
                        assert_eq!(current(), Some(q as *const ResumeQueue));
                        for i in 0..1000 {
                            q.push(p(t * 10_000 + i));
                        }
                        let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
                        assert_eq!(got, (0..1000).map(|i| p(t * 10_000 + i)).collect::<Vec<_>>());
                    });
                    current().map(|c| c as usize)
                })
            })
            .collect();
        for t in threads {
            assert!(t.join().unwrap().is_some());
        }
    }
}
