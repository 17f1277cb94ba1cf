//! An indexed binary min-heap of timers ordered by (wake time, sequence).
//!
//! Each entry names an `id` (a node of the scheduler's arena). The heap tells
//! the owner where each id sits through [`Positions`], so that any entry can be
//! removed in O(log n) when its group is cancelled; lazy deletion would keep
//! cancelled timeouts alive until they expire.

/// Receives the heap position of every id that moves.
pub(crate) trait Positions {
    fn set_position(&mut self, id: u32, pos: usize);
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub when: u64,
    pub seq: u64,
    pub id: u32,
}

impl Entry {
    #[inline]
    fn key(&self) -> (u64, u64) {
        (self.when, self.seq)
    }
}

#[derive(Default, Debug)]
pub(crate) struct TimerHeap {
    items: Vec<Entry>,
}

impl TimerHeap {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn peek(&self) -> Option<&Entry> {
        self.items.first()
    }

    pub fn push(&mut self, e: Entry, p: &mut impl Positions) {
        self.items.push(e);
        let pos = self.items.len() - 1;
        self.sift_up(pos, p);
    }

    /// Removes the entry at `pos` and returns it.
    pub fn remove(&mut self, pos: usize, p: &mut impl Positions) -> Entry {
        let last = self.items.len() - 1;
        self.items.swap(pos, last);
        let e = self.items.pop().expect("remove from an empty heap");
        if pos < self.items.len() {
            p.set_position(self.items[pos].id, pos);
            let pos = self.sift_up(pos, p);
            self.sift_down(pos, p);
        }
        e
    }

    pub fn pop(&mut self, p: &mut impl Positions) -> Option<Entry> {
        (!self.items.is_empty()).then(|| self.remove(0, p))
    }

    fn sift_up(&mut self, mut pos: usize, p: &mut impl Positions) -> usize {
        let e = self.items[pos];
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if self.items[parent].key() <= e.key() {
                break;
            }
            self.items[pos] = self.items[parent];
            p.set_position(self.items[pos].id, pos);
            pos = parent;
        }
        self.items[pos] = e;
        p.set_position(e.id, pos);
        pos
    }

    fn sift_down(&mut self, mut pos: usize, p: &mut impl Positions) {
        let e = self.items[pos];
        let n = self.items.len();
        loop {
            let left = 2 * pos + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && self.items[right].key() < self.items[left].key() {
                right
            } else {
                left
            };
            if e.key() <= self.items[child].key() {
                break;
            }
            self.items[pos] = self.items[child];
            p.set_position(self.items[pos].id, pos);
            pos = child;
        }
        self.items[pos] = e;
        p.set_position(e.id, pos);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Pos(Vec<usize>);

    impl Positions for Pos {
        fn set_position(&mut self, id: u32, pos: usize) {
            let id = id as usize;
            if self.0.len() <= id {
                self.0.resize(id + 1, usize::MAX);
            }
            self.0[id] = pos;
        }
    }

    fn check(h: &TimerHeap, p: &Pos) {
        for (i, e) in h.items.iter().enumerate() {
            assert_eq!(p.0[e.id as usize], i, "position of {}", e.id);
            if i > 0 {
                assert!(h.items[(i - 1) / 2].key() <= e.key());
            }
        }
    }

    #[test]
    fn pops_in_time_then_sequence_order_and_removes_anywhere() {
        let mut h = TimerHeap::default();
        let mut p = Pos::default();
        let times = [50u64, 10, 30, 10, 70, 20, 30, 5, 90, 10];
        for (i, &t) in times.iter().enumerate() {
            h.push(
                Entry {
                    when: t,
                    seq: i as u64,
                    id: i as u32,
                },
                &mut p,
            );
            check(&h, &p);
        }
        // Remove ids 2 (30) and 9 (10) from wherever they are.
        for id in [2u32, 9] {
            let pos = p.0[id as usize];
            assert_eq!(h.remove(pos, &mut p).id, id);
            check(&h, &p);
        }
        let mut out = vec![];
        while let Some(e) = h.pop(&mut p) {
            check(&h, &p);
            out.push(e.id);
        }
        assert_eq!(out, vec![7, 1, 3, 5, 6, 0, 4, 8]);
        assert_eq!(h.len(), 0);
    }
}
