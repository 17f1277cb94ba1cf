//! A FIFO of pointers for one thread, mutated through `&self`: the storage
//! of the per-thread resume queue, whose every operation is on a C++
//! coroutine's hot path (a `pause()` is a push and a pop).
//!
//! The slots are a power-of-two ring that doubles when full, so an index is
//! a mask away. The layout is C's (`#[repr(C)]`, plain words) because the
//! C++ headers push, pop and yield inline on it (`cot_resume_queue` in the
//! header mirrors it); only growing and freeing need the core. Nothing is
//! checked or counted on access: the type is not `Sync` (the cells), so only
//! its thread touches it, and no method calls out while it reads or writes
//! the slots. That argument is the whole of this module's unsafety, with the
//! invariant below.
//!
//! Invariant: `slots` is null and `mask` 0 (no slot yet), or `slots` is a
//! boxed slice of `mask + 1` slots, a power of two, from `grow`;
//! `head <= mask` and `len <= mask + 1`.

use std::cell::Cell;
use std::ffi::c_void;

/// The first capacity: 16 slots (128 bytes) at the first push.
const FIRST: usize = 16;

/// A FIFO of pointers (see the [module documentation](self)).
#[repr(C)]
pub(crate) struct Ring {
    slots: Cell<*mut *mut c_void>,
    mask: Cell<usize>,
    head: Cell<usize>,
    len: Cell<usize>,
}

impl Ring {
    /// Offsets of `slots`, `mask`, `head` and `len`.
    pub(crate) const LAYOUT: [usize; 4] = [
        std::mem::offset_of!(Ring, slots),
        std::mem::offset_of!(Ring, mask),
        std::mem::offset_of!(Ring, head),
        std::mem::offset_of!(Ring, len),
    ];

    pub(crate) const fn new() -> Ring {
        Ring { slots: Cell::new(std::ptr::null_mut()), mask: Cell::new(0), head: Cell::new(0), len: Cell::new(0) }
    }

    pub(crate) fn len(&self) -> usize {
        self.len.get()
    }

    /// The slot at `i` (masked).
    #[inline]
    fn slot(&self, i: usize) -> *mut *mut c_void {
        // SAFETY: callers reach here only with slots allocated (len > 0 or
        // after `grow`), and the mask keeps the index inside the
        // `mask + 1` slots of the invariant.
        unsafe { self.slots.get().add(i & self.mask.get()) }
    }

    /// Appends `item` at the tail (doubling the ring when full).
    #[inline]
    pub(crate) fn push(&self, item: *mut c_void) {
        let len = self.len.get();
        if self.slots.get().is_null() || len == self.mask.get() + 1 {
            self.grow();
        }
        // SAFETY: `slot` points into the live slots (just grown if needed);
        // only this thread writes them (not `Sync`).
        unsafe { *self.slot(self.head.get() + len) = item };
        self.len.set(len + 1);
    }

    /// Takes the head out.
    #[inline]
    pub(crate) fn pop(&self) -> Option<*mut c_void> {
        let (head, len) = (self.head.get(), self.len.get());
        if len == 0 {
            return None;
        }
        // SAFETY: len > 0, so the slots exist and the head slot holds an item.
        let item = unsafe { *self.slot(head) };
        self.head.set((head + 1) & self.mask.get());
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
        // SAFETY: len > 0, so the slots exist; the head slot is read before
        // the tail slot (the same one when full) is written.
        let out = unsafe {
            let out = *self.slot(head);
            *self.slot(head + len) = item;
            out
        };
        self.head.set((head + 1) & self.mask.get());
        Some(out)
    }

    /// Doubles the ring (or makes its first slots), unrolling it: the head
    /// moves to slot 0.
    #[cold]
    fn grow(&self) {
        let (old, len) = (self.take_slots(), self.len.get());
        let size = (old.len() * 2).max(FIRST); // a power of two, as `old.len()`
        let mut bigger = Vec::with_capacity(size);
        let head = self.head.get();
        bigger.extend_from_slice(&old[head..]);
        bigger.extend_from_slice(&old[..head]);
        debug_assert_eq!(bigger.len(), len);
        bigger.resize(size, std::ptr::null_mut());
        self.slots.set(Box::into_raw(bigger.into_boxed_slice()).cast());
        self.mask.set(size - 1);
        self.head.set(0);
    }

    /// Takes the slots out as the box they were made as (empty if none),
    /// leaving the ring without slots.
    fn take_slots(&self) -> Box<[*mut c_void]> {
        let p = self.slots.replace(std::ptr::null_mut());
        if p.is_null() {
            return Box::default();
        }
        let n = self.mask.replace(0) + 1;
        // SAFETY: by the invariant, a non-null `slots` is the boxed slice of
        // `mask + 1` slots made by `grow`, and the cell no longer holds it, so
        // this box is its only owner.
        unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n)) }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        drop(self.take_slots());
    }
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
