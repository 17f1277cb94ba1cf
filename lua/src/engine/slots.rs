//! The engine's records, by id: a slab of slots, each with a generation.
//! An id is its slot's index and that slot's generation at insertion, so
//! finding a record is an index and a compare, and a slot used again gives
//! new ids: an event or a sentinel naming an ended operation finds nothing.
//! A generation wraps only after 2^32 uses of one slot.
//!
//! A freed slot keeps its record, emptied, and the next insertion there
//! refills it: parking allocates nothing once the engine warmed up (a
//! record's vectors keep their capacity).

/// A slot and its record (live while `id` is not 0).
struct Slot<R> {
    id: u64,
    generation: u32,
    rec: R,
}

/// Records by id.
pub(super) struct Slots<R> {
    slots: Vec<Slot<R>>,
    free: Vec<u32>,
}

/// The slot index in an id.
fn index(id: u64) -> usize {
    (id & u64::from(u32::MAX)) as usize
}

impl<R> Slots<R> {
    pub(super) fn new() -> Slots<R> {
        Slots { slots: Vec::new(), free: Vec::new() }
    }

    /// Stores a record of `v`: a free slot's old record, refilled by
    /// `reuse`, or a new one that `make` builds. Its id.
    #[inline]
    pub(super) fn insert<V>(&mut self, v: V, make: impl FnOnce(V) -> R, reuse: impl FnOnce(&mut R, V)) -> u64 {
        let i = match self.free.pop() {
            Some(i) => {
                let i = i as usize;
                reuse(&mut self.slots[i].rec, v);
                i
            }
            None => {
                self.slots.push(Slot { id: 0, generation: 0, rec: make(v) });
                self.slots.len() - 1
            }
        };
        let slot = &mut self.slots[i];
        slot.generation = slot.generation.wrapping_add(1).max(1);
        slot.id = (u64::from(slot.generation) << 32) | i as u64;
        slot.id
    }

    #[inline]
    fn slot(&mut self, id: u64) -> Option<&mut Slot<R>> {
        self.slots.get_mut(index(id)).filter(|s| s.id == id && id != 0)
    }

    /// The record `id`, if it is stored.
    #[inline]
    pub(super) fn get(&self, id: u64) -> Option<&R> {
        self.slots.get(index(id)).filter(|s| s.id == id && id != 0).map(|s| &s.rec)
    }

    /// The record `id`, if it is stored, to change.
    #[inline]
    pub(super) fn get_mut(&mut self, id: u64) -> Option<&mut R> {
        self.slot(id).map(|s| &mut s.rec)
    }

    /// Frees the slot of record `id`: the record, for the caller to empty
    /// (it stays in the slot until the slot is used again).
    #[inline]
    pub(super) fn remove(&mut self, id: u64) -> Option<&mut R> {
        let slot = self.slot(id)?;
        slot.id = 0;
        self.free.push(index(id) as u32);
        Some(&mut self.slots[index(id)].rec)
    }

    /// The ids of every stored record.
    pub(super) fn ids(&self) -> Vec<u64> {
        self.slots.iter().filter(|s| s.id != 0).map(|s| s.id).collect()
    }

    /// Every stored record, with its id.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, &R)> {
        self.slots.iter().filter(|s| s.id != 0).map(|s| (s.id, &s.rec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_finds_its_record_until_removed_and_a_reused_slot_gives_a_new_id() {
        let mut s = Slots::new();
        let a = s.insert(2, |v| vec![v], |r, v| r.push(v));
        let b = s.insert(7, |v| vec![v], |r, v| r.push(v));
        assert_eq!(s.get(a), Some(&vec![2]));
        assert_eq!(s.get(b), Some(&vec![7]));
        s.remove(a).unwrap().clear();
        assert_eq!(s.get(a), None);
        assert!(s.remove(a).is_none(), "removed once");
        let c = s.insert(9, |v| vec![v], |r, v| r.push(v));
        assert_eq!(s.get(c), Some(&vec![9]), "the emptied record, refilled");
        assert_ne!(c, a, "the slot of `a` again, with another generation");
        assert_eq!(index(c), index(a));
        assert_eq!(s.get(a), None, "the old id finds nothing");
        assert_eq!(s.get(0), None);
        let mut ids = s.ids();
        ids.sort();
        assert_eq!(ids, {
            let mut v = vec![b, c];
            v.sort();
            v
        });
    }
}
