//! A slab of values addressed by handles that carry a generation, so a handle
//! of a removed value is recognised instead of reaching its successor. Each
//! slab starts its slots at generations of its own (a random seed), so a
//! handle of another slab (another loop's, a request passed as a handle) is
//! almost never valid either.

/// A slab handle: slot index and generation, packed in a `u64` (never 0).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Key(u64);

impl Key {
    fn new(index: u32, generation: u32) -> Key {
        Key((generation as u64) << 32 | index as u64)
    }

    fn index(self) -> usize {
        self.0 as u32 as usize
    }

    fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// Slot index and generation, e.g. for a timer heap entry.
    pub fn parts(self) -> (u32, u32) {
        (self.index() as u32, self.generation())
    }

    /// The key of `parts`.
    pub fn from_parts(index: u32, generation: u32) -> Key {
        Key::new(index, generation)
    }

    /// The packed value (never 0).
    pub fn to_raw(self) -> u64 {
        self.0
    }

    /// A key from its packed value; `None` for 0.
    pub fn from_raw(raw: u64) -> Option<Key> {
        (raw != 0).then_some(Key(raw))
    }
}

struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// Values in reusable slots.
pub struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    len: usize,
    /// Varies the first generation of each slot between slabs.
    seed: u32,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { slots: Vec::new(), free: Vec::new(), len: 0, seed: super::os::generation_seed() }
    }
}

impl<T> Slab<T> {
    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Stores `value`; returns its key.
    pub fn insert(&mut self, value: T) -> Key {
        self.len += 1;
        if let Some(i) = self.free.pop() {
            let slot = &mut self.slots[i as usize];
            slot.value = Some(value);
            return Key::new(i, slot.generation);
        }
        let i = u32::try_from(self.slots.len()).expect("too many slab entries");
        let generation = (self.seed ^ i.wrapping_mul(0x9e37_79b9)).max(1);
        self.slots.push(Slot { generation, value: Some(value) });
        Key::new(i, generation)
    }

    /// The value of `key`, if it is still there.
    pub fn get(&self, key: Key) -> Option<&T> {
        self.slots.get(key.index()).filter(|s| s.generation == key.generation())?.value.as_ref()
    }

    /// The value of `key`, mutably.
    pub fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        self.slots.get_mut(key.index()).filter(|s| s.generation == key.generation())?.value.as_mut()
    }

    /// The keys of the values there now.
    pub fn keys(&self) -> Vec<Key> {
        let live = self.slots.iter().enumerate().filter(|(_, s)| s.value.is_some());
        live.map(|(i, s)| Key::new(i as u32, s.generation)).collect()
    }

    /// Removes and returns the value of `key`; its key becomes invalid.
    pub fn remove(&mut self, key: Key) -> Option<T> {
        let slot = self.slots.get_mut(key.index()).filter(|s| s.generation == key.generation())?;
        let value = slot.value.take()?;
        slot.generation = slot.generation.wrapping_add(1).max(1);
        self.free.push(key.index() as u32);
        self.len -= 1;
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_removed_values_are_rejected() {
        let mut s = Slab::default();
        let a = s.insert("a");
        let b = s.insert("b");
        assert_eq!(s.get(a), Some(&"a"));
        assert_eq!(s.remove(a), Some("a"));
        assert_eq!(s.get(a), None);
        assert_eq!(s.remove(a), None);
        let c = s.insert("c");
        assert_ne!(a, c, "a reused slot has a new generation");
        assert_eq!(s.get(c), Some(&"c"));
        assert_eq!(s.len(), 2);
        *s.get_mut(b).unwrap() = "B";
        assert_eq!(s.get(b), Some(&"B"));
        assert_eq!(Key::from_raw(0), None);
        assert_eq!(Key::from_raw(c.to_raw()), Some(c));
    }

    #[test]
    fn keys_lists_the_values_there() {
        let mut s = Slab::default();
        let (a, b, c) = (s.insert('a'), s.insert('b'), s.insert('c'));
        s.remove(b);
        assert_eq!(s.keys(), vec![a, c]);
        let d = s.insert('d'); // reuses b's slot, with a new generation
        assert_eq!(s.keys(), vec![a, d, c]);
        assert_ne!(d, b);
    }

    #[test]
    fn keys_of_another_slab_are_rejected() {
        let (mut s, mut other) = (Slab::default(), Slab::default());
        let mine: Vec<Key> = (0..100).map(|i| s.insert(i)).collect();
        let theirs: Vec<Key> = (0..100).map(|i| other.insert(i)).collect();
        // Seeds collide once in 2^32 slabs: a failure here is a broken seed.
        assert!(theirs.iter().all(|&k| s.get(k).is_none()));
        assert!(mine.iter().all(|&k| other.get(k).is_none()));
    }
}
