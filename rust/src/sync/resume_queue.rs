//! The per-thread resume queue ("coro mode"): coroutines to resume on this
//! thread, in order, instead of resuming them recursively.
//!
//! A thread enters coro mode when it starts resuming coroutines (`enter`
//! returns true for the outermost caller, which then drains the queue and
//! leaves); code running inside pushes the coroutines it would resume, and a
//! cooperative pause is one [`yield_now`]. Items are opaque pointers (C++
//! coroutine handle addresses); the queue never looks at them.
//!
//! Everything is thread-local, with no locking: `const`-initialised, it
//! allocates nothing until the first push. Items still queued when the thread
//! exits are dropped (never resumed). Leaving coro mode keeps the queue.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::c_void;

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static QUEUE: RefCell<VecDeque<*mut c_void>> = const { RefCell::new(VecDeque::new()) };
}

/// Runs `f` on this thread's queue; `default` once the thread's locals are
/// being destroyed.
#[inline]
fn with_queue<R>(default: R, f: impl FnOnce(&mut VecDeque<*mut c_void>) -> R) -> R {
    // Nothing called while the queue is borrowed can reach it again.
    QUEUE.try_with(|q| f(&mut q.borrow_mut())).unwrap_or(default)
}

/// Enters coro mode: true if the thread was not in it (the caller now owns
/// the mode and must [`leave`]), false if it was already.
#[inline]
pub fn enter() -> bool {
    ACTIVE.try_with(|a| !a.replace(true)).unwrap_or(false)
}

/// Leaves coro mode (the queue keeps its items).
#[inline]
pub fn leave() {
    let _ = ACTIVE.try_with(|a| a.set(false));
}

/// Whether the thread is in coro mode.
#[inline]
pub fn active() -> bool {
    ACTIVE.try_with(Cell::get).unwrap_or(false)
}

/// Appends `item` at the tail. False only while the thread exits.
#[inline]
pub fn push(item: *mut c_void) -> bool {
    with_queue(false, |q| {
        q.push_back(item);
        true
    })
}

/// Takes the head out.
#[inline]
pub fn pop() -> Option<*mut c_void> {
    with_queue(None, VecDeque::pop_front)
}

/// Pushes `item` (unless NULL) at the tail, then takes the head: `item`
/// itself if the queue was empty. One call for a cooperative pause.
#[inline]
pub fn yield_now(item: *mut c_void) -> Option<*mut c_void> {
    let item = (!item.is_null()).then_some(item);
    with_queue(item, |q| match q.pop_front() {
        None => item,
        Some(head) => {
            if let Some(i) = item {
                q.push_back(i);
            }
            Some(head)
        }
    })
}

/// Items queued.
#[inline]
pub fn len() -> usize {
    with_queue(0, |q| q.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(n: usize) -> *mut c_void {
        n as *mut c_void
    }

    #[test]
    fn coro_mode_is_entered_once_per_thread() {
        std::thread::spawn(|| {
            assert!(!active());
            assert!(enter());
            assert!(active());
            assert!(!enter(), "already in coro mode");
            let other = std::thread::spawn(|| (active(), enter())).join().unwrap();
            assert_eq!(other, (false, true), "per thread");
            leave();
            assert!(!active());
            assert!(enter());
            leave();
        })
        .join()
        .unwrap();
    }

    #[test]
    fn fifo_and_yield() {
        std::thread::spawn(|| {
            assert_eq!(pop(), None);
            assert_eq!(yield_now(p(9)), Some(p(9)), "an empty queue gives the item back");
            assert_eq!(yield_now(std::ptr::null_mut()), None);
            assert_eq!(len(), 0);
            for i in 1..=3 {
                assert!(push(p(i)));
            }
            assert_eq!(len(), 3);
            assert_eq!(yield_now(p(4)), Some(p(1)));
            assert_eq!(yield_now(std::ptr::null_mut()), Some(p(2)));
            let rest: Vec<_> = std::iter::from_fn(pop).collect();
            assert_eq!(rest, [p(3), p(4)]);
            assert!(push(p(5)), "items left at exit are dropped");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn queues_are_per_thread() {
        let threads: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        push(p(t * 10_000 + i));
                    }
                    let got: Vec<_> = std::iter::from_fn(pop).collect();
                    assert_eq!(got, (0..1000).map(|i| p(t * 10_000 + i)).collect::<Vec<_>>());
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
