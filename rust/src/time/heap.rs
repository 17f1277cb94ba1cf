//! The timer heap: a min-heap of (wake time, sequence) with lazy cancellation.
//!
//! Cancelling a timer only marks it dead (the owner decides liveness, e.g. by
//! a generation check), so no heap position has to be tracked: moving entries
//! touches the heap alone, never the scattered objects that own them. Two rules
//! keep this honest:
//! - the top entry is always live, so `peek` is the next real wake time;
//! - dead entries never outnumber live ones (past a small floor): the heap is
//!   then rebuilt without them in O(n), which amortises to O(1) per cancel.
//!   Cancelled timeouts therefore cannot pile up until they expire.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Below this many entries, dead ones are left for `pop` to discard.
const REBUILD_FLOOR: usize = 64;

/// A timer: its wake time, a sequence number that orders equal times by
/// insertion, and the owner's id and generation for the liveness check.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub when: u64,
    pub seq: u64,
    pub id: u32,
    pub generation: u32,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.when, self.seq).cmp(&(other.when, other.seq))
    }
}

#[derive(Default, Debug)]
pub(crate) struct TimerHeap {
    heap: BinaryHeap<Reverse<Entry>>,
    dead: usize,
}

impl TimerHeap {
    /// Live timers.
    pub fn len(&self) -> usize {
        self.heap.len() - self.dead
    }

    /// Entries stored, dead ones included.
    #[cfg(test)]
    pub fn stored(&self) -> usize {
        self.heap.len()
    }

    /// The earliest live timer.
    #[inline]
    pub fn peek(&self) -> Option<&Entry> {
        self.heap.peek().map(|Reverse(e)| e)
    }

    pub fn push(&mut self, e: Entry) {
        self.heap.push(Reverse(e));
    }

    /// Takes the earliest live timer if it is due at `now`.
    pub fn pop_due(&mut self, now: u64, live: impl Fn(&Entry) -> bool) -> Option<Entry> {
        let e = self.peek().filter(|e| e.when <= now)?;
        debug_assert!(live(e), "the top entry is live");
        let e = self.heap.pop().map(|Reverse(e)| e);
        self.drop_dead_top(&live);
        e
    }

    /// Records that one entry died (its owner no longer answers `live`).
    pub fn cancelled(&mut self, live: impl Fn(&Entry) -> bool) {
        self.dead += 1;
        if self.dead * 2 > self.heap.len() && self.heap.len() >= REBUILD_FLOOR {
            self.heap.retain(|Reverse(e)| live(e));
            self.dead = 0;
        }
        self.drop_dead_top(&live);
    }

    fn drop_dead_top(&mut self, live: &impl Fn(&Entry) -> bool) {
        while self.peek().is_some_and(|e| !live(e)) {
            self.heap.pop();
            self.dead -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn pops_in_time_then_sequence_order_and_skips_cancelled() {
        let dead = RefCell::new(vec![false; 10]);
        let live = |e: &Entry| !dead.borrow()[e.id as usize];
        let mut h = TimerHeap::default();
        let times = [50u64, 10, 30, 10, 70, 20, 30, 5, 90, 10];
        for (i, &t) in times.iter().enumerate() {
            h.push(Entry { when: t, seq: i as u64, id: i as u32, generation: 1 });
        }
        for id in [2usize, 9, 7] {
            dead.borrow_mut()[id] = true;
            h.cancelled(live);
        }
        assert_eq!(h.len(), 7);
        assert_eq!(h.peek().map(|e| e.id), Some(1), "a dead top is dropped at once");
        assert!(h.pop_due(9, live).is_none());
        let mut out = vec![];
        while let Some(e) = h.pop_due(70, live) {
            out.push(e.id);
        }
        assert_eq!(out, vec![1, 3, 5, 6, 0, 4]);
        assert_eq!(h.len(), 1);
        assert_eq!(h.peek().map(|e| e.when), Some(90));
    }

    #[test]
    fn dead_entries_never_outnumber_live_ones() {
        let dead = RefCell::new(vec![false; 10_000]);
        let live = |e: &Entry| !dead.borrow()[e.id as usize];
        let mut h = TimerHeap::default();
        for i in 0..10_000u32 {
            h.push(Entry { when: 1_000_000 - i as u64, seq: i as u64, id: i, generation: 1 });
        }
        // Cancel all but the latest ones, never the top: the heap must shrink.
        for i in 0..9_990u32 {
            dead.borrow_mut()[i as usize] = true;
            h.cancelled(live);
            assert!(h.dead <= h.len().max(REBUILD_FLOOR), "{} dead, {} live", h.dead, h.len());
        }
        assert_eq!(h.len(), 10);
        assert!(h.heap.len() <= 10 + REBUILD_FLOOR);
    }
}
