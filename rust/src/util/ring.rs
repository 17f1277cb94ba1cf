//! A FIFO of pointers for one thread, mutated through `&self`: the storage
//! of the per-thread resume queue, whose every operation is one core call on
//! a C++ coroutine's hot path (a `pause()` is a push and a pop).
//!
//! The slots are a power-of-two ring that doubles when full, so an index is
//! a mask away. Unlike a `RefCell<VecDeque>`, nothing is checked or counted
//! on access: the type is not `Sync` (the `UnsafeCell`), and no method calls
//! out while it holds the slots, so two borrows of them never overlap. That
//! argument is the whole of this module's unsafety.

use std::cell::{Cell, UnsafeCell};
use std::ffi::c_void;

/// The first capacity: 16 slots (128 bytes) at the first push.
const FIRST: usize = 16;

/// A FIFO of pointers (see the [module documentation](self)).
pub(crate) struct Ring {
    /// Empty, or a power-of-two number of slots.
    slots: UnsafeCell<Vec<*mut c_void>>,
    head: Cell<usize>,
    len: Cell<usize>,
}

impl Ring {
    pub(crate) const fn new() -> Ring {
        Ring { slots: UnsafeCell::new(Vec::new()), head: Cell::new(0), len: Cell::new(0) }
    }

    /// Runs `f` on the slots; `f` must not reach this ring again.
    #[inline]
    fn with_slots<R>(&self, f: impl FnOnce(&mut Vec<*mut c_void>) -> R) -> R {
        // SAFETY: `Ring` is not `Sync`, so only this thread is here, and the
        // closures of this module only touch the slots and the cells: no
        // other borrow of the slots exists while this one does.
        f(unsafe { &mut *self.slots.get() })
    }

    pub(crate) fn len(&self) -> usize {
        self.len.get()
    }

    /// Appends `item` at the tail (doubling the ring when full).
    #[inline]
    pub(crate) fn push(&self, item: *mut c_void) {
        let (head, len) = (self.head.get(), self.len.get());
        self.with_slots(|s| {
            if len == s.len() {
                grow(s, head);
                self.head.set(0);
            }
            let mask = s.len() - 1;
            s[(self.head.get() + len) & mask] = item;
        });
        self.len.set(len + 1);
    }

    /// Takes the head out.
    #[inline]
    pub(crate) fn pop(&self) -> Option<*mut c_void> {
        let (head, len) = (self.head.get(), self.len.get());
        if len == 0 {
            return None;
        }
        let item = self.with_slots(|s| {
            self.head.set((head + 1) & (s.len() - 1));
            s[head]
        });
        self.len.set(len - 1);
        Some(item)
    }

    /// Appends `item` (if any), then takes the head out: `item` itself when
    /// the ring was empty. Never grows: the tail slot is the one the head
    /// leaves when the ring is full.
    #[inline]
    pub(crate) fn push_pop(&self, item: Option<*mut c_void>) -> Option<*mut c_void> {
        let (head, len) = (self.head.get(), self.len.get());
        if len == 0 {
            return item;
        }
        let Some(item) = item else { return self.pop() };
        Some(self.with_slots(|s| {
            let mask = s.len() - 1;
            let out = s[head];
            s[(head + len) & mask] = item;
            self.head.set((head + 1) & mask);
            out
        }))
    }
}

/// Doubles the full ring `s` whose head is at `head`, unrolling it: the
/// head moves to slot 0.
#[cold]
fn grow(s: &mut Vec<*mut c_void>, head: usize) {
    let size = (s.len() * 2).max(FIRST); // a power of two, as `s.len()`
    let mut bigger = Vec::with_capacity(size);
    bigger.extend_from_slice(&s[head..]);
    bigger.extend_from_slice(&s[..head]);
    bigger.resize(size, std::ptr::null_mut());
    *s = bigger;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    fn p(n: usize) -> *mut c_void {
        n as *mut c_void
    }

    #[test]
    fn fifo_across_growth_and_wrapping() {
        let r = Ring::new();
        assert_eq!(r.pop(), None);
        assert_eq!(r.push_pop(Some(p(7))), Some(p(7)), "empty: the item comes back");
        assert_eq!(r.push_pop(None), None);
        // Wrap the head round, then grow while wrapped.
        for i in 1..=10 {
            r.push(p(i));
        }
        for i in 1..=8 {
            assert_eq!(r.pop(), Some(p(i)));
        }
        for i in 11..=40 {
            r.push(p(i));
        }
        assert_eq!(r.len(), 32);
        let all: Vec<_> = std::iter::from_fn(|| r.pop()).collect();
        assert_eq!(all, (9..=40).map(p).collect::<Vec<_>>());
    }

    #[test]
    fn push_pop_on_a_full_ring_keeps_the_order() {
        let r = Ring::new();
        for i in 1..=FIRST {
            r.push(p(i));
        }
        assert_eq!(r.push_pop(Some(p(100))), Some(p(1)));
        assert_eq!(r.len(), FIRST);
        let all: Vec<_> = std::iter::from_fn(|| r.pop()).collect();
        let mut want: Vec<_> = (2..=FIRST).map(p).collect();
        want.push(p(100));
        assert_eq!(all, want);
    }

    /// Random operations against `VecDeque` as the model.
    #[test]
    fn matches_a_deque() {
        for seed in 0..50 {
            let mut rng = crate::util::rng::Rng::new(seed);
            let (r, mut model) = (Ring::new(), VecDeque::new());
            for n in 1..2000 {
                match rng.below(4) {
                    0 | 1 => {
                        r.push(p(n));
                        model.push_back(p(n));
                    }
                    2 => assert_eq!(r.pop(), model.pop_front()),
                    _ => {
                        let item = (rng.below(2) == 0).then_some(p(n));
                        item.inspect(|&i| model.push_back(i));
                        assert_eq!(r.push_pop(item), model.pop_front());
                    }
                }
                assert_eq!(r.len(), model.len());
            }
        }
    }
}
